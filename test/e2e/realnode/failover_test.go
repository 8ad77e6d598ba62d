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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/devenv"
)

const (
	// failoverRoundsEnv overrides how many times each disruption is done.
	failoverRoundsEnv = "STEWARD_FAILOVER_ROUNDS"
	// failoverKindsEnv, a comma-separated list of disruptions (sigkill,
	// node-loss, ...), limits the run to those.
	failoverKindsEnv = "STEWARD_FAILOVER_KINDS"
	// failoverReportEnv names a directory the tables of write gaps are
	// written to, failover-<engine>.txt (make bench-failover).
	failoverReportEnv = "STEWARD_FAILOVER_REPORT"
	// switchoverAnnotation asks the operator for a planned switchover to
	// a pod, or to the best replica with "any"; the operator removes it.
	switchoverAnnotation = "steward.dev/switchover-to"
	// pgdata is the data directory in the postgres container.
	pgdata = "/var/lib/postgresql/data/pgdata"
)

// haCase is one engine's failover scenario: its Database and how the test
// asks its instances.
type haCase struct {
	// db is the Database's name, instances its number of instances,
	// extra the rest of its spec.
	db, engine, version string
	instances           int
	extra               string
	client              clientImage
	// container is the instance's container, super runs SQL in it as the
	// superuser.
	container string
	super     func(ctx context.Context, pod, sql string) (string, error)
	// spanSQL asks twice, 200 ms apart, whether the instance takes writes
	// and the time: lines "<writable> <sep> <unix ms>", writable being
	// writableAnswer when it does. It shows that an instance was a
	// primary over an interval: a PostgreSQL server out of recovery never
	// goes back into it without a restart, which would end the session,
	// and a MariaDB server turns read-only only as it stops or is
	// demoted, not back and forth within 200 ms. The times are the
	// server's clock: every node runs on this machine.
	spanSQL, spanSep, writableAnswer string
	// replicaSQL answers replicaAnswer on a replica.
	replicaSQL, replicaAnswer string
	// killServer is the shell command that sends SIGKILL to the server.
	killServer string
	// restartParameter needs a restart; restartSQL reads it back as
	// restartValue.
	restartParameter, restartSQL, restartValue string
	// createProbe makes the probe's table from the client; probeIDs reads
	// its ids as the superuser, in database.
	createProbe string
	probeIDs    func(database string) string
}

// ha is the scenario of the running failover test.
var ha *haCase

var (
	postgresHA = haCase{
		db: "pgha", engine: "postgres", version: "15", instances: 3,
		extra:  "  highAvailability:\n    synchronousReplicas: 1\n",
		client: postgresClient, container: "postgres", super: postgresSuper,
		spanSQL: `select pg_is_in_recovery(), (extract(epoch from clock_timestamp()) * 1000)::bigint;
select pg_sleep(0.2);
select pg_is_in_recovery(), (extract(epoch from clock_timestamp()) * 1000)::bigint;`,
		spanSep: "|", writableAnswer: "f",
		replicaSQL: "select pg_is_in_recovery()", replicaAnswer: "t",
		killServer:       "kill -9 $(head -1 " + pgdata + "/postmaster.pid)",
		restartParameter: "max_connections", restartSQL: "show max_connections", restartValue: "150",
		createProbe: `psql "$uri" -X -q -v ON_ERROR_STOP=1 -c "create table if not exists probe (id int primary key, at timestamptz not null)"`,
		probeIDs:    func(db string) string { return `\connect ` + db + "\nselect id from probe" },
	}
	mariadbHA = haCase{
		db: "mariaha", engine: "mariadb", version: "10.11", instances: 3,
		extra:  "  highAvailability:\n    synchronousReplicas: 1\n",
		client: mariadbClient, container: "mariadb", super: mariadbSuper,
		// @@global: MariaDB 10.11 answers a session's view otherwise.
		spanSQL: `select @@global.read_only, cast(unix_timestamp(now(3)) * 1000 as unsigned);
select sleep(0.2);
select @@global.read_only, cast(unix_timestamp(now(3)) * 1000 as unsigned);`,
		spanSep: "\t", writableAnswer: "0",
		replicaSQL: "select @@global.read_only", replicaAnswer: "1",
		killServer:       "kill -9 $(cat /steward/run/mysqld.pid)",
		restartParameter: "innodb_log_file_size", restartSQL: "select @@innodb_log_file_size", restartValue: "67108864",
		createProbe: `MYSQL_PWD="$password" mariadb -h "$host" -P "$port" -u "$username" "$database" -e "create table if not exists probe (id int primary key, at datetime(3) not null)"`,
		probeIDs:    func(db string) string { return "select id from " + db + ".probe" },
	}
)

// The disruptions, as the report names them.
const (
	kindDelete     = "pod-delete"
	kindKill       = "sigkill"
	kindSwitchover = "switchover"
	kindRestart    = "restart"
)

