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
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// databaseManifest is a Database with small CPU requests (each node offers
// only the machine's cores) that deletes its data with it: a Database
// created again under the same name by a later run must start empty.
func databaseManifest(name, engine, version string, instances int, extra string) string {
	return databaseManifestWithMemory(name, engine, version, instances, "512Mi", extra)
}

// databaseManifestWithMemory is databaseManifest with the instances'
// memory limit given.
func databaseManifestWithMemory(name, engine, version string, instances int, memoryLimit, extra string) string {
	return fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: %s
  namespace: default
spec:
  engine: %s
  version: %q
  replicas: %d
  deletionPolicy: Delete
  resources:
    requests: {cpu: 50m, memory: 256Mi}
    limits: {memory: %s}
%s`, name, engine, version, instances, memoryLimit, extra)
}

// applyDatabase creates a Database, waits until it is Ready, logs how long
// that took, and deletes it with its data when the test ends.
func applyDatabase(t *testing.T, name, engine, version string, instances int, extra string) {
	t.Helper()
	applyDatabaseManifest(t, name, engine, version, instances, databaseManifest(name, engine, version, instances, extra))
}

// applyDatabaseManifest is applyDatabase with the manifest given.
func applyDatabaseManifest(t *testing.T, name, engine, version string, instances int, manifest string) {
	t.Helper()
	began := time.Now()
	applyAndDelete(t, "database/"+name, manifest)
	kubectl(t, "wait", "--for=condition=Ready", "database/"+name, "--timeout=420s")
	t.Logf("%s %s Database with %d instances Ready %v after kubectl apply", engine, version, instances, time.Since(began).Round(time.Millisecond))
}

// documentedShell returns the kubectl exec line docs/database.md gives for
// a shell on the primary with the engine's client, as arguments for pod,
// without the terminal (-t): the SQL comes on standard input.
func documentedShell(t *testing.T, container, pod string) []string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "database.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "kubectl exec -it ") || !strings.Contains(line, " -c "+container+" ") {
			continue
		}
		args := shellWords(t, strings.TrimPrefix(line, "kubectl "))
		if len(args) < 3 || !strings.HasSuffix(args[2], "-0") {
			t.Fatalf("docs/database.md: %q does not exec into an instance -0", line)
		}
		args[1], args[2] = "-i", pod
		return args
	}
	t.Fatalf("docs/database.md has no `kubectl exec -it ... -c %s` line", container)
	return nil
}

// shellWords splits a command line as sh would, for the plain words and
// single-quoted strings the docs use.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			word.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '"' || r == '\\' || r == '$':
			t.Fatalf("shellWords: %q outside single quotes in %q", r, line)
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("shellWords: unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// postgresSuper runs SQL as the superuser in an instance, over its socket.
func postgresSuper(ctx context.Context, pod, sql string) (string, error) {
	return execIn(ctx, pod, "postgres", sql, "sh", "-c",
		`PGPASSWORD="$STEWARD_SUPERUSER_PASSWORD" exec psql -h /steward/run -U "$STEWARD_SUPERUSER_USERNAME" -d postgres -qAt -v ON_ERROR_STOP=1`)
}

// mariadbSuper runs SQL as the superuser in an instance, over its socket.
func mariadbSuper(ctx context.Context, pod, sql string) (string, error) {
	return execIn(ctx, pod, "mariadb", sql, "sh", "-c",
		`MYSQL_PWD="$STEWARD_SUPERUSER_PASSWORD" exec mariadb -S /steward/run/mysqld.sock -u "$STEWARD_SUPERUSER_USERNAME" -N -B`)
}

// mustSQL fails the test when a query fails.
func mustSQL(t *testing.T, run func(context.Context, string, string) (string, error), pod, sql string) string {
	t.Helper()
	out, err := run(t.Context(), pod, sql)
	if err != nil {
		t.Fatalf("%s: %q: %v: %s", pod, sql, err, out)
	}
	return out
}

// readBack writes a row through the read-write endpoint from the client,
// with the credentials Secret's connection details, and returns how many
// milliseconds it took until each of the hosts (the read-only endpoint, each
// replica) returned it. It runs psql or mariadb by the Secret's scheme.
const readBackScript = `set -e
note="$1"; shift
case "$uri" in
postgres*)
  rw() { psql "$uri" -qAt -v ON_ERROR_STOP=1 -c "$1"; }
  ro() { PGPASSWORD="$password" PGCONNECT_TIMEOUT=2 psql -h "$1" -p "$port" -U "$username" -d "$database" -qAtc "$2"; }
  rw "create table if not exists notes (id serial primary key, note text)"
  id=$(rw "insert into notes (note) values ('$note') returning id")
  ;;
