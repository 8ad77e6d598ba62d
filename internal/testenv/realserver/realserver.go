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

// Package realserver is shared support for tests that run real database
// servers (PostgreSQL, MariaDB, Redis, memcached, ...) instead of fakes. It is
// a normal package so that test files of several packages can import it; no
// production code uses it.
//
// A test starts with Require, which finds the server's programs or skips the
// test with a message naming the Debian package to install. When the
// environment variable STEWARD_REQUIRE_SERVERS is "1" (as in CI, where the
// packages are installed), a missing server fails the test instead, so that
// a broken installation cannot turn the suite silently green.
//
// Database servers refuse to run as root, and tests often run as root in
// containers. Unprivileged picks the system user to run them as in that case,
// and TempDir makes directories that user can reach and write.
//
//	bin := realserver.Require(t, realserver.Binaries{
//		Package: "postgresql-15",
//		Dirs:    []string{"/usr/lib/postgresql/15/bin"},
//		Names:   []string{"initdb", "postgres"},
//	})
//	uid, gid := realserver.Unprivileged(t, "postgres")
//	dir := realserver.TempDir(t, uid, gid)
//	port := realserver.FreePort(t)
package realserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// RequireEnv is the environment variable that turns a skip for missing
// server programs into a failure when set to "1".
const RequireEnv = "STEWARD_REQUIRE_SERVERS"

// Binaries describes the programs a test needs.
type Binaries struct {
	// Package is the Debian package that provides them, named in the skip
	// message, e.g. "postgresql-15".
	Package string
	// Dirs are directories searched, in order, before $PATH, e.g.
	// "/usr/lib/postgresql/15/bin".
	Dirs []string
	// Names are the programs that must all be in one directory.
	Names []string
}

// Find returns the first directory of b.Dirs, then of $PATH, that holds all
// of b.Names as executable files.
func Find(b Binaries) (string, error) {
	dirs := append([]string{}, b.Dirs...)
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	for _, dir := range dirs {
		if dir != "" && holdsAll(dir, b.Names) {
			return filepath.Abs(dir)
		}
	}
	return "", fmt.Errorf("%s not found in %s or $PATH", strings.Join(b.Names, ", "), strings.Join(b.Dirs, ", "))
}

func holdsAll(dir string, names []string) bool {
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// Require returns the directory holding b's programs. When they are missing
// it skips the test with a message naming b.Package, or fails it when
// STEWARD_REQUIRE_SERVERS=1.
func Require(t testing.TB, b Binaries) string {
	t.Helper()
	dir, err := Find(b)
	if err == nil {
		return dir
	}
	msg := fmt.Sprintf("%v: install the Debian package %s (apt-get install %s)", err, b.Package, b.Package)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 requires real servers", msg, RequireEnv)
		return ""
	}
	t.Skipf("skipping: %s; set %s=1 to fail instead", msg, RequireEnv)
	return ""
}

// Unprivileged returns the uid and gid a server should run as. When the test
// runs as root it is the first of users that exists on the system (the test
// fails when none does); otherwise it is 0, 0, which engines read as "run as
// the current user".
func Unprivileged(t testing.TB, users ...string) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		return 0, 0
	}
	for _, name := range users {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		id, err1 := strconv.ParseUint(u.Uid, 10, 32)
		g, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("user %s has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
		}
		return uint32(id), uint32(g)
	}
	t.Fatalf("running as root and none of the users %s exists to run the server as", strings.Join(users, ", "))
	return 0, 0
}

// TempDir returns a new directory, removed when the test ends, that uid and
// gid own and every user can traverse (mode 0755), unlike t.TempDir, whose
// parent is private to the test's user. With uid 0 the directory keeps the
// test's own user. Its path is short, which matters for Unix socket paths.
func TempDir(t testing.TB, uid, gid uint32) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "realserver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if uid != 0 {
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Subdir creates name under dir with mode perm, owned by uid and gid when uid
// is not 0, and returns its path.
func Subdir(t testing.TB, dir, name string, perm os.FileMode, uid, gid uint32) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	if uid != 0 {
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// StartEngine starts a primary as an instance manager would: the engine's
// rendered configuration for tuning written into cfg.ConfigDir, then
// InitPrimary, Start and EnsureUsers. The server stops when the test ends.
func StartEngine(t testing.TB, e engine.Engine, cfg engine.Config, tuning engine.Tuning) engine.Server {
	t.Helper()
	files, err := e.Render(tuning)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(cfg.ConfigDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.InitPrimary(ctx, cfg); err != nil {
		t.Fatalf("InitPrimary: %v", err)
	}
	s, err := e.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stopping the server: %v", err)
		}
	})
	if err := s.EnsureUsers(ctx); err != nil {
		t.Fatalf("EnsureUsers: %v", err)
	}
	return s
}