// gapTargets are the longest write gaps aimed at, in milliseconds: a
// planned switchover and a failover. The report (make bench-failover)
// compares each disruption's longest gap with them; the test asserts no
// timing, only that every gap was measured: timings on a shared machine
// belong in the benchmark. A restart has no target.
var gapTargets = map[string]int64{kindSwitchover: 5000, kindDelete: 15000, kindKill: 15000,
	kindNodeLoss: 15000, kindNetworkCut: 15000}

// TestPostgresFailover runs a PostgreSQL Database of three instances with
// one synchronous replica while a probe writes through the read-write
// Service every 100 ms, and disrupts its primary again and again: the pod
// deleted, the server killed with SIGKILL, a planned switchover, and once a
// parameter that needs a restart. After each, another instance is primary,
// the old one is back as a replica and the Database is Ready. Two instances
// are never primaries at once, the writes stop for no longer than the
// targets, and no acknowledged write is lost.
func TestPostgresFailover(t *testing.T) {
	runFailover(t, &postgresHA)
}

// TestMariaDBFailover is TestPostgresFailover for MariaDB: three
// instances, one semi-synchronous replica.
func TestMariaDBFailover(t *testing.T) {
	runFailover(t, &mariadbHA)
}

// runFailover runs the failover scenario of one engine.
func runFailover(t *testing.T, hc *haCase) {
	requireCluster(t)
	ha = hc
	n := failoverRounds(t)
	applyDatabase(t, ha.db, ha.engine, ha.version, ha.instances, ha.extra)
	place := placeForNodeLoss(t)
	c := startClientOn(t, ha.db+"-client", ha.client, ha.db+"-credentials", place.other.Name)
	watch := watchPrimaries(t)
	t.Cleanup(func() { dumpFailoverDiagnostics(t, c) })
	probe := startProbe(t, c)

	var rounds []round
	for _, d := range append(failoverDisruptions(n), nodeDisruptions(place, probe, watch)...) {
		if kinds := os.Getenv(failoverKindsEnv); kinds != "" && !slices.Contains(strings.Split(kinds, ","), d.kind) {
			continue
		}
		for i := range d.rounds {
			rounds = append(rounds, runRound(t, probe, d, i+1))
		}
	}
	lines := probe.stop(t)
	kubectl(t, "wait", "--for=condition=Ready", "database/"+ha.db, "--timeout=180s")

	for i := range rounds {
		r := &rounds[i]
		r.gap, r.gapOK = writeGap(lines, r.from, r.to)
	}
	report := failoverReport(rounds)
	t.Logf("write gaps, as the probe saw them and as the operator measured them:\n%s", report)
	if dir := os.Getenv(failoverReportEnv); dir != "" {
		path := filepath.Join(dir, "failover-"+ha.engine+".txt")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("making %s (%s): %v", dir, failoverReportEnv, err)
		} else if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("writing the failover report to %s (%s): %v", path, failoverReportEnv, err)
		}
	}
	checkGapsMeasured(t, rounds)
	checkNoLostWrites(t, c, lines)
	watch.check(t)
	checkNoRebuilds(t)
}

// checkNoRebuilds fails the test when a replica was rebuilt because it
// could not follow its primary. In these disruptions none can hold what
// the new primary lacks: the replica promoted is the most advanced one,
// and the disrupted node holds the primary alone. A rebuild here would be
// a replica rebuilt that did not need it.
func checkNoRebuilds(t *testing.T) {
	t.Helper()
	out := kubectl(t, "get", "events", "--field-selector",
		"involvedObject.kind=Database,involvedObject.name="+ha.db+",reason="+v1alpha1.EventReplicaRebuilt,
		"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
	if out = strings.TrimSpace(out); out != "" {
		t.Errorf("replicas were rebuilt during the disruptions:\n%s", out)
	}
}

// failoverRounds is how many times each disruption is done: 2 in make
// test, or STEWARD_FAILOVER_ROUNDS (make bench-failover: 5).
func failoverRounds(t *testing.T) int {
	t.Helper()
	v := os.Getenv(failoverRoundsEnv)
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of rounds, at least 1", failoverRoundsEnv, v)
	}
	return n
}

// failoverPods are the Database's instance pods.
func failoverPods() []string {
	pods := make([]string, ha.instances)
	for i := range pods {
		pods[i] = fmt.Sprintf("%s-%d", ha.db, i)
	}
	return pods
}

// haDatabase is what the test reads of a Database with high availability.
// It is decoded here rather than into the API's types so that the test
// states the contract it checks: status.primary, status.instances and
// status.lastRoleChange.
type haDatabase struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Primary        string             `json:"primary"`
		Term           int64              `json:"term"`
		Instances      []haInstance       `json:"instances"`
		LastRoleChange *roleChange        `json:"lastRoleChange"`
		Conditions     []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// haInstance is one entry of status.instances.