*)
  export MYSQL_PWD="$password"
  rw() { mariadb -h "$host" -P "$port" -u "$username" -N -B "$database" -e "$1"; }
  ro() { mariadb -h "$1" -P "$port" -u "$username" --connect-timeout=2 -N -B "$database" -e "$2"; }
  rw "create table if not exists notes (id int auto_increment primary key, note text)"
  id=$(rw "insert into notes (note) values ('$note'); select last_insert_id()")
  ;;
esac
start=$(date +%s%N)
for h in "$@"; do
  while :; do
    got=$(ro "$h" "select note from notes where id = $id" 2>/dev/null || true)
    [ "$got" = "$note" ] && break
    if [ $(( ($(date +%s%N) - start) / 1000000 )) -gt 60000 ]; then echo "$h: row $id not read back after 60 s" >&2; exit 1; fi
    sleep 0.02
  done
  echo "$h $(( ($(date +%s%N) - start) / 1000000 ))"
done`

// checkReadBack writes a row through status.endpoint and reads it back
// through status.readEndpoint and from each replica by name, within 5 s.
func checkReadBack(t *testing.T, c *client, db string, replicas int) {
	t.Helper()
	endpoint := jsonpath(t, "database/"+db, "{.status.endpoint}")
	secretHost := c.must(t, `echo "$host:$port"`)
	if secretHost != endpoint {
		t.Errorf("the credentials Secret points at %s, status.endpoint is %s", secretHost, endpoint)
	}
	readHost, _, _ := strings.Cut(jsonpath(t, "database/"+db, "{.status.readEndpoint}"), ":")
	hosts := []string{readHost}
	for i := 1; i <= replicas; i++ {
		hosts = append(hosts, fmt.Sprintf("%s-%d.%s-headless.default.svc", db, i, db))
	}
	out := c.must(t, readBackScript, append([]string{"written through " + endpoint}, hosts...)...)
	for line := range strings.Lines(out) {
		host, ms, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(ms)
		if err != nil {
			t.Fatalf("read-back output %q", out)
		}
		t.Logf("a row written through %s was read from %s after %d ms", endpoint, host, n)
		if n > 5000 {
			t.Errorf("%s returned the row after %d ms, more than 5 s", host, n)
		}
	}
}

// TestPostgresReplicas runs a PostgreSQL Database of three instances:
// the replicas are clones of the primary that stream from it, a row written
// through status.endpoint with the credentials Secret is read back through
// status.readEndpoint, and the documented kubectl exec psql works. Then a
// parameter that reloads changes without restarting anything, and one that
// needs a restart rolls the pods one at a time, replicas first, while a
// client writing through the read-write endpoint measures its gap.
func TestPostgresReplicas(t *testing.T) {
	requireClusterBeside(t)
	applyDatabase(t, "pg", "postgres", "15", 3, "")
	pods := []string{"pg-0", "pg-1", "pg-2"}

	// Clones: one system identifier, two streaming replicas.
	ids := map[string]bool{}
	for _, pod := range pods {
		ids[mustSQL(t, postgresSuper, pod, "select system_identifier from pg_control_system()")] = true
	}
	if len(ids) != 1 {
		t.Errorf("the instances have %d system identifiers, want one: replicas are clones of the primary", len(ids))
	}
	eventually(t, 2*time.Minute, "two replicas streaming from pg-0", func() error {
		got := mustSQL(t, postgresSuper, "pg-0", "select count(*) from pg_stat_replication where state = 'streaming'")
		if got != "2" {
			return fmt.Errorf("%s streaming", got)
		}
		return nil
	})
	for _, pod := range pods[1:] {
		if got := mustSQL(t, postgresSuper, pod, "select pg_is_in_recovery(), status, sender_host from pg_stat_wal_receiver"); got != "t|streaming|pg-0.pg-headless.default.svc" {
			t.Errorf("%s: in recovery, WAL receiver, sender = %q", pod, got)
		}
	}

	app := startClient(t, "pg-app", postgresClient, "pg-credentials")
	checkReadBack(t, app, "pg", 2)

	// The docs' shell on the primary, and on a replica.
	for _, pod := range []string{"pg-0", "pg-1"} {
		args := documentedShell(t, "postgres", pod)
		out, err := devenv.Kubectl(t.Context(), cluster, []byte("select current_user, pg_is_in_recovery(), count(*) from notes;\n"), args...)
		want := fmt.Sprintf("app | %s | 1", map[bool]string{true: "f", false: "t"}[pod == "pg-0"])
		if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("kubectl %s: %v\n%s\nwant %q", strings.Join(args, " "), err, out, want)
		}
	}

	// kubectl steward psql: the same shell, on the primary and on a replica.
	for _, replica := range []bool{false, true} {
		args := []string{"--namespace=default", "psql", "pg"}
		if replica {
			args = append(args, "--replica")
		}
		out, err := kubectlSteward(t, "select current_user, pg_is_in_recovery(), count(*) from notes;\n", args...)
		want := fmt.Sprintf("app | %s | 1", map[bool]string{true: "t", false: "f"}[replica])
		if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("kubectl steward %s: %v\n%s\nwant %q", strings.Join(args, " "), err, out, want)
		}
	}
	// kubectl steward logs: every instance's lines, each prefixed with its pod.
	if out, err := kubectlSteward(t, "", "--namespace=default", "logs", "database/pg"); err != nil {
		t.Errorf("kubectl steward logs database/pg: %v\n%s", err, out)
	} else {
		for _, pod := range pods {
			if !strings.Contains(out, "["+pod) {
				t.Errorf("kubectl steward logs database/pg has no line of %s:\n%s", pod, tail(out, 20))
			}
		}
	}

	// A parameter that reloads: no pod restarts.
	before := podStates(t, "pg")
	started := map[string]string{}
	for _, pod := range pods {
		started[pod] = mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()")
	}
	kubectl(t, "patch", "database", "pg", "--type=merge", "-p", `{"spec":{"parameters":{"work_mem":"24MB"}}}`)
	eventually(t, 2*time.Minute, "work_mem reloaded on every instance", func() error {
		for _, pod := range pods {
			if got := mustSQL(t, postgresSuper, pod, "show work_mem"); got != "24MB" {
				return fmt.Errorf("%s: work_mem %s", pod, got)
			}
		}
		return nil
	})
	for _, pod := range pods {
		if got := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()"); got != started[pod] {
			t.Errorf("%s restarted for a reloadable parameter: started %s, now %s", pod, started[pod], got)
		}
	}
	if after := podStates(t, "pg"); after.key() != before.key() {
		t.Errorf("pods changed for a reloadable parameter: before %v, after %v", before, after)
	}
	kubectl(t, "wait", "--for=condition=Ready", "database/pg", "--timeout=120s")

	// A parameter that needs a restart, watched by a writer and by a
	// watcher of the pods.
	writer := startWriter(t, app)
	watcher := watchPods(t, "pg")
	began := time.Now()
	kubectl(t, "patch", "database", "pg", "--type=merge", "-p", `{"spec":{"parameters":{"work_mem":"24MB","max_connections":"150"}}}`)
	eventually(t, 8*time.Minute, "max_connections 150 on every instance", func() error {
		for _, pod := range pods {
			got, err := postgresSuper(t.Context(), pod, "show max_connections")
			if err != nil || got != "150" {
				return fmt.Errorf("%s: max_connections %q (%w)", pod, got, err)
			}
		}
		return nil
	})
	kubectl(t, "wait", "--for=condition=Ready", "database/pg", "--timeout=300s")
	rollout := time.Since(began)
	time.Sleep(2 * time.Second)
	order, worstDown, primaryRestart := watcher.stop(t)
	gap, writes, failed := writer.stop(t)
	primary := jsonpath(t, "database/pg", "{.status.primary}")
	t.Logf("rolling restart of 3 instances for max_connections: %v; restarted in order %v, pg-0 after a switchover to %s (%s); pg-0's restart (old pod stopping to new pod ready) %v; "+
		"a client writing through the read-write endpoint every 100 ms: %d writes, %d failed, longest gap between two successful writes %v",
		rollout.Round(time.Millisecond), order, primary, jsonpath(t, "database/pg", "{.status.lastRoleChange.reason}"),
		primaryRestart.Round(time.Millisecond), writes, failed, gap.Round(time.Millisecond))
	if primary == "pg-0" {
		t.Errorf("the primary pg-0 restarted in place: want a switchover to a replica first")
	}
	if strings.Join(order, ",") != "pg-2,pg-1,pg-0" {
		t.Errorf("instances restarted in order %v, want replicas first: pg-2, pg-1, pg-0", order)
	}
	if worstDown > 1 {
		t.Errorf("%d instances were down at once, want one at a time", worstDown)
	}
	// The read-write endpoint is gone only during the switchover, much
	// less than pg-0's restart: allow for the client's polling and the
	// proxy rules' update.
	if primaryRestart == 0 || gap > primaryRestart+10*time.Second {
		t.Errorf("the read-write endpoint was gone %v, pg-0's restart took %v", gap, primaryRestart)
	}
	// The replicas reconnect to the restarted primary on their own. When
	// one does not, its server's log says why.
	defer func() {
		if !t.Failed() {
			return
		}
		for _, pod := range pods[1:] {
			out, _ := devenv.Kubectl(context.WithoutCancel(t.Context()), cluster, nil, "logs", pod, "-c", "postgres", "--tail=40")
			t.Logf("%s's log:\n%s", pod, out)
		}
	}()
	eventually(t, 2*time.Minute, "both replicas streaming from the new primary", func() error {
		got, err := postgresSuper(t.Context(), primary, "select count(*) from pg_stat_replication where state = 'streaming'")
		if err != nil || got != "2" {
			return fmt.Errorf("%q streaming (%w)", got, err)
		}
		return nil
	})
}

// TestMariaDBReplicas runs a MariaDB Database of two instances with the
// same checks as TestPostgresReplicas' first part.
func TestMariaDBReplicas(t *testing.T) {
	requireClusterBeside(t)
	applyDatabase(t, "maria", "mariadb", "10.11", 2, "")
	eventually(t, 2*time.Minute, "maria-1 replicating from maria-0", func() error {
		out, err := execIn(t.Context(), "maria-1", "mariadb", "show replica status\\G", "sh", "-c",
			`MYSQL_PWD="$STEWARD_SUPERUSER_PASSWORD" exec mariadb -S /steward/run/mysqld.sock -u "$STEWARD_SUPERUSER_USERNAME"`)
		if err != nil {
			return err
		}
		for _, want := range []string{"Master_Host: maria-0.maria-headless.default.svc", "Slave_IO_Running: Yes", "Slave_SQL_Running: Yes"} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("no %q in\n%s", want, out)
			}
		}
		return nil
	})
	if got := mustSQL(t, mariadbSuper, "maria-1", "select @@read_only"); got != "1" {
		t.Errorf("the replica's read_only = %s, want 1", got)
	}
	app := startClient(t, "maria-app", mariadbClient, "maria-credentials")
	checkReadBack(t, app, "maria", 1)
	for _, pod := range []string{"maria-0", "maria-1"} {
		args := documentedShell(t, "mariadb", pod)
		// MariaDB 10.11 answers @@read_only as 0 in a query with an
		// aggregate: hence @@global and a subquery.
		out, err := devenv.Kubectl(t.Context(), cluster, []byte("select current_user(), @@global.read_only, (select count(*) from notes);\n"), args...)
		want := fmt.Sprintf("app@%%\t%d\t1", map[bool]int{true: 0, false: 1}[pod == "maria-0"])
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("kubectl %s: %v\n%q\nwant %q", strings.Join(args, " "), err, out, want)
		}
	}
}

// podSet is the pods of a Database: name to UID and restart count.
type podSet map[string]string

func (p podSet) key() string { return fmt.Sprint(map[string]string(p)) }

// podStates reads the UIDs and restart counts of a Database's pods.
func podStates(t *testing.T, db string) podSet {
	t.Helper()
	out := kubectl(t, "get", "pods", "-l", "steward.dev/database="+db,
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}/{.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	set := podSet{}
	for line := range strings.Lines(out) {
		name, state, _ := strings.Cut(strings.TrimSpace(line), " ")
		set[name] = state
	}
	return set
}

// podWatcher polls a Database's pods during a rolling restart.
type podWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	// order is the pods in the order their UIDs changed.
	order []string
	// worstDown is the most pods seen not ready (or being deleted, or
	// missing) at once.
	worstDown int
	// downSince is when each pod was first seen down; restarts is how long
	// each was down.
	downSince map[string]time.Time
	restarts  map[string]time.Duration
	err       error
}

// watchPods polls the pods of a Database every 250 ms until stop.
func watchPods(t *testing.T, db string) *podWatcher {
	t.Helper()
	first := podStates(t, db)
	uids := map[string]string{}
	for name, state := range first {
		uids[name], _, _ = strings.Cut(state, "/")
	}
	ctx, cancel := context.WithCancel(t.Context())
	w := &podWatcher{cancel: cancel, done: make(chan struct{}), downSince: map[string]time.Time{}, restarts: map[string]time.Duration{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			out, err := devenv.Kubectl(ctx, cluster, nil, "get", "pods", "-l", "steward.dev/database="+db, "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
			now := time.Now()
			if err != nil {
				if ctx.Err() == nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
				}
				return
			}
			seen := map[string]bool{}
			w.mu.Lock()
			for line := range strings.Lines(out) {
				f := strings.Fields(line)
				if len(f) < 2 {
					continue
				}
				name, uid := f[0], f[1]
				seen[name] = true
				up := len(f) == 3 && f[2] == "True" // no deletionTimestamp, Ready
				if uid != uids[name] {
					uids[name] = uid
					w.order = append(w.order, name)
				}
				if !up {
					if _, ok := w.downSince[name]; !ok {
						w.downSince[name] = now
					}
				} else if since, ok := w.downSince[name]; ok {
					w.restarts[name] += now.Sub(since)
					delete(w.downSince, name)
				}
			}
			for name := range uids {
				if !seen[name] {
					if _, ok := w.downSince[name]; !ok {
						w.downSince[name] = now
					}
				}
			}
			w.worstDown = max(w.worstDown, len(w.downSince))
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the watch and returns the order of the restarts, the most pods
// down at once, and how long the primary (ordinal 0) was down.
func (w *podWatcher) stop(t *testing.T) (order []string, worstDown int, primary time.Duration) {
	t.Helper()
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("watching the pods: %v", w.err)
	}
	for name, d := range w.restarts {
		if strings.HasSuffix(name, "-0") {
			primary = d
		}
	}
	return w.order, w.worstDown, primary
}

// writer writes through a Database's read-write endpoint every 100 ms from
// a client pod, with the credentials Secret, until stopped.
type writer struct {
	c    *client
	out  chan string
	errc chan error
}

// writerScript inserts a row every 100 ms and prints the time in
// milliseconds and whether the insert succeeded, until /tmp/stop exists.
const writerScript = `rm -f /tmp/stop
case "$uri" in
postgres*) psql "$uri" -qc "create table if not exists beats (at timestamptz default now())"
  write() { PGCONNECT_TIMEOUT=1 psql "$uri" -qc "insert into beats default values" >/dev/null 2>&1; } ;;
