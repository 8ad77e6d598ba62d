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

package mysql

// Test support for real servers. These functions are meant to move to a shared
// test-support package; their names say what they do there.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/steward-dev/steward/internal/engine"
)

// capturedOutput collects what the engine's programs print in all tests.
var capturedOutput = &syncBuffer{}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) {
	Output = capturedOutput
	code := m.Run()
	if code != 0 {
		out := capturedOutput.String()
		if len(out) > 8000 {
			out = out[len(out)-8000:]
		}
		fmt.Fprintf(os.Stderr, "--- end of the servers' output:\n%s\n", out)
	}
	os.Exit(code)
}

// requireMariaDB skips the test when MariaDB's programs are missing, or
// fails it when STEWARD_REQUIRE_SERVERS=1.
func requireMariaDB(t *testing.T) {
	t.Helper()
	for _, name := range []string{"mariadbd", "mariadb-install-db", "mariadb-dump", "mariadb"} {
		p := program(engine.Config{}, name)
		if _, err := exec.LookPath(p); err != nil {
			msg := fmt.Sprintf("%s not found: install the Debian package mariadb-server", name)
			if os.Getenv("STEWARD_REQUIRE_SERVERS") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// freePort returns a TCP port nobody listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// serverUser returns the uid and gid the servers run as: the mysql user
// when the tests run as root (the servers refuse root), else 0 (ourselves).
func serverUser(t *testing.T) (uint32, uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		return 0, 0
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		t.Fatalf("running as root needs the mysql user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uint32(uid), uint32(gid)
}

// serverDirs makes data, configuration and run directories the server's
// user may use, removed at the end of the test. t.TempDir's are not: their
// parent is private to us.
func serverDirs(t *testing.T, uid, gid uint32) (data, config, run string) {
	t.Helper()
	base, err := os.MkdirTemp("", "steward-mysql-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, d := range []string{"data", "config", "run"} {
		p := filepath.Join(base, d)
		if err := os.Mkdir(p, 0o750); err != nil {
			t.Fatal(err)
		}
		if uid != 0 {
			if err := os.Chown(p, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, p)
	}
	return dirs[0], dirs[1], dirs[2]
}

// secret returns a password that exercises quoting: quotes, a backslash,
// a hash and a space around random letters that no log line has by chance.
func secret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b) + `'"\# x`
}

// expectNoSecrets fails the test if a password of cfg is in the servers'
// output or in text.
func expectNoSecrets(t *testing.T, cfg engine.Config, what, text string) {
	t.Helper()
	for _, c := range []engine.Credentials{cfg.Superuser, cfg.Owner, cfg.Replication} {
		if c.Password == "" {
			continue
		}
		// The random middle of the password is enough to recognise it.
		core := strings.TrimRight(c.Password, `'"\# x`)
		if strings.Contains(text, core) {
			t.Errorf("%s contains the password of %s", what, c.Username)
		}
	}
}

// writeConfig renders the configuration for t into cfg.ConfigDir.
func writeConfig(t *testing.T, e *Engine, cfg engine.Config, tu engine.Tuning) {
	t.Helper()
	files, err := e.Render(tu)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(cfg.ConfigDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newServerConfig returns the configuration of one instance with fresh
// directories, a free port and new passwords, and checks at the end of the
// test that the passwords never reached the servers' output.
func newServerConfig(t *testing.T, serverID int) engine.Config {
	t.Helper()
	uid, gid := serverUser(t)
	data, config, run := serverDirs(t, uid, gid)
	cfg := engine.Config{
		DataDir: data, ConfigDir: config, RunDir: run,
		Host: "127.0.0.1", Port: freePort(t), ServerID: serverID,
		Superuser:   engine.Credentials{Username: "root", Password: secret(t, "su")},
		Owner:       engine.Credentials{Username: "app", Password: secret(t, "own")},
		Replication: engine.Credentials{Username: "replicator", Password: secret(t, "rep")},
		Database:    "appdb",
		RunAsUID:    uid, RunAsGID: gid,
	}
	t.Cleanup(func() { expectNoSecrets(t, cfg, "the servers' output", capturedOutput.String()) })
	return cfg
}

// startServer starts an initialised instance and stops it at the end of the
// test.
func startServer(ctx context.Context, t *testing.T, e *Engine, cfg engine.Config) engine.Server {
	t.Helper()
	s, err := e.Start(ctx, cfg)
	if err != nil {
		expectNoSecrets(t, cfg, "the error", err.Error())
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		select {
		case <-s.Done():
		default:
			t.Error("Done is open after Stop")
		}
		if err := s.Err(); err != nil {
			t.Errorf("Err after Stop: %v", err)
		}
	})
	return s
}