type haInstance struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Ready    bool   `json:"ready"`
	LagBytes int64  `json:"lagBytes"`
	Message  string `json:"message"`
}

// roleChange is status.lastRoleChange: the last failover or switchover.
type roleChange struct {
	Type                 string `json:"type"`
	Term                 int64  `json:"term"`
	From                 string `json:"from"`
	To                   string `json:"to"`
	Reason               string `json:"reason"`
	Time                 string `json:"time"`
	WriteGapMilliseconds int64  `json:"writeGapMilliseconds"`
}

// getHA reads the Database.
func getHA(t *testing.T) haDatabase {
	t.Helper()
	var db haDatabase
	getJSON(t, &db, "database", ha.db)
	return db
}

// disruption is one kind of disruption of the primary.
type disruption struct {
	kind    string
	rounds  int
	timeout time.Duration
	// prepare, if not nil, readies the Database for the disruption.
	prepare func(t *testing.T)
	// do disrupts the primary old.
	do func(t *testing.T, old string)
	// settled says what else is not yet as the disruption leaves it,
	// beyond a new primary and a Ready Database, or nil; it may be nil.
	settled func(t *testing.T, db haDatabase) error
	// refused, if not nil, says why the operator turned the disruption
	// down for good since from (Unix ms), or nil: the round then fails at
	// once instead of waiting out its timeout.
	refused func(t *testing.T, db haDatabase, from int64) error
}

// failoverDisruptions are the disruptions, each done n times but the
// restart, done once.
func failoverDisruptions(n int) []disruption {
	return []disruption{
		{kind: kindDelete, rounds: n, timeout: 3 * time.Minute, do: func(t *testing.T, old string) {
			kubectl(t, "delete", "pod", old, "--wait=false")
		}},
		{kind: kindKill, rounds: n, timeout: 3 * time.Minute, do: killServer},
		{kind: kindSwitchover, rounds: n, timeout: 3 * time.Minute, do: func(t *testing.T, _ string) {
			kubectl(t, "annotate", "database/"+ha.db, switchoverAnnotation+"=any", "--overwrite")
		}, settled: func(_ *testing.T, db haDatabase) error {
			if v, ok := db.Metadata.Annotations[switchoverAnnotation]; ok {
				return fmt.Errorf("the annotation %s=%s is still there", switchoverAnnotation, v)
			}
			return nil
		}, refused: switchoverRefused},
		{kind: kindRestart, rounds: 1, timeout: 8 * time.Minute, do: func(t *testing.T, _ string) {
			kubectl(t, "patch", "database", ha.db, "--type=merge", "-p",
				fmt.Sprintf(`{"spec":{"parameters":{%q:%q}}}`, ha.restartParameter, ha.restartValue))
		}, settled: restartParameterEverywhere},
	}
}

// switchoverRefused returns the operator's refusal of a switchover asked
// since from (Unix ms): a SwitchoverRefused event of the Database seen at
// or after that second, once the operator has taken the annotation away.
func switchoverRefused(t *testing.T, db haDatabase, from int64) error {
	if _, asked := db.Metadata.Annotations[switchoverAnnotation]; asked {
		return nil
	}
	out, err := devenv.Kubectl(t.Context(), cluster, nil, "get", "events",
		"--field-selector", "involvedObject.kind=Database,involvedObject.name="+ha.db+",reason=SwitchoverRefused",
		"-o", `jsonpath={range .items[*]}{.eventTime} {.series.lastObservedTime} {.lastTimestamp}|{.message}{"\n"}{end}`)
	if err != nil {
		return nil // the round's own wait decides
	}
	since := time.UnixMilli(from).Truncate(time.Second)
	for line := range strings.Lines(out) {
		times, message, _ := strings.Cut(strings.TrimSpace(line), "|")
		for _, f := range strings.Fields(times) {
			if at, err := time.Parse(time.RFC3339Nano, f); err == nil && !at.Before(since) {
				return fmt.Errorf("the operator refused the switchover at %s: %s", at.Format(time.RFC3339), message)
			}
		}
	}
	return nil
}

// killServer sends SIGKILL to the PostgreSQL server of a pod, found by its
// postmaster.pid. The exec may fail when the container ends with its
// server: that is logged, and the round's wait tells whether it worked.
func killServer(t *testing.T, pod string) {
	t.Helper()
	out, err := devenv.Kubectl(t.Context(), cluster, nil, "exec", pod, "-c", ha.container, "--",
		"sh", "-c", ha.killServer)
	if err != nil {
		t.Logf("sending SIGKILL to the server of %s: %v: %s", pod, err, out)
	}
}

