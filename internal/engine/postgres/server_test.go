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

package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/testenv/realserver"
)

// pg15 are the programs these tests need, from Debian's postgresql-15.
var pg15 = realserver.Binaries{
	Package: "postgresql-15",
	Dirs:    []string{"/usr/lib/postgresql/15/bin"},
	Names:   []string{"initdb", "postgres", "pg_basebackup"},
}

// syncBuffer collects the output of servers and tools.
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

// secret returns a random password with the characters that need escaping
// in SQL literals, connection strings and password files.
func secret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b) + `'\:"x`
}

// fixture is one instance's configuration in its own temporary directory,
// with an engine whose output is kept and checked for passwords.
type fixture struct {
	e   *Engine
	cfg engine.Config
	out *syncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bin := realserver.Require(t, pg15)
	uid, gid := realserver.Unprivileged(t, "postgres")
	dir := realserver.TempDir(t, uid, gid)
	out := &syncBuffer{}
	f := &fixture{e: &Engine{Output: out}, out: out, cfg: engine.Config{
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
	}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", out.String())
		}
	})
	return f
}

// checkNoPasswords fails when any password of cfgs occurs in the output.
func (f *fixture) checkNoPasswords(t *testing.T, cfgs ...engine.Config) {
	t.Helper()
	out := f.out.String()
	for _, c := range append(cfgs, f.cfg) {
		for _, p := range []string{c.Superuser.Password, c.Owner.Password, c.Replication.Password} {
			if p != "" && strings.Contains(out, p) {
				t.Errorf("a password occurs in the output of the server or its tools")
			}
		}
	}
}

func (f *fixture) render(t *testing.T, tn engine.Tuning) map[string]string {
	t.Helper()
	tn.Port = f.cfg.Port
	files, err := f.e.Render(tn)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, f.cfg.ConfigDir, files)
	return files
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) start(t *testing.T) engine.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := f.e.Start(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	return s
}

func (f *fixture) initPrimary(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.e.InitPrimary(ctx, f.cfg); err != nil {
		t.Fatal(err)
	}
}

