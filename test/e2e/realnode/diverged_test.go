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

package realnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// divergedEngine is what the test needs of an engine: its superuser's
// SQL, the table it writes, and whether a replica streams from a primary.
type divergedEngine struct {
	engine, version string
	super           func(ctx context.Context, pod, sql string) (string, error)
	table, agg      string
	// streams reports whether pod streams from the primary named.
	streams func(ctx context.Context, pod, primary string) error
	// rewinds: a diverged replica is wound back, not cloned afresh.
	rewinds bool
}

var divergedEngines = []divergedEngine{
	{engine: "postgres", version: "15", super: postgresSuper, table: "history", agg: "string_agg(v, ',' order by v)", rewinds: true,
		streams: func(ctx context.Context, pod, primary string) error {
			got, err := postgresSuper(ctx, pod, "select status || ' ' || sender_host from pg_stat_wal_receiver")
			if err != nil || !strings.HasPrefix(got, "streaming "+primary+".") {
				return fmt.Errorf("WAL receiver %q (%w)", got, err)
			}
			return nil
		}},
	{engine: "mariadb", version: "10.11", super: mariadbSuper, table: "app.history", agg: "group_concat(v order by v)",
		streams: func(ctx context.Context, pod, primary string) error {
			out, err := execIn(ctx, pod, "mariadb", "show replica status\\G", "sh", "-c",
				`MYSQL_PWD="$STEWARD_SUPERUSER_PASSWORD" exec mariadb -S /steward/run/mysqld.sock -u "$STEWARD_SUPERUSER_USERNAME"`)
			if err != nil {
				return err
			}
			for _, want := range []string{"Master_Host: " + primary + ".", "Slave_IO_Running: Yes", "Slave_SQL_Running: Yes"} {
				if !strings.Contains(out, want) {
					return fmt.Errorf("no %q in the replica status: %s", want, firstLines(out, 40))
				}
			}
			return nil
		}},
}

// TestReplicaAheadOfTheNewPrimaryRebuildsItself makes the replica that a
// failover could not promote hold history the new primary does not have,
// then brings it back, for PostgreSQL 15 and MariaDB 10.11. A 3-instance
// Database: one replica (lagging) is cut off the network, a row is written
// that only the other replica (ahead) receives, then the primary and ahead
// are cut off and lagging is connected again, so that the operator
// promotes lagging, the only replica it reaches. Once the others are
// connected again, ahead cannot follow lagging (it holds the lost
// primary's last row), and restarting it would not help: its instance
// manager must find that it does not follow while its primary serves, and
// rebuild it. The test checks that ahead follows the new primary again,
// holds its rows and not the lost one, receives a row written after, that
// a ReplicaRebuilt event names it, and that the Database is Ready with
// every instance.
func TestReplicaAheadOfTheNewPrimaryRebuildsItself(t *testing.T) {
	requireClusterBeside(t)
	for _, e := range divergedEngines {
		t.Run(e.engine, func(t *testing.T) {
			// The two Databases are apart, and the test mostly waits.
			t.Parallel()
			replicaAheadRebuildsItself(t, e)
		})
	}
}