// restartParameterEverywhere says which instance does not yet run with
// the changed parameter.
func restartParameterEverywhere(t *testing.T, _ haDatabase) error {
	for _, pod := range failoverPods() {
		got, err := superWithin(t.Context(), pod, ha.restartSQL)
		if err != nil || got != ha.restartValue {
			return fmt.Errorf("%s: %s %q (%w), want %s", pod, ha.restartParameter, got, err, ha.restartValue)
		}
	}
	return nil
}

// superWithin runs SQL as the superuser in an instance, giving up after
// 15 s: a pod that is restarting may not answer.
func superWithin(ctx context.Context, pod, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return ha.super(ctx, pod, sql)
}

// round is one disruption done and what came of it.
type round struct {
	kind     string
	n        int
	old, new string
	// from is when the disruption was started and to when the Database
	// was seen recovered, in Unix milliseconds of the test's clock.
	from, to int64
	// change is status.lastRoleChange once recovered, when it describes
	// this round.
	change *roleChange
	// gap is the probe's write gap in milliseconds (see writeGap); gapOK
	// is false when the probe's writes do not enclose [from, to].
	gap   int64
	gapOK bool
}

// runRound disrupts the current primary, waits until another instance is
// primary, every instance ready, the Database Ready and the old primary a
// replica again, then until writes flow again.
func runRound(t *testing.T, p *writeProbe, d disruption, n int) round {
	t.Helper()
	if d.prepare != nil {
		d.prepare(t)
	}
	before := getHA(t).Status
	old := before.Primary
	if old == "" {
		t.Fatalf("%s round %d: status.primary is empty before the disruption", d.kind, n)
	}
	r := round{kind: d.kind, n: n, old: old, from: time.Now().UnixMilli()}
	d.do(t, old)
	var db haDatabase
	eventually(t, d.timeout, fmt.Sprintf("%s round %d: a new primary in place of %s, the Database Ready", d.kind, n, old), func() error {
		db = getHA(t)
		if d.refused != nil && db.Status.Primary == old {
			if err := d.refused(t, db, r.from); err != nil {
				t.Fatalf("%s round %d: %v", d.kind, n, err)
			}
		}
		if err := failedOver(t, db, old, before.Term); err != nil {
			return err
		}
		if d.settled != nil {
			return d.settled(t, db)
		}
		return nil
	})
	r.to, r.new = time.Now().UnixMilli(), db.Status.Primary
	c := db.Status.LastRoleChange
	switch {
	case c != nil && c.From == old && c.To == r.new:
		r.change = c
	case c != nil && c.To == r.new && c.From != "" && c.From != r.new && c.Type == string(v1alpha1.RoleChangeFailover):
		// A cascade: an instance took over from old, then lost its own
		// lease before the round settled (on a loaded machine, after a
		// network cut that left a replica unable to stream), and r.new
		// took over from it. The last change names that instance.
		r.change = c
		t.Logf("%s round %d: %s took over from %s, which had taken over from %s: %s", d.kind, n, r.new, c.From, old, c.Reason)
	default:
		t.Errorf("%s round %d: %s took over from %s, but status.lastRoleChange is %+v", d.kind, n, r.new, old, c)
	}
	t.Logf("%s round %d: %s took over from %s; recovered %v after the disruption", d.kind, n, r.new, old,
		time.Duration(r.to-r.from)*time.Millisecond)
	p.waitFlowing(t, fmt.Sprintf("%s round %d", d.kind, n))
	return r
}

// failedOver says why the Database has not yet recovered from a
// disruption of the primary old: a new primary named by status.primary
// and status.instances, every instance ready, Ready, and old a replica.
//
// The primary may be old again after a cascade (on an overloaded machine
// an instance took over from old, lost its own lease, and old took over
// from it): at least two role changes since term, the last one a failover
// to old.
func failedOver(t *testing.T, db haDatabase, old string, term int64) error {
	s := db.Status
	c := s.LastRoleChange
	back := s.Primary == old && s.Term > term+1 && c != nil && c.Term == s.Term && c.To == old && c.From != old &&
		c.Type == string(v1alpha1.RoleChangeFailover)
	if s.Primary == "" || (s.Primary == old && !back) {
		return fmt.Errorf("status.primary is %q", s.Primary)
	}
	if !meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionReady) {
		return fmt.Errorf("not Ready: %+v", s.Conditions)
	}
	var primaries []string
	ready := 0
	for _, in := range s.Instances {
		if in.Role == "primary" {
			primaries = append(primaries, in.Name)
		}
		if in.Ready {
			ready++
		}
	}
	if ready != ha.instances || len(s.Instances) != ha.instances || !slices.Equal(primaries, []string{s.Primary}) {
		return fmt.Errorf("status.primary %s, status.instances %+v: want %d ready, %s the only primary",
			s.Primary, s.Instances, ha.instances, s.Primary)
	}
	if back {
		return nil
	}
	got, err := superWithin(t.Context(), old, ha.replicaSQL)
	if err != nil || got != ha.replicaAnswer {
		return fmt.Errorf("the old primary %s: %s = %q (%w), want %s", old, ha.replicaSQL, got, err, ha.replicaAnswer)
	}
	return nil
}