// connect connects over TCP as user to the database.
// standbyOf is a fixture for a standby of p's server with server ID id,
// its data directory cloned from it (InitReplica), not started.
func (p *fixture) standbyOf(t *testing.T, id int) *fixture {
	t.Helper()
	r := newFixture(t)
	r.cfg.Superuser, r.cfg.Owner, r.cfg.Replication = p.cfg.Superuser, p.cfg.Owner, p.cfg.Replication
	r.cfg.PrimaryHost, r.cfg.PrimaryPort, r.cfg.ServerID = "127.0.0.1", p.cfg.Port, id
	r.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.e.InitReplica(ctx, r.cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func connect(ctx context.Context, cfg engine.Config, user, password, database string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cc.Host, cc.Port, cc.User, cc.Password, cc.Database = "127.0.0.1", uint16(cfg.Port), user, password, database
	cc.TLSConfig, cc.Fallbacks = nil, nil
	cc.ConnectTimeout = 5 * time.Second
	return pgx.ConnectConfig(ctx, cc)
}

func mustConnect(t *testing.T, cfg engine.Config, cred engine.Credentials, database string) *pgx.Conn {
	t.Helper()
	c, err := connect(context.Background(), cfg, cred.Username, cred.Password, database)
	if err != nil {
		t.Fatalf("connecting as %s: %v", cred.Username, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func show(t *testing.T, c *pgx.Conn, name string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

// eventually polls cond every 100ms until it returns "" or timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPresetsAccepted starts the real server with the configuration of each
// preset and checks it runs with exactly the rendered values, reading its
// configuration from ConfigDir.
func TestPresetsAccepted(t *testing.T) {
	f := newFixture(t)
	f.initPrimary(t)
	for _, preset := range []struct {
		name   string
		memory int64
	}{{"small", 512 * miB}, {"medium", giB}, {"large", 2 * giB}} {
		t.Run(preset.name, func(t *testing.T) {
			f.render(t, engine.Tuning{Version: "15", MemoryBytes: preset.memory})
			s := f.start(t)
			c := mustConnect(t, f.cfg, f.cfg.Superuser, "postgres")
			for k, want := range TuneFor(preset.memory) {
				if got := show(t, c, k); got != want {
					t.Errorf("%s = %s, rendered %s", k, got, want)
				}
			}
			for k, want := range map[string]string{
				"config_file":             filepath.Join(f.cfg.RunDir, "postgresql.conf"), // includes ConfigDir's
				"hba_file":                filepath.Join(f.cfg.ConfigDir, "pg_hba.conf"),
				"ident_file":              filepath.Join(f.cfg.ConfigDir, "pg_ident.conf"),
				"data_directory":          f.cfg.DataDir,
				"unix_socket_directories": f.cfg.RunDir,
				"port":                    fmt.Sprint(f.cfg.Port),
				"listen_addresses":        "127.0.0.1",
				"password_encryption":     "scram-sha-256",
				"wal_level":               "replica",
				"hot_standby":             "on",
			} {
				if got := show(t, c, k); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
			st := s.Status(context.Background())
			if st.Role != engine.RolePrimary || !st.Ready || st.LagBytes != nil || !strings.HasPrefix(st.Version, "15") {
				t.Errorf("Status = %+v, want a ready primary of version 15", st)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.Stop(ctx); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("Done not closed after Stop")
			}
			if err := s.Err(); err != nil {
				t.Errorf("Err after a clean stop = %v", err)
			}
		})
	}
	f.checkNoPasswords(t)
}

// TestNeedsRestartMatchesServer compares NeedsRestart with the contexts the
// real server reports for its settings.
func TestNeedsRestartMatchesServer(t *testing.T) {
	f := newFixture(t)
	f.initPrimary(t)
	f.render(t, engine.Tuning{Version: "15"})
	f.start(t)
	c := mustConnect(t, f.cfg, f.cfg.Superuser, "postgres")
	rows, err := c.Query(context.Background(), "SELECT name, context FROM pg_settings")
	if err != nil {
		t.Fatal(err)
	}
	type setting struct{ Name, Context string }
	settings, err := pgx.CollectRows(rows, pgx.RowToStructByPos[setting])
	if err != nil {
		t.Fatal(err)
	}
	reloadableSince13 := []string{"restore_command", "primary_conninfo", "primary_slot_name"}
	for _, s := range settings {
		want := s.Context == "postmaster"
		if slices.Contains(reloadableSince13, s.Name) {
			want = true
		}
		if got := f.e.NeedsRestart(s.Name); got != want {
			t.Errorf("NeedsRestart(%s) = %v, but its context is %s", s.Name, got, s.Context)
		}
	}
	if len(settings) < 300 {
		t.Errorf("only %d settings", len(settings))
	}
}

// TestPrimaryStandbyReload bootstraps a primary, checks its users, clones a
// standby from it, checks replication, and reloads configuration changes.
func TestPrimaryStandbyReload(t *testing.T) {
	p := newFixture(t)
	ctx := context.Background()
	p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB})
	if ok, err := p.e.Initialized(p.cfg); err != nil || ok {
		t.Fatalf("Initialized before InitPrimary = %v, %v", ok, err)
	}
	p.initPrimary(t)
	if ok, err := p.e.Initialized(p.cfg); err != nil || !ok {
		t.Fatalf("Initialized after InitPrimary = %v, %v", ok, err)
	}
	if fi, err := os.Stat(p.cfg.DataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(p.cfg.RunDir, "initdb-pw-*")); len(left) > 0 {
		t.Errorf("initdb's password file was left behind: %v", left)
	}
	ps := p.start(t)
	if err := ps.EnsureUsers(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("bootstrap", func(t *testing.T) {
		c := mustConnect(t, p.cfg, p.cfg.Owner, p.cfg.Database)
		var owner string
		if err := c.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&owner); err != nil {
			t.Fatal(err)
		}
		if owner != p.cfg.Owner.Username {
			t.Errorf("database owner = %q, want %q", owner, p.cfg.Owner.Username)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
			t.Fatalf("the owner cannot create a table: %v", err)
		}
		if c, err := connect(ctx, p.cfg, p.cfg.Owner.Username, p.cfg.Owner.Password+"x", p.cfg.Database); err == nil {
			_ = c.Close(ctx)
			t.Error("a wrong password was accepted")
		} else if !strings.Contains(err.Error(), "password authentication failed") {
			t.Errorf("a wrong password: %v, want a password authentication failure", err)
		}
		var repl bool
		if err := c.QueryRow(ctx, "SELECT rolreplication FROM pg_roles WHERE rolname = $1", p.cfg.Replication.Username).Scan(&repl); err != nil || !repl {
			t.Errorf("replication role: %v, %v", repl, err)
		}

		// EnsureUsers is idempotent and applies a new password.
		old := p.cfg.Owner.Password
		cfg := p.cfg
		cfg.Owner.Password = secret(t)
		s2 := &server{cfg: cfg, cmd: ps.(*server).cmd, done: ps.(*server).done}
		if err := s2.EnsureUsers(ctx); err != nil {
			t.Fatal(err)
		}
		mustConnect(t, cfg, cfg.Owner, cfg.Database)
		if c, err := connect(ctx, p.cfg, p.cfg.Owner.Username, old, p.cfg.Database); err == nil {
			_ = c.Close(ctx)
			t.Error("the old password still works")
		}
		s2.cfg.Owner.Password = old
		if err := s2.EnsureUsers(ctx); err != nil {
			t.Fatal(err)
		}
		mustConnect(t, p.cfg, p.cfg.Owner, p.cfg.Database)
	})

	t.Run("standby", func(t *testing.T) {
		r := p.standbyOf(t, 2)
		if fi, err := os.Stat(r.cfg.DataDir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("data directory: %v, %v", fi.Mode(), err)
		}
		if _, err := os.Stat(filepath.Join(r.cfg.DataDir, "standby.signal")); err != nil {
			t.Fatal(err)
		}
		auto, _ := os.ReadFile(filepath.Join(r.cfg.DataDir, "postgresql.auto.conf"))
		if strings.Contains(string(auto), p.cfg.Replication.Password) {
			t.Error("the replication password is stored in postgresql.auto.conf")
		}
		rs := r.start(t)
		var st engine.Status
		eventually(t, 30*time.Second, func() string {
			st = rs.Status(ctx)
			if st.Role != engine.RoleReplica || !st.Ready {
				return fmt.Sprintf("standby status %+v, want a ready replica", st)
			}
			return ""
		})
		if st.LagBytes == nil || st.LagSeconds == nil {
			t.Errorf("standby status %+v: no lag reported", st)
		}

		pc := mustConnect(t, p.cfg, p.cfg.Owner, p.cfg.Database)
		if _, err := pc.Exec(ctx, "INSERT INTO t VALUES (1, 'replicated')"); err != nil {
			t.Fatal(err)
		}
		rc := mustConnect(t, r.cfg, r.cfg.Owner, r.cfg.Database)
		eventually(t, 30*time.Second, func() string {
			var v string
			if err := rc.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
				return "reading the row on the standby: " + err.Error()
			}
			return ""
		})
		if _, err := rc.Exec(ctx, "INSERT INTO t VALUES (2, 'x')"); err == nil {
			t.Error("the standby accepted a write")
		}
		st = rs.Status(ctx)
		if st.LagBytes == nil || *st.LagBytes < 0 {
			t.Errorf("standby status %+v: no lag in bytes", st)
		}
		if pst := ps.Status(ctx); pst.Role != engine.RolePrimary || !pst.Ready {
			t.Errorf("primary status %+v", pst)
		}
		r.checkNoPasswords(t, p.cfg)
	})

	t.Run("reload", func(t *testing.T) {
		c := mustConnect(t, p.cfg, p.cfg.Superuser, "postgres")
		if got := show(t, c, "work_mem"); got != "1310kB" {
			t.Fatalf("work_mem = %s before the change", got)
		}
		p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB, Parameters: map[string]string{"work_mem": "7MB"}})
		if err := ps.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		c2 := mustConnect(t, p.cfg, p.cfg.Superuser, "postgres")
		if got := show(t, c2, "work_mem"); got != "7MB" {
			t.Errorf("work_mem = %s after the reload, want 7MB", got)
		}
		if st := ps.Status(ctx); len(st.PendingRestart) != 0 || !st.Ready {
			t.Errorf("status after a reloadable change: %+v", st)
		}

		p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB, Parameters: map[string]string{"work_mem": "7MB", "shared_buffers": "64MB"}})
		if err := ps.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		st := ps.Status(ctx)
		if !slices.Contains(st.PendingRestart, "shared_buffers") {
			t.Errorf("status after changing shared_buffers: %+v, want it pending a restart", st)
		}
		c3 := mustConnect(t, p.cfg, p.cfg.Superuser, "postgres")
		if got := show(t, c3, "shared_buffers"); got != "128MB" {
			t.Errorf("shared_buffers = %s without a restart", got)
		}

		// Values the server refuses at the reload, which admission does not
		// judge (strings): reported with the server's words, the others
		// applied, and what waits for a restart not among them. A session
		// cannot try log_timezone: its words come from the server's log.
		bad := map[string]string{"work_mem": "9MB", "shared_buffers": "64MB",
			"default_text_search_config": "pg_catalog.klingon", "statement_timeout": "soon", "log_timezone": "Mars/Olympus"}
		p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB, Parameters: bad})
		if err := ps.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		st = ps.Status(ctx)
		want := []engine.RefusedSetting{
			{Name: "default_text_search_config", Reason: `invalid value for parameter "default_text_search_config": "pg_catalog.klingon"`},
			{Name: "log_timezone", Reason: `invalid value for parameter "log_timezone": "Mars/Olympus"`},
			{Name: "statement_timeout", Reason: `invalid value for parameter "statement_timeout": "soon"`},
		}
		if !slices.Equal(st.Refused, want) || !st.Ready || !slices.Contains(st.PendingRestart, "shared_buffers") {
			t.Errorf("status after refused values: %+v, want refused %+v, ready, shared_buffers pending", st, want)
		}
		c4 := mustConnect(t, p.cfg, p.cfg.Superuser, "postgres")
		if got := show(t, c4, "work_mem"); got != "9MB" {
			t.Errorf("work_mem = %s beside refused values, want 9MB", got)
		}
		if got := show(t, c4, "statement_timeout"); got != "0" {
			t.Errorf("statement_timeout = %s, want its previous value", got)
		}
		p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB, Parameters: map[string]string{"work_mem": "9MB", "statement_timeout": "5s"}})
		if err := ps.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if st := ps.Status(ctx); len(st.Refused) != 0 {
			t.Errorf("refused %+v after the values were fixed", st.Refused)
		}
	})
	p.checkNoPasswords(t)
}

