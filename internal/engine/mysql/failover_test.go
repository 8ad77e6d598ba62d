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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

func TestGTIDPosition(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0-1-42": 42, "0-1-42,1-2-7": 49, "0-2-1000000000000": 1000000000000} {
		if got := gtidPosition(in); got != want {
			t.Errorf("gtidPosition(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestSwitchoverAndRejoinByGTID runs a MariaDB primary and a replica on
// real servers: the primary stops and records where it ended, the replica
// is promoted and takes writes, the former primary rejoins it by GTID and
// replicates; then a history the new primary lacks makes a rejoin fail.
func TestSwitchoverAndRejoinByGTID(t *testing.T) {
	requireMariaDB(t)
	e := MariaDB
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	a := newServerConfig(t, 1)
	writeConfig(t, e.Engine, a, engine.Tuning{MemoryBytes: 512 * mib, Port: a.Port})
	if err := e.InitPrimary(ctx, a); err != nil {
		t.Fatalf("InitPrimary: %v", err)
	}
	sa := startServer(ctx, t, e.Engine, a)
	exec := func(cfg engine.Config, stmt string) {
		t.Helper()
		if _, err := tcp(t, cfg, cfg.Owner, cfg.Database).ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s on port %d: %v", stmt, cfg.Port, err)
		}
	}
	exec(a, "CREATE TABLE items (id INT PRIMARY KEY)")
	exec(a, "INSERT INTO items VALUES (1)")

	b := newServerConfig(t, 2)
	b.Superuser, b.Owner, b.Replication = a.Superuser, a.Owner, a.Replication
	b.PrimaryHost, b.PrimaryPort = "127.0.0.1", a.Port
	writeConfig(t, e.Engine, b, engine.Tuning{MemoryBytes: 512 * mib, Port: b.Port})
	if err := e.InitReplica(ctx, b); err != nil {
		t.Fatalf("InitReplica: %v", err)
	}
	sb := startServer(ctx, t, e.Engine, b)
	exec(a, "INSERT INTO items VALUES (2)")
	has := func(cfg engine.Config, id int) func() (bool, string) {
		return func() (bool, string) {
			var n int
			err := tcp(t, cfg, cfg.Owner, cfg.Database).QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id = ?", id).Scan(&n)
			return err == nil && n == 1, fmt.Sprint(n, err)
		}
	}
	eventually(t, 30*time.Second, "row 2 on the replica", has(b, 2))
	eventually(t, 30*time.Second, "the replica's position reaches the primary's", func() (bool, string) {
		pa, pb := sa.Status(ctx), sb.Status(ctx)
		return pb.Ready && pa.Position > 0 && pb.Position == pa.Position, fmt.Sprintf("primary %+v, replica %+v", pa, pb)
	})
	if r, err := e.IsReplica(b); err != nil || !r {
		t.Fatalf("IsReplica(replica) = %v, %v", r, err)
	}
	// A second replica, which follows the new primary without a restart.
	c := newServerConfig(t, 3)
	c.Superuser, c.Owner, c.Replication = a.Superuser, a.Owner, a.Replication
	c.PrimaryHost, c.PrimaryPort = "127.0.0.1", a.Port
	writeConfig(t, e.Engine, c, engine.Tuning{MemoryBytes: 512 * mib, Port: c.Port})
	if err := e.InitReplica(ctx, c); err != nil {
		t.Fatalf("InitReplica: %v", err)
	}
	sc := startServer(ctx, t, e.Engine, c)
	eventually(t, 30*time.Second, "row 2 on the second replica", has(c, 2))
	if r, err := e.IsReplica(a); err != nil || r {
		t.Fatalf("IsReplica(primary) = %v, %v", r, err)
	}

	// Switchover: the primary stops and says where it ended.
	ended := sa.Status(ctx).Position
	if err := sa.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := e.StoppedPosition(ctx, a); err != nil || pos != ended {
		t.Fatalf("StoppedPosition = %d, %v; want %d", pos, err, ended)
	}
	if err := e.Promote(ctx, sb, 2); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	if st := sb.Status(ctx); st.Role != engine.RolePrimary || !st.Ready {
		t.Fatalf("promoted status = %+v", st)
	}
	if r, _ := e.IsReplica(b); r {
		t.Error("IsReplica after the promotion = true")
	}
	newPrimary := b
	newPrimary.PrimaryHost, newPrimary.PrimaryPort = "", 0
	exec(newPrimary, "INSERT INTO items VALUES (3)")
	if err := sc.(*Server).Repoint(ctx, "127.0.0.1", b.Port); err != nil {
		t.Fatalf("Repoint: %v", err)
	}
	eventually(t, 30*time.Second, "row 3 on the re-pointed replica", has(c, 3))
	select {
	case <-sc.Done():
		t.Fatal("the re-pointed replica's server exited")
	default:
	}
	if st := sc.Status(ctx); st.Role != engine.RoleReplica || !st.Ready {
		t.Fatalf("re-pointed status = %+v", st)
	}

	// The former primary follows the new one from its own position.
	a.PrimaryHost, a.PrimaryPort = "127.0.0.1", b.Port
	if err := e.Rejoin(ctx, a); err != nil {
		t.Fatalf("Rejoin: %v", err)
	}
	if r, _ := e.IsReplica(a); !r {
		t.Error("IsReplica after Rejoin = false")
	}
	sa = startServer(ctx, t, e.Engine, a)
	eventually(t, 30*time.Second, "row 3 on the former primary", has(a, 3))
	exec(newPrimary, "INSERT INTO items VALUES (4)")
	eventually(t, 30*time.Second, "row 4 on the former primary", has(a, 4))
	if st := sa.Status(ctx); st.Role != engine.RoleReplica || !st.Ready {
		t.Fatalf("rejoined status = %+v", st)
	}
	if _, err := tcp(t, a, a.Owner, a.Database).ExecContext(ctx, "INSERT INTO items VALUES (99)"); err == nil {
		t.Fatal("the rejoined replica accepted a write")
	}

	// Histories part: the replica stops, the primary writes row 5 and is
	// lost; the replica is promoted without it and writes row 6. The
	// former primary's row 5 is refused when it tries to rejoin.
	if err := sa.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	exec(newPrimary, "INSERT INTO items VALUES (5)")
	if err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sa = startServer(ctx, t, e.Engine, a) // a replica of a primary that is gone
	if err := e.Promote(ctx, sa, 3); err != nil {
		t.Fatalf("Promote without the primary: %v", err)
	}
	a.PrimaryHost, a.PrimaryPort = "", 0
	exec(a, "INSERT INTO items VALUES (6)")
	b.PrimaryHost, b.PrimaryPort = "127.0.0.1", a.Port
	err := e.Rejoin(ctx, b)
	if err == nil {
		t.Fatal("Rejoin of a history the primary does not have succeeded")
	}
	if !strings.Contains(err.Error(), "refuses") {
		t.Errorf("Rejoin: %v, want the primary's refusal", err)
	}
	expectNoSecrets(t, b, "the error", err.Error())
	t.Logf("Rejoin of a diverged history: %v", err)
}

// TestSemiSynchronous: with one synchronous replica a commit is
// acknowledged once the replica has it, and waits while none is there,
// until a replica is back.
func TestSemiSynchronous(t *testing.T) {
	requireMariaDB(t)
	e := MariaDB
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tuning := func(port int) engine.Tuning {
		return engine.Tuning{MemoryBytes: 512 * mib, Port: port, SynchronousReplicas: 1}
	}
	a := newServerConfig(t, 1)
	writeConfig(t, e.Engine, a, tuning(a.Port))
	if err := e.InitPrimary(ctx, a); err != nil {
		t.Fatalf("InitPrimary: %v", err)
	}
	sa := startServer(ctx, t, e.Engine, a)
	// The users were ensured outside the binary log: nothing waits.
	var binlogPos string
	if err := tcp(t, a, a.Superuser, "").QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&binlogPos); err != nil || binlogPos != "" {
		t.Fatalf("gtid_binlog_pos after the start = %q, %v; want empty", binlogPos, err)
	}

	b := newServerConfig(t, 2)
	b.Superuser, b.Owner, b.Replication = a.Superuser, a.Owner, a.Replication
	b.PrimaryHost, b.PrimaryPort = "127.0.0.1", a.Port
	writeConfig(t, e.Engine, b, tuning(b.Port))
	if err := e.InitReplica(ctx, b); err != nil {
		t.Fatalf("InitReplica: %v", err)
	}
	sb := startServer(ctx, t, e.Engine, b)
	acknowledging := func() (bool, string) {
		var name, clients string
		err := tcp(t, a, a.Superuser, "").QueryRowContext(ctx, "SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'").Scan(&name, &clients)
		return err == nil && clients == "1", fmt.Sprint(clients, err)
	}
	eventually(t, 30*time.Second, "the replica acknowledging", acknowledging)
	owner := tcp(t, a, a.Owner, a.Database)
	write := func(stmt string, d time.Duration) error {
		wctx, wcancel := context.WithTimeout(ctx, d)
		defer wcancel()
		began := time.Now()
		_, err := owner.ExecContext(wctx, stmt)
		t.Logf("%s: %v after %v", stmt, err, time.Since(began).Round(time.Millisecond))
		return err
	}
	if err := write("CREATE TABLE items (id INT PRIMARY KEY)", 30*time.Second); err != nil {
		t.Fatalf("a commit with the replica there: %v", err)
	}
	if err := write("INSERT INTO items VALUES (1)", 30*time.Second); err != nil {
		t.Fatalf("a commit with the replica there: %v", err)
	}
	readers := map[int]*sql.DB{a.Port: tcp(t, a, a.Owner, a.Database), b.Port: tcp(t, b, b.Owner, b.Database)}
	count := func(cfg engine.Config, id int) int {
		var n int
		if err := readers[cfg.Port].QueryRowContext(ctx, "SELECT COUNT(*) FROM items WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Acknowledged means received by the replica; applied a moment later.
	began := time.Now()
	eventually(t, 30*time.Second, "row 1 on the replica", func() (bool, string) { return count(b, 1) == 1, fmt.Sprintf("%+v", sb.Status(ctx)) })
	t.Logf("row 1 on the replica after %v", time.Since(began))

	// Without the replica a commit waits: the client gives up here, the
	// server holds it until the replica is back.
	began = time.Now()
	if err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the replica's stop took %v", time.Since(began))
	if err := write("INSERT INTO items VALUES (2)", 3*time.Second); err == nil {
		t.Fatal("a commit was acknowledged after the replica stopped")
	}
	began = time.Now()
	sb = startServer(ctx, t, e.Engine, b)
	t.Logf("the replica's restart took %v", time.Since(began))
	eventually(t, 30*time.Second, "the replica acknowledging again", acknowledging)
	eventually(t, 30*time.Second, "the held commit on both", func() (bool, string) {
		return count(a, 2) == 1 && count(b, 2) == 1, ""
	})

	// Fenced while a commit is held for the replica: the commit is never
	// acknowledged, and the server is gone.
	if err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- write("INSERT INTO items VALUES (3)", 2*time.Minute) }()
	time.Sleep(time.Second)
	if err := sa.(engine.Fencer).Fence(); err != nil {
		t.Fatalf("Fence: %v", err)
	}
	select {
	case <-sa.Done():
	default:
		t.Fatal("the server runs after Fence")
	}
	if err := <-held; err == nil {
		t.Fatal("a commit held for the replica was acknowledged by a fenced primary")
	}
}