// probeScript inserts a row through the read-write Service every 100 ms
// with the credentials Secret's details (psql or mariadb by the uri's
// scheme), giving up a connection attempt after
// 1 s and an attempt after 10 s, and prints one line per attempt:
// "ok <id> <unix-ms>" when the insert was acknowledged, "err <id>
// <unix-ms>" otherwise, the time taken when the attempt ended; a failed
// attempt's message goes to /tmp/probe.errors. It stops
// when /tmp/probe.stop exists and then creates /tmp/probe.done.
const probeScript = `case "$uri" in
postgres*)
  case "$uri" in
  *\?*) dsn="$uri&connect_timeout=1" ;;
  *) dsn="$uri?connect_timeout=1" ;;
  esac
  write() { timeout 10 psql "$dsn" -X -q -v ON_ERROR_STOP=1 -c "$1"; } ;;
*)
  export MYSQL_PWD="$password"
  write() { timeout 10 mariadb -h "$host" -P "$port" -u "$username" --connect-timeout=1 "$database" -e "$1"; } ;;
esac
n=0
while [ ! -e /tmp/probe.stop ]; do
  n=$((n + 1))
  if out=$(write "insert into probe (id, at) values ($n, now())" 2>&1)
  then echo "ok $n $(date +%s%3N)"
  else echo "err $n $(date +%s%3N)"; echo "$n $out" | tr '\n' ' ' | head -c 300 >>/tmp/probe.errors; echo >>/tmp/probe.errors
  fi
  sleep 0.1
done
touch /tmp/probe.done`

// writeProbe is probeScript running in a client pod, detached from the
// kubectl exec that started it: it writes its lines to /tmp/probe.log in
// the pod, which the test reads with short execs, so that no long exec
// stream has to survive the disruptions.
type writeProbe struct {
	c *client
}

// startProbe creates the probe's table and starts the probe in the client,
// and waits until its writes flow.
func startProbe(t *testing.T, c *client) *writeProbe {
	t.Helper()
	c.must(t, ha.createProbe)
	c.must(t, `rm -f /tmp/probe.stop /tmp/probe.done /tmp/probe.log /tmp/probe.errors
nohup bash -c "$1" </dev/null >/tmp/probe.log 2>/tmp/probe.err &`, probeScript)
	p := &writeProbe{c: c}
	p.waitFlowing(t, "the probe's start")
	return p
}

// read returns the probe's lines so far.
func (p *writeProbe) read(t *testing.T) []probeLine {
	t.Helper()
	return parseProbe(p.c.must(t, "cat /tmp/probe.log"))
}

// waitFlowing waits until the probe has written at least 5 consecutive
// acknowledged rows after the call.
func (p *writeProbe) waitFlowing(t *testing.T, after string) {
	t.Helper()
	since := len(p.read(t))
	eventually(t, 2*time.Minute, "5 consecutive acknowledged writes after "+after, func() error {
		lines := p.read(t)
		run := 0
		for _, l := range lines[min(since, len(lines)):] {
			run++
			if !l.ok {
				run = 0
			}
			if run == 5 {
				return nil
			}
		}
		return fmt.Errorf("%d new lines, the last %d acknowledged", len(lines)-since, run)
	})
}

// stop stops the probe, waits until it has finished, and returns its lines.
func (p *writeProbe) stop(t *testing.T) []probeLine {
	t.Helper()
	p.c.must(t, "touch /tmp/probe.stop")
	eventually(t, time.Minute, "the probe to stop", func() error {
		_, err := p.c.run(t.Context(), "test -e /tmp/probe.done")
		return err
	})
	if errs := p.c.must(t, "cat /tmp/probe.err"); errs != "" {
		t.Errorf("the probe's script wrote to its standard error:\n%s", errs)
	}
	return p.read(t)
}

// probeLine is one attempt of the probe: whether the write of row id was
// acknowledged, and when the attempt ended, in Unix milliseconds.
type probeLine struct {
	ok bool
	id int
	at int64
}

// parseProbe reads the probe's lines, skipping any other output.
func parseProbe(out string) []probeLine {
	var lines []probeLine
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 || (f[0] != "ok" && f[0] != "err") {
			continue
		}
		id, err1 := strconv.Atoi(f[1])
		at, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		lines = append(lines, probeLine{ok: f[0] == "ok", id: id, at: at})
	}
	return lines
}

