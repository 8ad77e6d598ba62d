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

package realserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder records Skipf and Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skipf(f string, args ...any)  { r.skipped = fmt.Sprintf(f, args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

func TestRequire(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"server", "tool"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	found := Binaries{Package: "pkg-x", Dirs: []string{"/nonexistent", dir}, Names: []string{"server", "tool"}}
	if got := Require(t, found); got != dir {
		t.Errorf("Require = %q, want %q", got, dir)
	}

	missing := Binaries{Package: "pkg-x", Dirs: []string{dir}, Names: []string{"server", "data"}}
	t.Setenv(RequireEnv, "")
	r := &recorder{TB: t}
	Require(r, missing)
	if !strings.Contains(r.skipped, "pkg-x") || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q; want a skip naming the package", RequireEnv, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "1")
	r = &recorder{TB: t}
	Require(r, missing)
	if !strings.Contains(r.failed, "pkg-x") || r.skipped != "" {
		t.Errorf("with %s=1: skipped %q, failed %q; want a failure naming the package", RequireEnv, r.skipped, r.failed)
	}
}

func TestTempDirAndFreePort(t *testing.T) {
	uid, gid := Unprivileged(t, "nobody", "postgres")
	dir := TempDir(t, uid, gid)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	sub := Subdir(t, dir, "run", 0o700, uid, gid)
	if fi, err := os.Stat(sub); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("Subdir: %v, %v", fi, err)
	}
	port := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the free port %d is not free: %v", port, err)
	}
	_ = l.Close()
}
