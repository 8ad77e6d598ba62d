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

package dump

// Test support: real PostgreSQL and MariaDB servers started with Steward's
// own engines, and buckets on disk.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/engine/mysql"
	"github.com/steward-dev/steward/internal/engine/postgres"
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

// serverOutput collects what the servers print.
var serverOutput = &syncBuffer{}

func init() { mysql.Output = serverOutput }

// secret returns a password with characters that need quoting in password
// files, option files and connection strings around a random core.
func secret(t *testing.T) string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw" + hex.EncodeToString(b) + `'"\:# x`
}

// noSecret fails when text contains the password (or its random core).
func noSecret(t *testing.T, what, text, password string) {
	t.Helper()
	core := password[:22]
	if strings.Contains(text, core) {
		t.Errorf("%s contains the password: %s", what, text)
	}
}

// server is a running database server with a source database owned by
// Owner.
type server struct {
	typ    string
	cfg    engine.Config
	binDir string
}

// source is the server's owner database as a Source.
func (s *server) source() Source {
	return s.db(s.cfg.Database)
}

func (s *server) db(name string) Source {
	return Source{Type: s.typ, Host: "127.0.0.1", Port: s.cfg.Port, Database: name,
		Username: s.cfg.Owner.Username, Password: s.cfg.Owner.Password, BinDir: s.binDir}
}

var pg15 = realserver.Binaries{
	Package: "postgresql-15",
	Dirs:    []string{"/usr/lib/postgresql/15/bin"},
	Names:   []string{"initdb", "postgres", "pg_dump", "pg_restore"},
}

func startPostgres(t *testing.T) *server {
	t.Helper()
	bin := realserver.Require(t, pg15)
	uid, gid := realserver.Unprivileged(t, "postgres")
	dir := realserver.TempDir(t, uid, gid)
	e := &postgres.Engine{Output: serverOutput}
	cfg := engine.Config{
		DataDir:     filepath.Join(realserver.Subdir(t, dir, "volume", 0o755, uid, gid), "pgdata"),
		ConfigDir:   realserver.Subdir(t, dir, "config", 0o755, 0, 0),
		RunDir:      realserver.Subdir(t, dir, "run", 0o700, uid, gid),
		BinDir:      bin,
		Host:        "127.0.0.1",
		Port:        realserver.FreePort(t),
		ServerID:    1,
		Superuser:   engine.Credentials{Username: "postgres", Password: secret(t)},
		Owner:       engine.Credentials{Username: "app owner", Password: secret(t)},
		Replication: engine.Credentials{Username: "replicator", Password: secret(t)},
		Database:    "app-db",
		RunAsUID:    uid,
		RunAsGID:    gid,
	}
	return startServer(t, TypePostgreSQL, e, cfg, bin)
}

func startMariaDB(t *testing.T) *server {
	t.Helper()
	bin := realserver.Require(t, realserver.Binaries{
		Package: "mariadb-server",
		Dirs:    []string{"/usr/sbin", "/usr/bin"},
		Names:   []string{"mariadb-dump", "mariadb"},
	})
	realserver.Require(t, realserver.Binaries{Package: "mariadb-server", Dirs: []string{"/usr/sbin", "/usr/bin"}, Names: []string{"mariadbd"}})
	uid, gid := realserver.Unprivileged(t, "mysql")
	dir := realserver.TempDir(t, uid, gid)
	cfg := engine.Config{
		DataDir:     realserver.Subdir(t, dir, "data", 0o750, uid, gid),
		ConfigDir:   realserver.Subdir(t, dir, "config", 0o755, 0, 0),
		RunDir:      realserver.Subdir(t, dir, "run", 0o750, uid, gid),
		Host:        "127.0.0.1",
		Port:        realserver.FreePort(t),
		ServerID:    1,
		Superuser:   engine.Credentials{Username: "root", Password: secret(t)},
		Owner:       engine.Credentials{Username: "app", Password: secret(t)},
		Replication: engine.Credentials{Username: "replicator", Password: secret(t)},
		Database:    "appdb",
		RunAsUID:    uid,
		RunAsGID:    gid,
	}
	return startServer(t, TypeMySQL, mysql.MariaDB, cfg, bin)
}

func startServer(t *testing.T, typ string, e engine.Engine, cfg engine.Config, bin string) *server {
	t.Helper()
	realserver.StartEngine(t, e, cfg, engine.Tuning{Port: cfg.Port})
	t.Cleanup(func() {
		out := serverOutput.String()
		for _, c := range []engine.Credentials{cfg.Superuser, cfg.Owner} {
			noSecret(t, "the servers' output", out, c.Password)
		}
	})
	return &server{typ: typ, cfg: cfg, binDir: bin}
}

// createDatabase makes an empty database the owner may restore into.
func (s *server) createDatabase(t *testing.T, name string) Source {
	t.Helper()
	su := s.db(s.cfg.Database)
	su.Username, su.Password = s.cfg.Superuser.Username, s.cfg.Superuser.Password
	ctx := context.Background()
	switch s.typ {
	case TypePostgreSQL:
		su.Database = "postgres"
		c := pgConn(t, su)
		if _, err := c.Exec(ctx, `CREATE DATABASE "`+name+`" OWNER "`+s.cfg.Owner.Username+`"`); err != nil {
			t.Fatal(err)
		}
	default:
		su.Database = ""
		db := myConn(t, su)
		for _, q := range []string{"CREATE DATABASE `" + name + "`", "GRANT ALL ON `" + name + "`.* TO '" + s.cfg.Owner.Username + "'@'%'"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s.db(name)
}

func pgConn(t *testing.T, s Source) *pgx.Conn {
	t.Helper()
	c, err := pgConnect(context.Background(), s)
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.Database, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func myConn(t *testing.T, s Source) *sql.DB {
	t.Helper()
	db, err := mysqlOpen(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fileBucket opens a bucket in a new directory, as OpenBucket does for
// "file".
func fileBucket(t *testing.T) (*blob.Bucket, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, dir
}

// files lists the files under dir, relative and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// fileSum is the size and SHA-256 of a file, read independently of the
// package.
func fileSum(t *testing.T, path string) (int64, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return int64(len(data)), hex.EncodeToString(s[:])
}