// writeGap returns the longest interval, in milliseconds, between two
// consecutive acknowledged writes that overlaps the disruption [from, to]:
// the earlier write at or before to, the later one after from. With
// from == to that is the interval from the last acknowledged write at or
// before the disruption to the first one after it. ok is false when no
// acknowledged write came at or before from, or none after to: the
// disruption is not enclosed by the probe's writes.
func writeGap(lines []probeLine, from, to int64) (gap int64, ok bool) {
	var last int64
	seen, began, ended := false, false, false
	for _, l := range lines {
		if !l.ok {
			continue
		}
		if seen && last <= to && l.at > from {
			gap = max(gap, l.at-last)
		}
		last, seen = l.at, true
		began = began || l.at <= from
		ended = ended || l.at > to
	}
	return gap, began && ended
}

// primaryWatch asks every instance, each on its own every 500 ms, whether
// it is a primary, and records each time two were primaries at the same
// moment: any two spans of different instances that overlap, however far
// apart they were asked. An instance that does not answer (its node is
// down or cut off) holds up no other.
type primaryWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// asked counts the questions, answered those an instance answered
	// that it is a primary.
	asked, answered int
	overlaps        []string
	// spans are every span seen, by pod.
	spans map[string][]primarySpan
	// checked is set by check.
	checked bool
}

// primarySpan is an interval, in Unix milliseconds, over which a pod was
// shown to be a primary.
type primarySpan struct {
	pod      string
	from, to int64
}

// watchPrimaries starts the watch. The test's cleanup ends it and, when
// the test ended before check, still reports two primaries seen at once.
func watchPrimaries(t *testing.T) *primaryWatch {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	w := &primaryWatch{cancel: cancel, spans: map[string][]primarySpan{}}
	t.Cleanup(func() {
		w.stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, o := range w.overlaps {
			if !w.checked {
				t.Errorf("two writable primaries at once: %s", o)
			}
		}
	})
	for _, pod := range failoverPods() {
		w.wg.Go(func() {
			for ctx.Err() == nil {
				span := askPrimary(ctx, pod)
				if ctx.Err() == nil {
					w.record(span)
				}
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		})
	}
	return w
}

// record counts one answer, nil when the instance was not shown to be a
// primary, and records an overlap of its span with any other instance's.
func (w *primaryWatch) record(s *primarySpan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked++
	if s == nil {
		return
	}
	w.answered++
	for pod, spans := range w.spans {
		if pod == s.pod {
			continue
		}
		for _, o := range spans {
			if max(o.from, s.from) <= min(o.to, s.to) {
				w.overlaps = append(w.overlaps, fmt.Sprintf("%s was a primary from %s to %s, %s from %s to %s",
					o.pod, clock(o.from), clock(o.to), s.pod, clock(s.from), clock(s.to)))
			}
		}
	}
	w.spans[s.pod] = append(w.spans[s.pod], *s)
}

// firstWritable returns the start of the first span over which pod was
// seen a primary that started at or after the Unix millisecond after.
func (w *primaryWatch) firstWritable(pod string, after int64) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first int64
	found := false
	for _, s := range w.spans[pod] {
		if s.from >= after && (!found || s.from < first) {
			first, found = s.from, true
		}
	}
	return first, found
}

// askPrimary returns the span over which pod was shown to be a primary, or
// nil when it was not one or did not answer.
func askPrimary(ctx context.Context, pod string) *primarySpan {
	out, err := superWithin(ctx, pod, ha.spanSQL)
	if err != nil {
		return nil
	}
	return parseSpan(pod, out)
}

// parseSpan reads the answer to spanSQL: the span over which pod was shown
// to be a primary, or nil.
func parseSpan(pod, out string) *primarySpan {
	var span *primarySpan
	for line := range strings.Lines(out) {
		writable, ms, found := strings.Cut(strings.TrimSpace(line), ha.spanSep)
		at, err := strconv.ParseInt(ms, 10, 64)
		switch {
		case !found || err != nil:
		case writable != ha.writableAnswer:
			span = nil
		case span == nil:
			span = &primarySpan{pod: pod, from: at, to: at}
		default:
			span.to = at
		}
	}
	return span
}

// clock formats Unix milliseconds as a UTC time of day.
func clock(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}

// stop ends the watch and waits for its last question.
func (w *primaryWatch) stop() {
	w.cancel()
	w.wg.Wait()
}

// check ends the watch and fails the test if two instances were ever
// primaries at once, or if no instance ever answered.
func (w *primaryWatch) check(t *testing.T) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = true
	t.Logf("asked the instances whether they are primaries %d times: %d times one answered it is", w.asked, w.answered)
	if w.answered == 0 {
		t.Errorf("no instance ever answered that it is a primary: the watch for two primaries saw nothing")
	}
	for _, o := range w.overlaps {
		t.Errorf("two writable primaries at once: %s", o)
	}
}

