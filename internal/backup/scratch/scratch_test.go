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

package scratch

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	drv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/steward-dev/steward/internal/testenv/realserver"
)

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

// TestPostgreSQL starts a throwaway PostgreSQL with an extra setting,
// connects as its superuser and owner, and removes everything on Close.
func TestPostgreSQL(t *testing.T) {
	t.Parallel()
	bin := realserver.Require(t, realserver.Binaries{Package: "postgresql-15",
		Dirs: []string{"/usr/lib/postgresql/15/bin"}, Names: []string{"initdb", "postgres"}})
	uid, gid := realserver.Unprivileged(t, "postgres")
	dir := filepath.Join(realserver.TempDir(t, uid, gid), "s")
	out := &syncBuffer{}
	s, err := New(Config{Type: PostgreSQL, Dir: dir, BinDir: bin, Database: "my-db", RunAsUID: uid, RunAsGID: gid,
		Output: out, Extra: map[string]string{"work_mem": "7MB", "application_name": "it's scratch"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.Init(ctx); err != nil {
		t.Fatalf("Init: %v\n%s", err, out)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v\n%s", err, out)
	}
	t.Logf("initialised and started in %v", time.Since(start).Round(time.Millisecond))
	for _, e := range []Endpoint{s.Superuser(), s.Owner()} {
		c, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=%s password=%s dbname='%s'", e.Host, e.Port, e.Username, e.Password, e.Database))
		if err != nil {
			t.Fatalf("connecting as %s: %v", e.Username, err)
		}
		var mem, fsync string
		if err := c.QueryRow(ctx, "SELECT current_setting('work_mem'), current_setting('fsync')").Scan(&mem, &fsync); err != nil {
			t.Fatal(err)
		}
		if mem != "7MB" || fsync != "off" {
			t.Errorf("work_mem %s, fsync %s: want 7MB and off", mem, fsync)
		}
		_ = c.Close(ctx)
	}
	for _, p := range s.Passwords() {
		if strings.Contains(out.String(), p) {
			t.Errorf("the server's output holds a password")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
}

// TestMariaDB starts a throwaway MariaDB without a binary log.
func TestMariaDB(t *testing.T) {
	t.Parallel()
	realserver.Require(t, realserver.Binaries{Package: "mariadb-server", Dirs: []string{"/usr/sbin", "/usr/bin"}, Names: []string{"mariadbd"}})
	uid, gid := realserver.Unprivileged(t, "mysql")
	dir := filepath.Join(realserver.TempDir(t, uid, gid), "s")
	out := &syncBuffer{}
	s, err := New(Config{Type: MySQL, Dir: dir, Database: "mydb", RunAsUID: uid, RunAsGID: gid, Output: out,
		Extra: map[string]string{"max_connections": "33"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.Init(ctx); err != nil {
		t.Fatalf("Init: %v\n%s", err, out)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v\n%s", err, out)
	}
	t.Logf("initialised and started in %v", time.Since(start).Round(time.Millisecond))
	e := s.Superuser()
	dc := drv.NewConfig()
	dc.Net, dc.Addr, dc.User, dc.Passwd, dc.DBName = "tcp", fmt.Sprintf("%s:%d", e.Host, e.Port), e.Username, e.Password, e.Database
	conn, err := drv.NewConnector(dc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer func() { _ = db.Close() }()
	var logBin, maxConn string
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin, @@max_connections").Scan(&logBin, &maxConn); err != nil {
		t.Fatal(err)
	}
	if logBin != "0" || maxConn != "33" {
		t.Errorf("log_bin %s, max_connections %s: want 0 and 33", logBin, maxConn)
	}
}