*) export MYSQL_PWD="$password"
  mariadb -h "$host" -P "$port" -u "$username" "$database" -e "create table if not exists beats (at timestamp default current_timestamp)"
  write() { mariadb -h "$host" -P "$port" -u "$username" --connect-timeout=1 "$database" -e "insert into beats () values ()" >/dev/null 2>&1; } ;;
esac
while [ ! -e /tmp/stop ]; do
  if write; then echo "$(date +%s%3N) ok"; else echo "$(date +%s%3N) failed"; fi
  sleep 0.1
done`

func startWriter(t *testing.T, c *client) *writer {
	t.Helper()
	w := &writer{c: c, out: make(chan string, 1), errc: make(chan error, 1)}
	go func() {
		out, err := c.run(context.WithoutCancel(t.Context()), writerScript)
		w.out <- out
		w.errc <- err
	}()
	return w
}

// stop stops the writer and returns the longest time between two
// successful writes, and the counts of writes and of failed ones.
func (w *writer) stop(t *testing.T) (gap time.Duration, writes, failed int) {
	t.Helper()
	w.c.must(t, "touch /tmp/stop")
	out, err := <-w.out, <-w.errc
	if err != nil {
		t.Fatalf("the writer: %v: %s", err, out)
	}
	var last int64
	for line := range strings.Lines(out) {
		ms, result, _ := strings.Cut(strings.TrimSpace(line), " ")
		at, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			continue // the create table's notices
		}
		writes++
		if result != "ok" {
			failed++
			continue
		}
		if last != 0 {
			gap = max(gap, time.Duration(at-last)*time.Millisecond)
		}
		last = at
	}
	if writes-failed < 10 {
		t.Fatalf("the writer wrote %d rows: it did not watch the restart:\n%s", writes-failed, out)
	}
	return gap, writes, failed
}

// TestParameterTheServerRefuses checks parameters that pass admission but
// that the servers refuse, PostgreSQL's and MariaDB's side by side.
func TestParameterTheServerRefuses(t *testing.T) {
	requireClusterBeside(t)
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		postgresRefuses(t)
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		mariadbRefusesAtReload(t)
	})
}

// postgresRefuses sets a restart-only parameter that PostgreSQL refuses
// at start: a preload library that does not exist. The rolling restart
// reaches the replica first, whose server exits with its own FATAL line:
// the Database turns Degraded with that line, the primary keeps running
// untouched with its configuration, and removing the parameter brings the
// replica back. Then a reloadable value both servers refuse at reload.
func postgresRefuses(t *testing.T) {
	applyDatabase(t, "refused", "postgres", "15", 2, "")
	started := mustSQL(t, postgresSuper, "refused-0", "select pg_postmaster_start_time()")

	kubectl(t, "patch", "database", "refused", "--type=merge", "-p", `{"spec":{"parameters":{"shared_preload_libraries":"steward_no_such_library"}}}`)
	var degraded string
	eventually(t, stuckPodTimeout+4*time.Minute, "Degraded with the server's error", func() error {
		degraded = jsonpath(t, "database/refused", `{.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].reason}: {.status.conditions[?(@.type=="Degraded")].message}`)
		if !strings.HasPrefix(degraded, "True CrashLooping: pod refused-1 container postgres") ||
			!strings.Contains(degraded, `could not access file "steward_no_such_library"`) {
			return fmt.Errorf("Degraded = %q", degraded)
		}
		return nil
	})
	t.Logf("Degraded: %s", degraded)
	// The primary was not restarted and still serves its configuration.
	if got := mustSQL(t, postgresSuper, "refused-0", "select pg_postmaster_start_time()"); got != started {
		t.Errorf("the primary restarted (started %s, now %s): the rollout should have stopped at the replica", started, got)
	}
	if got := mustSQL(t, postgresSuper, "refused-0", "show shared_preload_libraries"); got != "" {
		t.Errorf("the primary runs with shared_preload_libraries %q", got)
	}

	kubectl(t, "patch", "database", "refused", "--type=merge", "-p", `{"spec":{"parameters":null}}`)
	kubectl(t, "wait", "--for=condition=Ready", "database/refused", "--timeout=300s")
	if got := jsonpath(t, "database/refused", `{.status.conditions[?(@.type=="Degraded")].status}`); got != "False" {
		t.Errorf("Ready again, but Degraded=%s", got)
	}
	eventually(t, 2*time.Minute, "refused-1 streaming again", func() error {
		got, err := postgresSuper(t.Context(), "refused-1", "select status from pg_stat_wal_receiver")
		if err != nil || got != "streaming" {
			return fmt.Errorf("WAL receiver %q (%w)", got, err)
		}
		return nil
	})
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=refused,reason=ReplacedPod", "-o", "jsonpath={.items[*].message}")
	t.Logf("ReplacedPod events: %s", events)

	// A reloadable value the servers refuse at reload, which admission
	// passes (a string): both run on with the previous value, the other
	// change applied and no restart, and the Database says which and why.
	starts, zone := map[string]string{}, map[string]string{}
	for _, pod := range []string{"refused-0", "refused-1"} {
		starts[pod] = mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()")
		zone[pod] = mustSQL(t, postgresSuper, pod, "show TimeZone")
	}
	kubectl(t, "patch", "database", "refused", "--type=merge", "-p",
		`{"spec":{"parameters":{"work_mem":"12MB","TimeZone":"Mars/Olympus"}}}`)
	eventually(t, 2*time.Minute, "Degraded with the refusal", func() error {
		degraded = jsonpath(t, "database/refused", `{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].reason}: {.status.conditions[?(@.type=="Degraded")].message}`)
		if !strings.HasPrefix(degraded, "True True ParameterRefused: ") ||
			!strings.Contains(degraded, `timezone on refused-0, refused-1: invalid value for parameter "TimeZone": "Mars/Olympus"`) {
			return fmt.Errorf("Ready, Degraded = %q", degraded)
		}
		return nil
	})
	t.Logf("Ready, Degraded: %s", degraded)
	for pod, at := range starts {
		if got := mustSQL(t, postgresSuper, pod, "show work_mem"); got != "12MB" {
			t.Errorf("%s: work_mem %s beside the refused setting, want 12MB", pod, got)
		}
		if got := mustSQL(t, postgresSuper, pod, "show TimeZone"); got != zone[pod] {
			t.Errorf("%s: TimeZone %s, want the previous %s", pod, got, zone[pod])
		}
		if got := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()"); got != at {
			t.Errorf("%s restarted for a reload (started %s, now %s)", pod, at, got)
		}
	}
	if got := kubectl(t, "get", "events", "--field-selector=involvedObject.name=refused,reason=ParameterRefused,type=Warning", "-o", "jsonpath={.items[*].message}"); !strings.Contains(got, "TimeZone") {
		t.Errorf("no Warning event ParameterRefused naming the setting: %q", got)
	}
	kubectl(t, "patch", "database", "refused", "--type=merge", "-p", `{"spec":{"parameters":{"TimeZone":null}}}`)
	runningAgain(t, "refused")
}

// runningAgain waits until the Database is Running and no longer
// Degraded, once a refused value is removed.
func runningAgain(t *testing.T, name string) {
	t.Helper()
	eventually(t, 2*time.Minute, "Running once the value is removed", func() error {
		if got := jsonpath(t, "database/"+name, `{.status.phase} {.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].message}`); strings.TrimSpace(got) != "Running False" {
			return fmt.Errorf("phase, Degraded = %q", got)
		}
		return nil
	})
}

// mariadbRefusesAtReload sets a value MariaDB's SET GLOBAL refuses (an
// sql_mode that does not exist) beside one it takes: the server runs on,
// unrestarted, with the other value applied and its sql_mode as before,
// and the Database says which setting was refused, in MariaDB's words,
// until the value is removed.
func mariadbRefusesAtReload(t *testing.T) {
	const pod = "refusedm-0"
	applyDatabase(t, "refusedm", "mariadb", "10.11", 1, "")
	uptime := func() int {
		t.Helper()
		out := mustSQL(t, mariadbSuper, pod, "select variable_value from information_schema.global_status where variable_name = 'UPTIME'")
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("Uptime %q: %v", out, err)
		}
		return n
	}
	up, mode := uptime(), mustSQL(t, mariadbSuper, pod, "select @@global.sql_mode")
	kubectl(t, "patch", "database", "refusedm", "--type=merge", "-p",
		`{"spec":{"parameters":{"max_connections":"180","sql_mode":"NOT_A_MODE"}}}`)
	var degraded string
	eventually(t, 2*time.Minute, "Degraded with the refusal", func() error {
		degraded = jsonpath(t, "database/refusedm", `{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].reason}: {.status.conditions[?(@.type=="Degraded")].message}`)
		if !strings.HasPrefix(degraded, "True True ParameterRefused: ") ||
			!strings.Contains(degraded, "sql_mode on refusedm-0: ") || !strings.Contains(degraded, "NOT_A_MODE") {
			return fmt.Errorf("Ready, Degraded = %q", degraded)
		}
		return nil
	})
	t.Logf("Ready, Degraded: %s", degraded)
	if got := mustSQL(t, mariadbSuper, pod, "select @@global.max_connections"); got != "180" {
		t.Errorf("max_connections %s beside the refused setting, want 180", got)
	}
	if got := mustSQL(t, mariadbSuper, pod, "select @@global.sql_mode"); got != mode {
		t.Errorf("sql_mode %q, want the previous %q", got, mode)
	}
	if now := uptime(); now < up {
		t.Errorf("the server restarted for a reload: up %d s before, %d s now", up, now)
	}
	if got := kubectl(t, "get", "events", "--field-selector=involvedObject.name=refusedm,reason=ParameterRefused,type=Warning", "-o", "jsonpath={.items[*].message}"); !strings.Contains(got, "sql_mode") {
		t.Errorf("no Warning event ParameterRefused naming the setting: %q", got)
	}
	kubectl(t, "patch", "database", "refusedm", "--type=merge", "-p", `{"spec":{"parameters":{"sql_mode":null}}}`)
	runningAgain(t, "refusedm")
	if got := mustSQL(t, mariadbSuper, pod, "select @@global.max_connections"); got != "180" {
		t.Errorf("max_connections %s once the refused value is removed, want 180", got)
	}
}