// checkNoLostWrites reads the probe's table through the primary and fails
// the test for each acknowledged write missing from it.
func checkNoLostWrites(t *testing.T, c *client, lines []probeLine) {
	t.Helper()
	primary := getHA(t).Status.Primary
	database := c.must(t, `printf %s "$database"`)
	rows := map[int]bool{}
	for _, f := range strings.Fields(mustSQL(t, ha.super, primary, ha.probeIDs(database))) {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("reading the probe's rows from %s: %q is not an id", primary, f)
		}
		rows[id] = true
	}
	acked, failed := 0, 0
	var lost []int
	for _, l := range lines {
		if !l.ok {
			failed++
			continue
		}
		acked++
		if !rows[l.id] {
			lost = append(lost, l.id)
		}
	}
	t.Logf("the probe: %d writes acknowledged, %d failed; the primary %s holds %d rows", acked, failed, primary, len(rows))
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes are missing from the primary %s, with synchronous replication: ids %v",
			len(lost), primary, lost[:min(len(lost), 20)])
	}
}

// failoverReport is a table of the rounds, the write gap the probe saw and
// the one the operator measured beside it, then per kind of disruption
// the median (p50) and the longest of each.
func failoverReport(rounds []round) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "event\tround\tat (UTC)\told primary\tnew primary\tprobe gap ms\toperator gap ms\toperator type")
	probe, operator := map[string][]int64{}, map[string][]int64{}
	var kinds []string
	for _, r := range rounds {
		if !slices.Contains(kinds, r.kind) {
			kinds = append(kinds, r.kind)
		}
		gap, opGap, opType := "-", "-", "-"
		if r.gapOK {
			gap = strconv.FormatInt(r.gap, 10)
			probe[r.kind] = append(probe[r.kind], r.gap)
		}
		if r.change != nil {
			opGap, opType = strconv.FormatInt(r.change.WriteGapMilliseconds, 10), r.change.Type
			operator[r.kind] = append(operator[r.kind], r.change.WriteGapMilliseconds)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.kind, r.n, clock(r.from), r.old, r.new, gap, opGap, opType)
	}
	_ = w.Flush()
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "event\tgaps\tprobe p50 ms\tprobe max ms\toperator p50 ms\toperator max ms\ttarget ms\tmax within target")
	for _, k := range kinds {
		target, verdict := "-", "-"
		if ms, ok := gapTargets[k]; ok {
			target, verdict = strconv.FormatInt(ms, 10), "yes"
			if len(probe[k]) == 0 || slices.Max(probe[k]) > ms {
				verdict = "NO"
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", k, len(probe[k]),
			percentile(probe[k], 50), percentile(probe[k], 100), percentile(operator[k], 50), percentile(operator[k], 100), target, verdict)
	}
	_ = w.Flush()
	return b.String()
}

// percentile is the p-th percentile of values by the nearest rank, or "-"
// without values.
func percentile(values []int64, p int) string {
	if len(values) == 0 {
		return "-"
	}
	sorted := slices.Sorted(slices.Values(values))
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return strconv.FormatInt(sorted[max(rank, 1)-1], 10)
}

// checkGapsMeasured fails the test for a disruption whose write gap could
// not be measured: the probe's writes do not enclose it.
func checkGapsMeasured(t *testing.T, rounds []round) {
	t.Helper()
	for _, r := range rounds {
		if !r.gapOK {
			t.Errorf("%s round %d: the probe has no acknowledged write before or after the disruption", r.kind, r.n)
		}
	}
}

