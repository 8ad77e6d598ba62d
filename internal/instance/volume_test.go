/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/steward-dev/steward/internal/engine"
)

// TestReportHasVolumeWithoutServer: a stopped instance (no server, no data
// directory yet) still reports its volume, as statfs sees it.
func TestReportHasVolumeWithoutServer(t *testing.T) {
	dir := t.TempDir()
	m := newManager(Options{Config: engine.Config{Name: "db-0", DataDir: filepath.Join(dir, "data")}, Log: slog.New(slog.DiscardHandler)})
	r := m.report(context.Background())
	if r.Volume == nil {
		t.Fatal("no volume in the report of a stopped instance")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	v := r.Volume
	if v.CapacityBytes <= 0 || v.UsedBytes < 0 || v.UsedBytes+v.AvailableBytes != v.CapacityBytes {
		t.Errorf("volume %+v does not add up", *v)
	}
	if want := int64(st.Blocks) * st.Bsize; v.CapacityBytes > want {
		t.Errorf("capacity %d is more than the file system's %d blocks", v.CapacityBytes, want)
	}
}

// TestReadVolumeSeesWrites: a file written to the volume shows in its
// used bytes (on a file system that allocates at once, as tmpfs and ext4
// do for written data). Other processes share the file system and may free
// space at the same moment (a test's temporary directory removed, a build
// cache trimmed), so a write is tried up to five times: a volume that never
// shows one is wrong, one that shows it once is not.
func TestReadVolumeSeesWrites(t *testing.T) {
	dir := t.TempDir()
	const size = 32 << 20
	var grown []int64
	for attempt := range 5 {
		before, err := readVolume(dir)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("fill-%d", attempt))
		if err := os.WriteFile(name, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if f, err := os.Open(name); err == nil {
			_ = f.Sync()
			_ = f.Close()
		}
		after, err := readVolume(dir)
		if err != nil {
			t.Fatal(err)
		}
		grew := after.UsedBytes - before.UsedBytes
		if grew >= size/2 {
			break
		}
		grown = append(grown, grew)
	}
	if len(grown) == 5 {
		t.Errorf("used grew by %v bytes after each of five writes of %d", grown, size)
	}
	if _, err := readVolume(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory was read")
	}
}

func TestFullVolume(t *testing.T) {
	roomy := &Volume{UsedBytes: 10 << 20, CapacityBytes: 100 << 20, AvailableBytes: 90 << 20}
	full := &Volume{UsedBytes: 100<<20 - 4096, CapacityBytes: 100 << 20, AvailableBytes: 4096}
	enospc := errors.New(`starting the server: FATAL: could not write to file "pg_wal/xlogtemp.42": No space left on device`)
	other := errors.New("starting the server: invalid value for parameter")
	cases := []struct {
		name string
		v    *Volume
		err  error
		want bool
	}{
		{"roomy, other error", roomy, other, false},
		{"roomy, but the server says no space", roomy, enospc, true},
		{"full, whatever the error", full, other, true},
		{"unreadable volume, other error", nil, other, false},
	}
	for _, c := range cases {
		if got := fullVolume(c.v, c.err); got != c.want {
			t.Errorf("%s: fullVolume = %v, want %v", c.name, got, c.want)
		}
	}
}
