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
	"path/filepath"
	"strings"
	"syscall"

	"github.com/steward-dev/steward/internal/engine"
)

// Volume is the usage of the file system that holds the data directory.
type Volume struct {
	// UsedBytes is what the file system holds.
	UsedBytes int64 `json:"usedBytes"`
	// CapacityBytes is what the server can use: UsedBytes plus
	// AvailableBytes, the file system's size less the blocks it reserves
	// for root, as df counts it. UsedBytes reaches CapacityBytes when the
	// server's writes fail for want of space.
	CapacityBytes int64 `json:"capacityBytes"`
	// AvailableBytes is what is left for the server.
	AvailableBytes int64 `json:"availableBytes"`
}

// volumeDir is the directory whose file system is the data volume: the
// data directory's parent, the volume's mount point, which exists before
// the data directory does.
func volumeDir(cfg engine.Config) string {
	return filepath.Dir(cfg.DataDir)
}

// readVolume reads the usage of the file system that holds dir.
func readVolume(dir string) (*Volume, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil, err
	}
	bsize := st.Bsize
	used := int64(st.Blocks-st.Bfree) * bsize
	avail := int64(st.Bavail) * bsize
	return &Volume{UsedBytes: used, CapacityBytes: used + avail, AvailableBytes: avail}, nil
}

// lowSpace is how little available space counts as a full volume when
// the server cannot start: PostgreSQL needs a few MiB for its
// end-of-recovery checkpoint and a WAL segment.
const lowSpace = 16 << 20

// fullVolume reports whether a server that refused to start did so for
// want of space: its error says so, or almost nothing is left.
func fullVolume(v *Volume, err error) bool {
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no space left on device") {
		return true
	}
	return v != nil && v.AvailableBytes < lowSpace
}