// dumpFailoverDiagnostics logs, when the test failed, the Database and its
// events, each instance manager's account, the end of each instance's
// server log, the namespace's recent events and the end of the probe's
// output.
func dumpFailoverDiagnostics(t *testing.T, c *client) {
	if !t.Failed() {
		return
	}
	// hack/failed-tests.awk repeats the lines before this one, where the
	// failure is, at the end of make test's output.
	t.Log("the diagnostics of this failure follow")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*time.Minute)
	defer cancel()
	show := func(what string, args ...string) {
		out, err := devenv.Kubectl(ctx, cluster, nil, args...)
		if err != nil {
			out += err.Error()
		}
		t.Logf("%s:\n%s", what, out)
	}
	// First what keeps pods from being Ready: the start of a long report
	// is what survives a shortened copy of it.
	t.Logf("the pods that are not Ready:\n%s", unreadyPods(ctx, "default"))
	show("the Database", "get", "database", ha.db, "-o", "yaml")
	show("the pods and their roles", "get", "pods", "-o", "wide", "-L", "steward.dev/role")
	show("the endpoints", "get", "endpointslices", "-o", "wide")
	show("the Database's events", "get", "events", "--field-selector", "involvedObject.kind=Database,involvedObject.name="+ha.db,
		"--sort-by=.lastTimestamp")
	for _, pod := range failoverPods() {
		show(pod+"'s server log", "logs", pod, "-c", ha.container, "--tail=40")
		// The instance manager's own lines (JSON), from the container's
		// start: what it was told and what it did, which the server's
		// messages at the end of the log do not show.
		out, err := devenv.Kubectl(ctx, cluster, nil, "logs", pod, "-c", ha.container)
		if err != nil {
			out += err.Error()
		}
		var agent []string
		for line := range strings.SplitSeq(out, "\n") {
			if strings.HasPrefix(line, `{"time"`) {
				agent = append(agent, line)
			}
		}
		t.Logf("%s's instance manager, last 80 of %d lines:\n%s", pod, len(agent), strings.Join(agent[max(0, len(agent)-80):], "\n"))
	}
	out, err := devenv.Kubectl(ctx, cluster, nil, "get", "events", "--sort-by=.lastTimestamp")
	if err != nil {
		out += err.Error()
	}
	events := strings.Split(strings.TrimSpace(out), "\n")
	t.Logf("recent events:\n%s", strings.Join(events[max(0, len(events)-60):], "\n"))
	probe, _ := c.run(ctx, "tail -n 20 /tmp/probe.log; cat /tmp/probe.err; tail -n 10 /tmp/probe.errors")
	t.Logf("the end of the probe's output:\n%s", probe)
	// The operator's own account of its decisions about this Database
	// (failover, switchover, fencing, lease), from its log of the last 15
	// minutes: by the end of the suite it is about other tests. Every
	// replica's, each line headed by its pod: the leader may be any.
	out, err = devenv.Kubectl(ctx, cluster, nil, "logs", "--namespace", devenv.OperatorNamespace,
		"--selector", "app.kubernetes.io/instance="+devenv.OperatorRelease+",app.kubernetes.io/component=manager",
		"--prefix", "--tail=-1", "--since=15m")
	if err != nil {
		out += err.Error()
	}
	var mine []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, ha.db) {
			mine = append(mine, line)
		}
	}
	t.Logf("the operator's log about Database %s, last 150 of %d lines:\n%s", ha.db, len(mine), strings.Join(mine[max(0, len(mine)-150):], "\n"))
}

// TestWriteGap checks the write gap computed from the probe's output.
func TestWriteGap(t *testing.T) {
	cases := []struct {
		name     string
		out      string
		from, to int64
		gap      int64
		ok       bool
	}{
		{name: "an outage around the disruption", from: 1250, to: 1250, gap: 4000, ok: true,
			out: "ok 1 1000\nok 2 1100\nok 3 1200\nerr 4 2200\nerr 5 3300\nok 6 5200\nok 7 5300\n"},
		{name: "a write acknowledged at the disruption's moment", from: 1200, to: 1200, gap: 4000, ok: true,
			out: "ok 1 1100\nok 2 1200\nerr 3 2200\nok 4 5200\n"},
		{name: "a slow acknowledgement, without errors", from: 1250, to: 1250, gap: 2900, ok: true,
			out: "ok 1 1100\nok 2 1200\nok 3 4100\nok 4 4200\n"},
		{name: "the longest interval in the window", from: 1000, to: 5500, gap: 3000, ok: true,
			out: "ok 1 1000\nok 2 2000\nerr 3 3000\nok 4 5000\nok 5 5100\nok 6 6000\n"},
		{name: "a longer interval outside the window is not counted", from: 20000, to: 20000, gap: 500, ok: true,
			out: "ok 1 1000\nok 2 10000\nok 3 19800\nok 4 20300\n"},
		{name: "the outage begins after the command, inside the window", from: 1000, to: 6350, gap: 5000, ok: true,
			out: "ok 1 900\nok 2 1100\nok 3 1200\nok 4 1300\nerr 5 3000\nok 6 6300\nok 7 6400\n"},
		{name: "writes resume after the window, but none after its end", from: 1000, to: 9000, gap: 2000, ok: false,
			out: "ok 1 1000\nok 2 2000\nok 3 4000\n"},
		{name: "no acknowledged write after", from: 1150, to: 1150,
			out: "ok 1 1000\nok 2 1100\nerr 3 2100\nerr 4 3100\n"},
		{name: "no acknowledged write before", from: 500, to: 500,
			out: "err 1 1000\nok 2 1100\nok 3 1200\n"},
		{name: "other output is skipped", from: 1150, to: 1150, gap: 200, ok: true,
			out: "CREATE TABLE\nok 1 1000\nok 2 1100\nNOTICE: x\nok 3 1300\nok x 1400\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gap, ok := writeGap(parseProbe(c.out), c.from, c.to)
			if gap != c.gap || ok != c.ok {
				t.Errorf("writeGap(%q, %d, %d) = %d, %v; want %d, %v", c.out, c.from, c.to, gap, ok, c.gap, c.ok)
			}
		})
	}
	if got := percentile([]int64{500, 100, 400, 200, 300}, 50); got != "300" {
		t.Errorf("the p50 of 100..500 is %s, want 300", got)
	}
	if got := percentile([]int64{500, 100, 400, 200, 300}, 100); got != "500" {
		t.Errorf("the max of 100..500 is %s, want 500", got)
	}
}