// TestPromotionStartsTheTermsTimeline promotes a standby that knows only
// timeline 1 in term 5: it starts timeline 5, not 2, which another server
// may already have started in a term the standby never followed.
func TestPromotionStartsTheTermsTimeline(t *testing.T) {
	p := newFixture(t)
	ctx := context.Background()
	p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB})
	p.initPrimary(t)
	ps := p.start(t)
	if err := ps.EnsureUsers(ctx); err != nil {
		t.Fatal(err)
	}
	r := p.standbyOf(t, 2)
	rs := r.start(t)
	eventually(t, 30*time.Second, func() string {
		if st := rs.Status(ctx); st.Role != engine.RoleReplica || !st.Ready {
			return fmt.Sprintf("standby status %+v, want a ready replica", st)
		}
		return ""
	})
	if err := r.e.Promote(ctx, rs, 5); err != nil {
		t.Fatal(err)
	}
	c := mustConnect(t, r.cfg, r.cfg.Superuser, "postgres")
	var tli string
	if err := c.QueryRow(ctx, "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)").Scan(&tli); err != nil {
		t.Fatal(err)
	}
	if tli != "00000005" {
		t.Errorf("the promoted server writes timeline %s, want 00000005", tli)
	}
	// The new timeline's history is PostgreSQL's own: it forks from 1.
	history, err := os.ReadFile(filepath.Join(r.cfg.DataDir, "pg_wal", "00000005.history"))
	if err != nil || !strings.HasPrefix(string(history), "1\t") {
		t.Errorf("00000005.history = %q, %v; want the switch from timeline 1", history, err)
	}
	for _, tli := range []string{"00000002", "00000003", "00000004"} {
		b, err := os.ReadFile(filepath.Join(r.cfg.DataDir, "pg_wal", tli+".history"))
		if err != nil || !strings.HasPrefix(string(b), "# Timeline") {
			t.Errorf("%s.history = %q, %v; want a reservation", tli, b, err)
		}
		if _, err := os.Stat(filepath.Join(r.cfg.DataDir, "pg_wal", "archive_status", tli+".history.ready")); err == nil {
			t.Errorf("the reservation of timeline %s is marked for archiving", tli)
		}
	}
	if _, err := c.Exec(ctx, "CREATE TABLE after_promotion (id int)"); err != nil {
		t.Errorf("the promoted server takes no writes: %v", err)
	}
}

