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

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	drv "github.com/go-sql-driver/mysql"

	"github.com/steward-dev/steward/internal/engine"
)

// tcp connects over TCP to an instance of cfg as c.
func tcp(t *testing.T, cfg engine.Config, c engine.Credentials, database string) *sql.DB {
	t.Helper()
	dc := drv.NewConfig()
	dc.Net = "tcp"
	dc.Addr = fmt.Sprintf("127.0.0.1:%d", cfg.Port)
	dc.User = c.Username
	dc.Passwd = c.Password
	dc.DBName = database
	dc.Timeout = 5 * time.Second
	conn, err := drv.NewConnector(dc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v (%s)", what, timeout, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPrimaryAndReplica bootstraps a primary, clones a replica from it and
// checks users, replication, Reload and that passwords stay secret.
func TestPrimaryAndReplica(t *testing.T) {
	requireMariaDB(t)
	e := MariaDB.Engine
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	pcfg := newServerConfig(t, 1)
	writeConfig(t, e, pcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: pcfg.Port})
	if ok, err := e.Initialized(pcfg); err != nil || ok {
		t.Fatalf("Initialized before InitPrimary = %v, %v", ok, err)
	}
	if err := e.InitPrimary(ctx, pcfg); err != nil {
		expectNoSecrets(t, pcfg, "the error", err.Error())
		t.Fatalf("InitPrimary: %v", err)
	}
	if ok, err := e.Initialized(pcfg); err != nil || !ok {
		t.Fatalf("Initialized after InitPrimary = %v, %v", ok, err)
	}
	primary := startServer(ctx, t, e, pcfg)
	for range 2 { // idempotent
		if err := primary.EnsureUsers(ctx); err != nil {
			expectNoSecrets(t, pcfg, "the error", err.Error())
			t.Fatalf("EnsureUsers: %v", err)
		}
	}
	if st := primary.Status(ctx); st.Role != engine.RolePrimary || !st.Ready || st.Version == "" {
		t.Fatalf("primary status = %+v", st)
	}

	t.Run("owner", func(t *testing.T) {
		owner := tcp(t, pcfg, pcfg.Owner, pcfg.Database)
		for _, s := range []string{
			"CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(50))",
			"INSERT INTO items VALUES (1, 'before the clone')",
		} {
			if _, err := owner.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		wrong := pcfg.Owner
		wrong.Password = "not" + wrong.Password
		err := tcp(t, pcfg, wrong, pcfg.Database).PingContext(ctx)
		if errorNumber(err) != 1045 {
			t.Fatalf("a wrong password: %v, want access denied (1045)", err)
		}
		// The owner is no superuser.
		if _, err := owner.ExecContext(ctx, "CREATE DATABASE other"); err == nil {
			t.Error("the owner created another database")
		}
	})

	t.Run("replica", func(t *testing.T) {
		rcfg := newServerConfig(t, 2)
		rcfg.Superuser, rcfg.Owner, rcfg.Replication = pcfg.Superuser, pcfg.Owner, pcfg.Replication
		rcfg.PrimaryHost, rcfg.PrimaryPort = "127.0.0.1", pcfg.Port
		writeConfig(t, e, rcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: rcfg.Port})
		if err := e.InitReplica(ctx, rcfg); err != nil {
			expectNoSecrets(t, rcfg, "the error", err.Error())
			t.Fatalf("InitReplica: %v", err)
		}
		if _, err := os.Stat(filepath.Join(rcfg.RunDir, "clone.cnf")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dump's option file is still there: %v", err)
		}
		replica := startServer(ctx, t, e, rcfg)
		eventually(t, 20*time.Second, "replica ready", func() (bool, string) {
			st := replica.Status(ctx)
			return st.Role == engine.RoleReplica && st.Ready && st.LagSeconds != nil, fmt.Sprintf("%+v", st)
		})

		// The users came with the clone: the owner reads the cloned row.
		ro := tcp(t, rcfg, rcfg.Owner, rcfg.Database)
		var name string
		if err := ro.QueryRowContext(ctx, "SELECT name FROM items WHERE id = 1").Scan(&name); err != nil || name != "before the clone" {
			t.Fatalf("cloned row: %q, %v", name, err)
		}
		if _, err := ro.ExecContext(ctx, "INSERT INTO items VALUES (3, 'on the replica')"); err == nil {
			t.Error("the replica accepted a write")
		}
		owner := tcp(t, pcfg, pcfg.Owner, pcfg.Database)
		if _, err := owner.ExecContext(ctx, "INSERT INTO items VALUES (2, 'after the clone')"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "row replicated", func() (bool, string) {
			err := ro.QueryRowContext(ctx, "SELECT name FROM items WHERE id = 2").Scan(&name)
			return err == nil && name == "after the clone", fmt.Sprint(err)
		})
	})

	t.Run("replica with a wrong password", func(t *testing.T) {
		rcfg := newServerConfig(t, 3)
		rcfg.Owner, rcfg.Replication = pcfg.Owner, pcfg.Replication
		rcfg.PrimaryHost, rcfg.PrimaryPort = "127.0.0.1", pcfg.Port
		writeConfig(t, e, rcfg, engine.Tuning{Port: rcfg.Port})
		err := e.InitReplica(ctx, rcfg)
		if err == nil {
			t.Fatal("InitReplica with a wrong superuser password succeeded")
		}
		t.Logf("InitReplica: %v", err)
		expectNoSecrets(t, rcfg, "the error", err.Error())
		if ok, _ := e.Initialized(rcfg); ok {
			t.Error("a failed clone left an initialised data directory")
		}
		// Start's wait refuses a wrong superuser and says nothing of it.
		ps := primary.(*Server)
		bad := pcfg
		bad.Superuser.Password = rcfg.Superuser.Password
		db, err := e.waitReady(ctx, bad, ps.p, filepath.Join(pcfg.RunDir, "mysqld.sock"), bad.Superuser)
		if err == nil {
			_ = db.Close()
			t.Fatal("connecting with a wrong superuser password succeeded")
		}
		t.Logf("connecting: %v", err)
		expectNoSecrets(t, bad, "the error", err.Error())
	})

	t.Run("reload", func(t *testing.T) {
		var before int
		if err := tcp(t, pcfg, pcfg.Superuser, "").QueryRowContext(ctx, "SELECT @@max_connections").Scan(&before); err != nil {
			t.Fatal(err)
		}
		writeConfig(t, e, pcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: pcfg.Port, Parameters: map[string]string{
			"max_connections":      "77",
			"innodb_log_file_size": "64M",
		}})
		if err := primary.Reload(ctx); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		var after int
		if err := tcp(t, pcfg, pcfg.Superuser, "").QueryRowContext(ctx, "SELECT @@max_connections").Scan(&after); err != nil {
			t.Fatal(err)
		}
		if before == 77 || after != 77 {
			t.Errorf("max_connections: %d before, %d after Reload, want 77", before, after)
		}
		st := primary.Status(ctx)
		if !slices.Equal(st.PendingRestart, []string{"innodb_log_file_size"}) {
			t.Errorf("PendingRestart = %v, want [innodb_log_file_size]", st.PendingRestart)
		}
		// Back to the start: nothing pending.
		writeConfig(t, e, pcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: pcfg.Port})
		if err := primary.Reload(ctx); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		if st := primary.Status(ctx); len(st.PendingRestart) != 0 {
			t.Errorf("PendingRestart = %v after reverting", st.PendingRestart)
		}

		// A value the server refuses (admission does not judge strings):
		// reported with the server's words, the others applied, and tried
		// again only when the configuration changes.
		var mode string
		if err := tcp(t, pcfg, pcfg.Superuser, "").QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		writeConfig(t, e, pcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: pcfg.Port, Parameters: map[string]string{
			"sql_mode": "NOT_A_MODE", "max_connections": "78",
		}})
		if err := primary.Reload(ctx); err != nil {
			t.Fatalf("Reload with a refused value: %v, want it reported in the status", err)
		}
		st = primary.Status(ctx)
		if len(st.Refused) != 1 || st.Refused[0].Name != "sql_mode" || !strings.Contains(st.Refused[0].Reason, "NOT_A_MODE") || !st.Ready {
			t.Errorf("status after a refused value: %+v, want sql_mode refused with the server's words", st)
		}
		var nowMode string
		if err := tcp(t, pcfg, pcfg.Superuser, "").QueryRowContext(ctx, "SELECT @@GLOBAL.sql_mode, @@max_connections").Scan(&nowMode, &after); err != nil {
			t.Fatal(err)
		}
		if nowMode != mode || after != 78 {
			t.Errorf("sql_mode %q (was %q), max_connections %d after the reload, want sql_mode kept and 78", nowMode, mode, after)
		}
		writeConfig(t, e, pcfg, engine.Tuning{MemoryBytes: 512 * mib, Port: pcfg.Port})
		if err := primary.Reload(ctx); err != nil {
			t.Fatalf("Reload: %v", err)
		}
		if st := primary.Status(ctx); len(st.Refused) != 0 {
			t.Errorf("Refused = %+v once the value is gone", st.Refused)
		}
	})
}