func replicaAheadRebuildsItself(t *testing.T, e divergedEngine) {
	db := "ahead-" + e.engine
	applyDatabase(t, db, e.engine, e.version, 3, "")
	primary := jsonpath(t, "database/"+db, "{.status.primary}")
	term, _ := strconv.Atoi(jsonpath(t, "database/"+db, "{.status.term}"))
	var replicas []string
	for i := range 3 {
		if p := fmt.Sprintf("%s-%d", db, i); p != primary {
			replicas = append(replicas, p)
		}
	}
	lagging, ahead := replicas[0], replicas[1]
	t.Logf("primary %s (term %d); %s will lag, %s will be ahead", primary, term, lagging, ahead)
	rows := func(pod, want string) func() error {
		return func() error {
			got, err := e.super(t.Context(), pod, "select "+e.agg+" from "+e.table)
			if err != nil || got != want {
				return fmt.Errorf("%s holds %q, want %q (%w)", pod, got, want, err)
			}
			return nil
		}
	}
	mustSQL(t, e.super, primary, "create table "+e.table+" (v varchar(10)); insert into "+e.table+" values ('a')")
	for _, r := range replicas {
		eventually(t, 2*time.Minute, "the first row on "+r, rows(r, "a"))
	}

	link := podLinks(t)
	link(lagging, "down")
	mustSQL(t, e.super, primary, "insert into "+e.table+" values ('b')")
	eventually(t, time.Minute, "the second row on "+ahead, rows(ahead, "a,b"))
	if err := rows(lagging, "a")(); err != nil {
		t.Fatalf("the replica cut off received the second row: %v", err)
	}
	link(primary, "down")
	link(ahead, "down")
	link(lagging, "up")
	eventually(t, 4*time.Minute, lagging+" promoted", func() error {
		got := strings.Fields(jsonpath(t, "database/"+db, "{.status.primary} {.status.term}"))
		if len(got) != 2 || got[0] != lagging || got[1] == strconv.Itoa(term) {
			return fmt.Errorf("primary and term %v", got)
		}
		return nil
	})
	t.Logf("%s promoted while %s and %s were cut off", lagging, primary, ahead)
	eventually(t, time.Minute, "a write on the new primary", func() error {
		_, err := e.super(t.Context(), lagging, "insert into "+e.table+" values ('c')")
		return err
	})
	link(primary, "up")
	link(ahead, "up")

	began := time.Now()
	eventually(t, 8*time.Minute, ahead+" following "+lagging, func() error { return e.streams(t.Context(), ahead, lagging) })
	t.Logf("%s follows the new primary %v after the links were up again", ahead, time.Since(began).Round(time.Second))
	eventually(t, time.Minute, "the new primary's rows and not the lost one on "+ahead, rows(ahead, "a,c"))
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name="+db+",reason=ReplicaRebuilt",
		"-o", "jsonpath={.items[*].message}")
	if !strings.Contains(events, "replica "+ahead+" could not follow") {
		t.Errorf("no ReplicaRebuilt event names %s: %q", ahead, events)
	}
	t.Logf("events: %s", events)
	// How the manager rebuilt it: PostgreSQL winds back with pg_rewind,
	// which keeps the replica's files; MariaDB's primary refuses a replica
	// that diverged, so it is cloned afresh.
	logs := kubectl(t, "logs", ahead, "-c", e.engine)
	_, after, rebuilt := strings.Cut(logs, "rebuilding the replica")
	rewound, cloned := strings.Contains(after, "rejoined as a replica"), strings.Contains(after, "cloning the primary afresh")
	t.Logf("%s's manager after the rebuild began: wound back %v, cloned afresh %v", ahead, rewound, cloned)
	var said []string
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `"msg":"phase"`) || strings.Contains(line, "rebuild") || strings.Contains(line, "does not follow") {
			said = append(said, strings.TrimSpace(line))
		}
	}
	t.Logf("%s's manager on its phases and rebuilds, last %d lines:\n%s", ahead, min(len(said), 20), strings.Join(said[max(0, len(said)-20):], "\n"))
	if !rebuilt || rewound == cloned || rewound != e.rewinds {
		t.Errorf("%s's manager: rebuilt %v, wound back %v, cloned afresh %v; want wound back %v", ahead, rebuilt, rewound, cloned, e.rewinds)
	}
	mustSQL(t, e.super, lagging, "insert into "+e.table+" values ('d')")
	for _, r := range []string{primary, ahead} {
		eventually(t, 5*time.Minute, "the row written after on "+r, rows(r, "a,c,d"))
	}
	kubectl(t, "wait", "--for=condition=Ready", "database/"+db, "--timeout=300s")
	if got := jsonpath(t, "database/"+db, "{.status.readyReplicas}"); got != "3" {
		t.Errorf("status.readyReplicas %q, want 3", got)
	}
}

// podLinks returns a function that sets a pod's network link "down" or
// "up" on its node; every link it set down is set up again when the test
// ends.
func podLinks(t *testing.T) func(pod, state string) {
	t.Helper()
	// setDown undoes, by pod, the links set down.
	setDown := map[string]func(context.Context) error{}
	t.Cleanup(func() {
		for pod, up := range setDown {
			if err := up(context.WithoutCancel(t.Context())); err != nil {
				t.Logf("setting %s's link up again: %v", pod, err)
			}
		}
	})
	return func(pod, state string) {
		t.Helper()
		out, err := devenv.Kubectl(t.Context(), cluster, nil, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName} {.metadata.uid}")
		if err != nil {
			t.Fatalf("reading pod %s: %v", pod, err)
		}
		node, uid, _ := strings.Cut(strings.TrimSpace(out), " ")
		for _, n := range cluster.Nodes() {
			if n.Name != node {
				continue
			}
			if err := n.SetPodLink(t.Context(), uid, state); err != nil {
				t.Fatalf("setting %s's link %s: %v", pod, state, err)
			}
			if state == "down" {
				setDown[pod] = func(ctx context.Context) error { return n.SetPodLink(ctx, uid, "up") }
			} else {
				delete(setDown, pod)
			}
			t.Logf("%s's link is %s", pod, state)
			return
		}
		t.Fatalf("pod %s is on node %q, not a node of the cluster", pod, node)
	}
}