// startedPrimary initialises and starts a primary of PostgreSQL 15 with its
// users, and runs sql on it as the owner, whose connection it returns.
func startedPrimary(t *testing.T, sql string) (*fixture, engine.Server, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	p := newFixture(t)
	p.render(t, engine.Tuning{Version: "15", MemoryBytes: 512 * miB})
	p.initPrimary(t)
	ps := p.start(t)
	if err := ps.EnsureUsers(ctx); err != nil {
		t.Fatal(err)
	}
	pc := mustConnect(t, p.cfg, p.cfg.Owner, p.cfg.Database)
	if _, err := pc.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	return p, ps, pc
}

// TestStandbyFollowsANewPrimaryWithoutARestart promotes one of two
// standbys and re-points the other at it: the configuration is reloaded,
// the WAL receiver follows the new primary onto its timeline, and the
// server is not restarted.
func TestStandbyFollowsANewPrimaryWithoutARestart(t *testing.T) {
	ctx := context.Background()
	p, ps, _ := startedPrimary(t, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
	a, b := p.standbyOf(t, 2), p.standbyOf(t, 3)
	as, bs := a.start(t), b.start(t)
	rows := func(f *fixture, want string) func() string {
		return func() string {
			c, err := connect(ctx, f.cfg, f.cfg.Owner.Username, f.cfg.Owner.Password, f.cfg.Database)
			if err != nil {
				return err.Error()
			}
			defer func() { _ = c.Close(ctx) }()
			var got string
			if err := c.QueryRow(ctx, "SELECT string_agg(id::text, ',' ORDER BY id) FROM t").Scan(&got); err != nil {
				return err.Error()
			}
			if got != want {
				return fmt.Sprintf("rows %s, want %s", got, want)
			}
			return ""
		}
	}
	eventually(t, time.Minute, rows(a, "1"))
	eventually(t, time.Minute, rows(b, "1"))
	if err := ps.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.e.Promote(ctx, as, 2); err != nil {
		t.Fatal(err)
	}
	ac := mustConnect(t, a.cfg, a.cfg.Owner, a.cfg.Database)
	if _, err := ac.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	bc := mustConnect(t, b.cfg, b.cfg.Superuser, "postgres")
	var started time.Time
	if err := bc.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&started); err != nil {
		t.Fatal(err)
	}
	if err := bs.(engine.Repointer).Repoint(ctx, "127.0.0.1", a.cfg.Port); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, rows(b, "1,2"))
	eventually(t, 30*time.Second, func() string {
		if st := bs.Status(ctx); st.Role != engine.RoleReplica || !st.Ready {
			return fmt.Sprintf("status %+v, want a streaming replica", st)
		}
		return ""
	})
	var now time.Time
	if err := bc.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&now); err != nil {
		t.Fatalf("the standby's connection from before did not survive: %v", err)
	}
	if !now.Equal(started) {
		t.Errorf("the standby restarted: started at %s, then at %s", started, now)
	}
	var tli string
	if err := bc.QueryRow(ctx, "SELECT received_tli::text FROM pg_stat_wal_receiver").Scan(&tli); err != nil || tli != "2" {
		t.Errorf("the WAL receiver streams timeline %q (%v), want 2", tli, err)
	}
	b.checkNoPasswords(t, p.cfg)
}