// TestRenderedConfigurationAccepted starts a real server with the
// configuration rendered for each memory preset and reads back the tuned
// values.
func TestRenderedConfigurationAccepted(t *testing.T) {
	requireMariaDB(t)
	e := MariaDB.Engine
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := newServerConfig(t, 1)
	writeConfig(t, e, cfg, engine.Tuning{Port: cfg.Port})
	if err := e.InitPrimary(ctx, cfg); err != nil {
		t.Fatalf("InitPrimary: %v", err)
	}
	for _, memory := range []int64{512 * mib, 1 * gib, 2 * gib} {
		t.Run(fmt.Sprintf("%dMi", memory/mib), func(t *testing.T) {
			writeConfig(t, e, cfg, engine.Tuning{MemoryBytes: memory, Port: cfg.Port})
			s, err := e.Start(ctx, cfg)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer func() {
				if err := s.Stop(ctx); err != nil {
					t.Errorf("Stop: %v", err)
				}
			}()
			pool, _ := BufferPool(memory)
			var gotPool int64
			var gotConnections int
			var charset, tmpdir string
			var logBin int
			if err := tcp(t, cfg, cfg.Superuser, "").QueryRowContext(ctx,
				"SELECT @@innodb_buffer_pool_size, @@max_connections, @@character_set_server, @@log_bin, @@tmpdir").
				Scan(&gotPool, &gotConnections, &charset, &logBin, &tmpdir); err != nil {
				t.Fatal(err)
			}
			if gotPool != pool || gotConnections != MaxConnections(memory) || charset != "utf8mb4" || logBin != 1 {
				t.Errorf("server: buffer pool %d, max_connections %d, charset %s, log_bin %d; rendered %d, %d, utf8mb4, 1",
					gotPool, gotConnections, charset, logBin, pool, MaxConnections(memory))
			}
			// Its own temporary directory, not a /tmp other servers share.
			if want := filepath.Join(cfg.RunDir, "tmp"); tmpdir != want {
				t.Errorf("tmpdir = %q, want %q", tmpdir, want)
			}
			if st := s.Status(ctx); !st.Ready || st.Role != engine.RolePrimary {
				t.Errorf("status = %+v", st)
			}
		})
	}
}