// TestRefusedStartSaysWhy starts a server with a preload library that does
// not exist: Start's error ends with the server's own FATAL message, which
// becomes the end of the instance's log and so of the pod's termination
// message, whatever connection attempts were made before it exited.
func TestRefusedStartSaysWhy(t *testing.T) {
	f := newFixture(t)
	f.initPrimary(t)
	f.render(t, engine.Tuning{Version: "15", Parameters: map[string]string{"shared_preload_libraries": "steward_no_such_library"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := f.e.Start(ctx, f.cfg)
	if err == nil {
		_ = s.Stop(ctx)
		t.Fatal("the server started with a preload library that does not exist")
	}
	const want = `FATAL: could not access file "steward_no_such_library": No such file or directory`
	if !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "connection attempt") {
		t.Errorf("Start: %v\nwant it to end with %q", err, want)
	}
}

func TestServerLogFatal(t *testing.T) {
	var out bytes.Buffer
	f := &serverLog{w: &out}
	for _, chunk := range []string{
		"2026-11-27 19:54:16.277 GMT [13] LOG:  starting\n2026-11-27 19:54:16.290 GMT [13] FA",
		"TAL:  could not access file \"x\": No such file or directory\n",
		"2026-11-27 19:54:16.300 GMT [13] LOG:  database system is shut down\n",
		"2026-11-27 19:54:16.301 GMT [14] FATAL:  the database system is starting up\n",
	} {
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.last(), `FATAL: could not access file "x": No such file or directory`; got != want {
		t.Errorf("last = %q, want %q", got, want)
	}
	if !strings.Contains(out.String(), "FATAL:  could not access") || !strings.HasSuffix(out.String(), "starting up\n") {
		t.Errorf("the output was not passed on whole: %q", out.String())
	}
	g := &serverLog{w: io.Discard}
	_, _ = g.Write([]byte("x PANIC:  no newline yet"))
	if got := g.last(); got != "PANIC: no newline yet" {
		t.Errorf("last of an unfinished line = %q", got)
	}
}

// TestServerLogRefusals: the postmaster's messages about settings at a
// reload are kept by setting, with their DETAIL, not the reports of a
// change, and forgotten when the next reload starts.
func TestServerLogRefusals(t *testing.T) {
	f := &serverLog{w: io.Discard}
	_, _ = f.Write([]byte(`2026-11-30 08:00:00.000 UTC [7] LOG:  received SIGHUP, reloading configuration files
2026-11-30 08:00:00.001 UTC [7] LOG:  invalid value for parameter "log_timezone": "Mars/Olympus"
2026-11-30 08:00:00.001 UTC [7] LOG:  invalid value for parameter "TimeZone": "Nowhere"
2026-11-30 08:00:00.001 UTC [7] DETAIL:  Time zone "Nowhere" is not valid.
2026-11-30 08:00:00.002 UTC [7] LOG:  parameter "work_mem" changed to "9MB"
2026-11-30 08:00:00.002 UTC [7] LOG:  configuration file "/pgdata/postgresql.conf" contains errors; unaffected changes were applied
`))
	for name, want := range map[string]string{
		"log_timezone": `invalid value for parameter "log_timezone": "Mars/Olympus"`,
		"timezone":     `invalid value for parameter "TimeZone": "Nowhere" (Time zone "Nowhere" is not valid.)`,
		"work_mem":     "",
	} {
		if got := f.refusal(name); got != want {
			t.Errorf("refusal(%s) = %q, want %q", name, got, want)
		}
	}
	f.forgetRefusals()
	if got := f.refusal("log_timezone"); got != "" {
		t.Errorf("after forgetRefusals: %q", got)
	}
	var none *serverLog
	none.forgetRefusals()
	if got := none.refusal("x"); got != "" {
		t.Errorf("a nil serverLog's refusal: %q", got)
	}
}

// TestRejoinWindsBackADivergedStandby: a standby that received from its
// primary what another standby, promoted after the primary was lost, never
// had cannot follow the new primary; Rejoin winds it back with pg_rewind,
// and it then streams from the new primary, without the lost primary's
// last rows. This is the path a replica whose server exited takes when it
// starts again (instance.manager.needsRewind).
func TestRejoinWindsBackADivergedStandby(t *testing.T) {
	realserver.Require(t, realserver.Binaries{Package: pg15.Package, Dirs: pg15.Dirs, Names: []string{"pg_rewind"}})
	ctx := context.Background()
	p, ps, pc := startedPrimary(t, "CREATE TABLE t (v text); INSERT INTO t VALUES ('both')")
	rows := func(cfg engine.Config) string {
		c, err := connect(ctx, cfg, cfg.Owner.Username, cfg.Owner.Password, cfg.Database)
		if err != nil {
			return "connecting: " + err.Error()
		}
		defer func() { _ = c.Close(ctx) }()
		var got string
		if err := c.QueryRow(ctx, "SELECT string_agg(v, ',' ORDER BY v) FROM t").Scan(&got); err != nil {
			return "reading: " + err.Error()
		}
		return got
	}
	ahead, behind := p.standbyOf(t, 2), p.standbyOf(t, 3)
	as, bs := ahead.start(t), behind.start(t)
	for _, r := range []*fixture{ahead, behind} {
		eventually(t, 30*time.Second, func() string {
			if got := rows(r.cfg); got != "both" {
				return fmt.Sprintf("standby on port %d holds %q, want both", r.cfg.Port, got)
			}
			return ""
		})
	}

	// One standby stops; the other receives the primary's last row; the
	// primary is lost.
	stop := func(s engine.Server) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := s.Stop(sctx); err != nil {
			t.Fatal(err)
		}
	}
	stop(bs)
	if _, err := pc.Exec(ctx, "INSERT INTO t VALUES ('lost')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if got := rows(ahead.cfg); got != "both,lost" {
			return fmt.Sprintf("the standby ahead holds %q, want both,lost", got)
		}
		return ""
	})
	stop(ps)
	stop(as)

	// The standby behind is promoted and takes a write.
	bs = behind.start(t)
	if err := behind.e.Promote(ctx, bs, 2); err != nil {
		t.Fatal(err)
	}
	bc := mustConnect(t, behind.cfg, behind.cfg.Owner, behind.cfg.Database)
	if _, err := bc.Exec(ctx, "INSERT INTO t VALUES ('new')"); err != nil {
		t.Fatal(err)
	}

	// The standby ahead, pointed at the new primary, cannot follow it.
	ahead.cfg.PrimaryPort = behind.cfg.Port
	as = ahead.start(t)
	time.Sleep(10 * time.Second)
	if got := rows(ahead.cfg); got != "both,lost" {
		t.Fatalf("the standby ahead holds %q 10 s after it was pointed at the new primary, want both,lost: it was not ahead of it", got)
	}
	stop(as)

	// Wound back, it follows.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := ahead.e.Rejoin(rctx, ahead.cfg); err != nil {
		t.Fatalf("Rejoin: %v", err)
	}
	as = ahead.start(t)
	eventually(t, 60*time.Second, func() string {
		if got := rows(ahead.cfg); got != "both,new" {
			return fmt.Sprintf("the wound back standby holds %q, want both,new", got)
		}
		return ""
	})
	if st := as.Status(ctx); st.Role != engine.RoleReplica {
		t.Errorf("the wound back standby's status %+v, want a replica", st)
	}
	if _, err := bc.Exec(ctx, "INSERT INTO t VALUES ('streamed')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		if got := rows(ahead.cfg); got != "both,new,streamed" {
			return fmt.Sprintf("the wound back standby holds %q, want both,new,streamed", got)
		}
		return ""
	})
	ahead.checkNoPasswords(t, p.cfg)
}
