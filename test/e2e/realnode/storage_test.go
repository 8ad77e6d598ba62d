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
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// storageEngine is what the storage tests need of an engine's instances.
type storageEngine struct {
	// container runs the server, with the data volume mounted at mount.
	container, mount string
	// super runs SQL as the superuser.
	super func(ctx context.Context, pod, sql string) (string, error)
	// refusals are the words of a write refused for want of space.
	refusals []string
}

var (
	postgresStorage = storageEngine{container: "postgres", mount: "/var/lib/postgresql/data", super: postgresSuper,
		refusals: []string{"No space left on device", "could not extend file", "server closed the connection", "terminating connection"}}
	mariadbStorage = storageEngine{container: "mariadb", mount: "/var/lib/mysql", super: mariadbSuper,
		refusals: []string{"is full", "No space left on device", "errno: 28", "Errcode: 28"}}
)

// fillUntilRefused inserts more than the space left on the volume until
// the server refuses a write for want of space (the client's output or
// kubectl's error says so), and returns when it did. Should the
// operator grow the volume during an insert far enough for it to
// succeed, another follows, up to three.
func (e storageEngine) fillUntilRefused(t *testing.T, pod string) (full time.Time, sizeKiB int64) {
	t.Helper()
	var out string
	var err error
	for try := range 3 {
		_, avail, size := e.volumeDF(t, pod)
		sizeKiB = size
		mb := int(avail/1024) + 100
		began := time.Now()
		out, err = e.super(t.Context(), pod, e.fillSQL("fill", mb))
		full = time.Now()
		if err != nil {
			t.Logf("inserting %d MiB into %d KiB with %d available: refused %v after it began", mb, size, avail, full.Sub(began).Round(time.Millisecond))
			break
		}
		t.Logf("try %d: the insert of %d MiB succeeded: the volume grew during it", try+1, mb)
	}
	if err == nil {
		t.Fatal("three inserts larger than the space left succeeded")
	}
	refusal := out + err.Error()
	for _, r := range e.refusals {
		if strings.Contains(refusal, r) {
			t.Logf("refused: %s", refusal)
			return full, sizeKiB
		}
	}
	// Say whether the server's container restarted, and what it logged.
	restarts, _ := devenv.Kubectl(context.WithoutCancel(t.Context()), cluster, nil, "get", "pod", pod,
		"-o", "jsonpath={.status.containerStatuses[*].restartCount} {.status.containerStatuses[*].lastState}")
	logs, _ := devenv.Kubectl(context.WithoutCancel(t.Context()), cluster, nil, "logs", pod, "-c", e.container, "--tail=30")
	previous, _ := devenv.Kubectl(context.WithoutCancel(t.Context()), cluster, nil, "logs", pod, "-c", e.container, "--previous", "--tail=30")
	t.Fatalf("the insert failed, not for want of space: %s\nrestarts and last state: %s\nthe server's log:\n%s\nits previous container's log:\n%s",
		refusal, restarts, logs, previous)
	return full, sizeKiB
}

// volumeDF is df's view of the instance's data volume, in KiB: used,
// available, size.
func (e storageEngine) volumeDF(t *testing.T, pod string) (used, avail, size int64) {
	t.Helper()
	out, err := execIn(t.Context(), pod, e.container, "", "df", "-k", "--output=used,avail,size", e.mount)
	if err != nil {
		t.Fatalf("df in %s: %v: %s", pod, err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 3 {
		t.Fatalf("df in %s: %q", pod, out)
	}
	n := make([]int64, 3)
	for i := range f {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			t.Fatalf("df in %s: %q", pod, out)
		}
	}
	return n[0], n[1], n[2]
}

// usedPercent is df's Use%: used over used plus available.
func usedPercent(used, avail int64) float64 { return 100 * float64(used) / float64(used+avail) }

func quantityMi(t *testing.T, object, path string) int64 {
	t.Helper()
	s := jsonpath(t, object, path)
	n, ok := strings.CutSuffix(s, "Mi")
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s %s = %q, want a size in Mi", object, path, s)
	}
	return v
}

// fillSQL inserts about mb MiB of rows into the table in the database
// app, creating it: 960 bytes each, below the size PostgreSQL compresses
// (TOAST, 2 kB), with no sort or aggregate that would spill to temporary
// files. MariaDB numbers the rows with a cross join of a recursive CTE of
// 1000 rows with itself (a CTE of mb*1000 levels would recurse as often),
// so mb is at most 1000; InnoDB stores the rows uncompressed, and the
// binary log gets as much again at the commit.
func (e storageEngine) fillSQL(table string, mb int) string {
	if e.container == "postgres" {
		return fmt.Sprintf(`\c app
create table if not exists %s (id bigserial, pad text);
insert into %[1]s (pad) select repeat(md5(g::text || random()::text), 30) from generate_series(1, %d) g;`, table, mb*1000)
	}
	return fmt.Sprintf(`use app;
create table if not exists %s (id bigint auto_increment primary key, pad varchar(960)) engine=InnoDB;
insert into %[1]s (pad) select repeat(md5(concat(x.n, rand())), 30) from (
  with recursive g (n) as (select 0 union all select n + 1 from g where n < 999)
  select a.n * 1000 + b.n as n from g a, g b limit %d) x;`, table, mb*1000)
}

// awaitGrowth waits, after the volume of the instance pod of Database db
// crossed the autoGrow threshold at crossed, for the operator to grow it
// from fromMi to wantMi at least: the claim asks for more, df in the pod
// shows it, the claim's capacity has it, and the StatefulSet, created
// again, has it in its claim template. The grown volume can cross the
// threshold again at once (InnoDB extends a growing file by tens of MiB
// ahead of its rows), and the operator grow it once more: each check
// follows the claim as it is. It logs how long each took and returns the
// size the claim asks for.
func (e storageEngine) awaitGrowth(t *testing.T, db, pod string, fromMi, wantMi int64, crossed time.Time) int64 {
	t.Helper()
	claim := "pvc/data-" + pod
	requestedMi := func() int64 { return quantityMi(t, claim, "{.spec.resources.requests.storage}") }
	eventually(t, 2*time.Minute, "the claim asks for more", func() error {
		if mi := requestedMi(); mi <= fromMi {
			return fmt.Errorf("the claim asks for %dMi", mi)
		}
		return nil
	})
	requested := time.Since(crossed)
	switch grownMi := requestedMi(); {
	case grownMi < wantMi:
		t.Errorf("grew to %dMi, want %dMi", grownMi, wantMi)
	case grownMi > wantMi:
		t.Logf("grew to %dMi: past the threshold again at %dMi", grownMi, wantMi)
	}
	e.dfFollowsTheClaim(t, pod, wantMi)
	resized := time.Since(crossed)
	eventually(t, 2*time.Minute, "the StatefulSet's claim template grows", func() error {
		mi := quantityMi(t, "statefulset/"+db, "{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}")
		if claimMi := requestedMi(); mi != claimMi {
			return fmt.Errorf("the template asks for %dMi, the claim for %dMi", mi, claimMi)
		}
		return nil
	})
	templated := time.Since(crossed)
	grownMi := requestedMi()
	t.Logf("threshold crossed -> claim asks for %dMi %v, df shows it %v, StatefulSet recreated with it %v",
		grownMi, requested.Round(time.Millisecond), resized.Round(time.Millisecond), templated.Round(time.Millisecond))
	return grownMi
}

// dfFollowsTheClaim checks that df in the pod shows the size its claim asks
// for, which its capacity has, at least atLeastMi: a write after a growth
// may cross the threshold again, and a further growth reach the claim, its
// capacity, then df, in turn.
func (e storageEngine) dfFollowsTheClaim(t *testing.T, pod string, atLeastMi int64) {
	t.Helper()
	claim := "pvc/data-" + pod
	eventually(t, 2*time.Minute, "df shows the claim's size", func() error {
		requestedMi := quantityMi(t, claim, "{.spec.resources.requests.storage}")
		capacityMi := quantityMi(t, claim, "{.status.capacity.storage}")
		_, _, size := e.volumeDF(t, pod)
		if size != requestedMi*1024 || capacityMi != requestedMi || requestedMi < atLeastMi {
			return fmt.Errorf("df shows %d KiB, the claim asks for %dMi and has %dMi, want them equal and at least %dMi",
				size, requestedMi, capacityMi, atLeastMi)
		}
		return nil
	})
}

// statusFollowsTheClaim checks that the Database's status.storageSize is the
// size its instance's claim asks for, at least atLeastMi: the claim may have
// grown again since (the fill can leave the grown volume past the threshold
// too).
func statusFollowsTheClaim(t *testing.T, db, pod string, atLeastMi int64) {
	t.Helper()
	eventually(t, time.Minute, "status.storageSize following the claim", func() error {
		claimMi := quantityMi(t, "pvc/data-"+pod, "{.spec.resources.requests.storage}")
		if got := jsonpath(t, "database/"+db, "{.status.storageSize}"); got != fmt.Sprintf("%dMi", claimMi) || claimMi < atLeastMi {
			return fmt.Errorf("status.storageSize = %s, the claim asks for %dMi (grown to %dMi at least)", got, claimMi, atLeastMi)
		}
		return nil
	})
}

// TestPostgresStorageGrows runs a PostgreSQL Database on the expandable
// local class (tmpfs volumes of the claim's size, grown online), 96Mi with
// autoGrow at 80% by 50%, up to 1Gi:
//   - rows written past the threshold: the claim and the StatefulSet's
//     claim template grow, df in the pod shows the larger size, and neither
//     the pod nor the server restarted;
//   - one insert larger than the space left fills it: the write is refused for
//     want of space, and with no edit of any kind the operator grows the
//     volume and the server accepts writes again;
//   - on a class that cannot expand, a volume over the threshold gets the
//     StorageGrowthBlocked condition (TestPostgresStorageCannotGrowOnAFixedClass).
//
// Its memory limit is 1Gi, as TestMariaDBStorageGrows's is: the class's
// volumes are tmpfs, whose pages count against the memory limit of the pod
// that writes them, and the volume reaches over 300Mi here, beside shared
// buffers of a quarter of the limit.
func TestPostgresStorageGrows(t *testing.T) {
	requireClusterBeside(t)
	applyDatabaseManifest(t, "growpg", "postgres", "15", 1, databaseManifestWithMemory("growpg", "postgres", "15", 1, "1Gi", fmt.Sprintf(`  storage:
    size: 96Mi
    storageClassName: %s
    autoGrow: {thresholdPercent: 80, incrementPercent: 50, maximum: 1Gi}
  parameters: {max_wal_size: "32MB", min_wal_size: "32MB"}
`, localcluster.ExpandableStorageClassName)))
	pod := "growpg-0"
	used, avail, size := postgresStorage.volumeDF(t, pod)
	t.Logf("after initdb: %d KiB used of %d (%.0f%%)", used, size, usedPercent(used, avail))
	if size != 96*1024 {
		t.Fatalf("df shows %d KiB, want the claim's 96Mi", size)
	}
	uid := jsonpath(t, "pod/"+pod, "{.metadata.uid}")
	restarts := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}")
	started := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()")

	// Past the threshold, a few MiB at a time.
	var crossed time.Time
	for range 40 {
		mustSQL(t, postgresSuper, pod, postgresStorage.fillSQL("fill", 3)+"\ncheckpoint;")
		used, avail, _ = postgresStorage.volumeDF(t, pod)
		if usedPercent(used, avail) >= 80 {
			crossed = time.Now()
			break
		}
	}
	if crossed.IsZero() {
		t.Fatalf("never past 80%%: %d KiB used, %d available", used, avail)
	}
	t.Logf("past the threshold: %.0f%% used", usedPercent(used, avail))
	grownMi := postgresStorage.awaitGrowth(t, "growpg", pod, 96, 144, crossed) // 96Mi plus 50%
	kubectl(t, "wait", "--for=condition=Ready", "database/growpg", "--timeout=120s")
	if got := jsonpath(t, "pod/"+pod, "{.metadata.uid}"); got != uid {
		t.Error("the pod was replaced")
	}
	if got := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}"); got != restarts {
		t.Errorf("the container restarted: %s restarts, was %s", got, restarts)
	}
	if got := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()"); got != started {
		t.Errorf("the server restarted: started %s, was %s", got, started)
	}
	statusFollowsTheClaim(t, "growpg", pod, grownMi)

	// One insert larger than the space left: refused once the volume is
	// full.
	// The operator may have grown the volume again during the insert, too
	// late for it: growth is counted from the size the insert filled.
	full, refusedKiB := postgresStorage.fillUntilRefused(t, pod)
	grownMi = refusedKiB / 1024
	used, avail, _ = postgresStorage.volumeDF(t, pod)
	t.Logf("after the refusal: df shows %d KiB used, %d available (%.0f%%)", used, avail, usedPercent(used, avail))
	// The operator grows the full volume by itself.
	eventually(t, 2*time.Minute, "the full volume grows", func() error {
		if mi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}"); mi <= grownMi {
			return fmt.Errorf("the claim has %dMi", mi)
		}
		return nil
	})
	regrown := time.Now()
	nowMi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}")
	// A write that needs room (20 MiB, more than was left) is accepted
	// again, on the server as it runs or once it has restarted.
	var accepted time.Time
	attempts := 0
	eventually(t, 5*time.Minute, "writes of 20 MiB accepted again", func() error {
		attempts++
		out, err := postgresSuper(t.Context(), pod, postgresStorage.fillSQL("fill", 20)+"\ncreate table if not exists after_full (at timestamptz); insert into after_full values (now());")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		accepted = time.Now()
		return nil
	})
	t.Logf("disk full -> claim grown from %dMi to %dMi %v later with no edit -> 20 MiB written %v after the refusal (%d attempts)",
		grownMi, nowMi, regrown.Sub(full).Round(time.Millisecond), accepted.Sub(full).Round(time.Millisecond), attempts)
	// The 20 MiB can take the grown volume past the threshold again, and the
	// operator grow it once more: df follows the claim's capacity as it is.
	postgresStorage.dfFollowsTheClaim(t, pod, nowMi)
	// The server may restart after the disk was full (a PANIC of a process
	// that could not write, then crash recovery), on its own or by the
	// operator once the volume has room: the row must be there once it
	// answers. What happened is logged; the row and the server's start are
	// read together, from a server that answers.
	var (
		rows, now string
		logged    bool
	)
	eventually(t, 3*time.Minute, "the row written after the full disk", func() error {
		out, err := postgresSuper(t.Context(), pod, "\\c app\nselect count(*), pg_postmaster_start_time() from after_full")
		if err != nil && !logged {
			logged = true
			logs, _ := devenv.Kubectl(context.WithoutCancel(t.Context()), cluster, nil, "logs", pod, "-c", "postgres", "--tail=15")
			t.Logf("the server does not answer: %v: %s\nits log ends:\n%s", err, out, logs)
		}
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		var ok bool
		if rows, now, ok = strings.Cut(strings.TrimSpace(out), "|"); !ok {
			return fmt.Errorf("%q: want a count and a time", out)
		}
		return nil
	})
	if rows != "1" {
		t.Errorf("%s rows after the full disk, want 1", rows)
	}
	if now != started {
		t.Logf("the server started again after the full disk: at %s, first at %s", now, started)
	}
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=growpg,reason=StorageGrowing", "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	t.Logf("StorageGrowing events:\n%s", events)
}

// TestMariaDBStorageGrows is TestPostgresStorageGrows for MariaDB 10.11:
// 96Mi on the expandable local class, autoGrow at 80% by 50% up to 1Gi,
// innodb_log_file_size 16M (its default, 96M, would not fit), a memory
// limit of 1Gi and innodb_buffer_pool_size 128M: the class's volumes are
// tmpfs, whose pages count against the memory limit of the pod that writes
// them, and the large insert below took the pod's shared memory to 300 MB
// (the volume, and more the kernel counted as such); in the 512Mi the
// other tests' Databases get, beside the 256 MiB pool Steward chooses for
// it, the kernel killed mariadbd during it:
//   - rows written past the threshold: the claim and the StatefulSet's
//     claim template grow, df in the pod shows the larger size, and neither
//     the pod nor mariadbd restarted (its Uptime went on counting);
//   - one insert larger than the space left: InnoDB cannot extend the
//     table's file and refuses the statement (the table is full), which it
//     rolls back; the file keeps its size, so the volume stays full, and
//     with no edit of any kind the operator grows it and an insert of
//     20 MiB into a new table, which needs new space, succeeds.
func TestMariaDBStorageGrows(t *testing.T) {
	requireClusterBeside(t)
	manifest := databaseManifestWithMemory("growmaria", "mariadb", "10.11", 1, "1Gi", fmt.Sprintf(`  storage:
    size: 96Mi
    storageClassName: %s
    autoGrow: {thresholdPercent: 80, incrementPercent: 50, maximum: 1Gi}
  parameters: {innodb_log_file_size: "16M", innodb_buffer_pool_size: "128M"}
`, localcluster.ExpandableStorageClassName))
	applyDatabaseManifest(t, "growmaria", "mariadb", "10.11", 1, manifest)
	pod := "growmaria-0"
	e := mariadbStorage
	used, avail, size := e.volumeDF(t, pod)
	t.Logf("after the data directory's creation: %d KiB used of %d (%.0f%%)", used, size, usedPercent(used, avail))
	if size != 96*1024 {
		t.Fatalf("df shows %d KiB, want the claim's 96Mi", size)
	}
	uid := jsonpath(t, "pod/"+pod, "{.metadata.uid}")
	restarts := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}")
	// mariadbd's Uptime, and the times before and after it was read.
	uptime := func() (seconds int64, before, after time.Time) {
		t.Helper()
		before = time.Now()
		out := mustSQL(t, mariadbSuper, pod, "select variable_value from information_schema.global_status where variable_name = 'UPTIME'")
		n, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			t.Fatalf("Uptime %q", out)
		}
		return n, before, time.Now()
	}
	firstUptime, _, firstRead := uptime()

	// Past the threshold, a few MiB at a time.
	var crossed time.Time
	for range 40 {
		mustSQL(t, mariadbSuper, pod, e.fillSQL("fill", 3))
		used, avail, _ = e.volumeDF(t, pod)
		if usedPercent(used, avail) >= 80 {
			crossed = time.Now()
			break
		}
	}
	if crossed.IsZero() {
		t.Fatalf("never past 80%%: %d KiB used, %d available", used, avail)
	}
	t.Logf("past the threshold: %.0f%% used", usedPercent(used, avail))
	grownMi := e.awaitGrowth(t, "growmaria", pod, 96, 144, crossed) // 96Mi plus 50%
	kubectl(t, "wait", "--for=condition=Ready", "database/growmaria", "--timeout=120s")
	if got := jsonpath(t, "pod/"+pod, "{.metadata.uid}"); got != uid {
		t.Error("the pod was replaced")
	}
	if got := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}"); got != restarts {
		t.Errorf("the container restarted: %s restarts, was %s", got, restarts)
	}
	// The same mariadbd counted on for at least the whole seconds between
	// the two reads; one started again would count from 0.
	nowUptime, began, _ := uptime()
	if between := int64(began.Sub(firstRead).Seconds()); nowUptime-firstUptime < between {
		t.Errorf("mariadbd restarted: Uptime %d s, was %d s %d s before", nowUptime, firstUptime, between)
	} else {
		t.Logf("mariadbd's Uptime went from %d s to %d s", firstUptime, nowUptime)
	}
	statusFollowsTheClaim(t, "growmaria", pod, grownMi)

	// One insert larger than the space left: refused once the volume is
	// full.
	full, refusedKiB := e.fillUntilRefused(t, pod)
	grownMi = refusedKiB / 1024
	used, avail, size = e.volumeDF(t, pod)
	t.Logf("after the refusal: df shows %d KiB used, %d available of %d (%.0f%%)", used, avail, size, usedPercent(used, avail))
	switch {
	case size > refusedKiB:
		// The operator grew the full volume before df was read (once,
		// 144Mi to 216Mi within seconds of the refusal).
		t.Logf("the volume grew already: %d KiB, %d when the insert was refused", size, refusedKiB)
	case avail >= 20*1024:
		t.Fatalf("%d KiB available after the refusal: the write of 20 MiB below would prove nothing", avail)
	}
	// What mariadbd logged of it (InnoDB's failed extension of the file).
	logged := 0
	for line := range strings.Lines(kubectl(t, "logs", pod, "-c", "mariadb")) {
		if logged < 5 && (strings.Contains(line, "is full") || strings.Contains(line, "No space") || strings.Contains(line, "error 28")) {
			t.Logf("mariadbd: %s", strings.TrimSpace(line))
			logged++
		}
	}
	// The operator grows the full volume by itself.
	eventually(t, 3*time.Minute, "the full volume grows", func() error {
		if mi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}"); mi <= grownMi {
			return fmt.Errorf("the claim has %dMi", mi)
		}
		return nil
	})
	regrown := time.Now()
	nowMi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}")
	// 20 MiB into a table of its own, whose file needs new space: the
	// refused rows' pages, free in fill's file, cannot take them.
	var accepted time.Time
	attempts := 0
	eventually(t, 5*time.Minute, "writes of 20 MiB accepted again", func() error {
		attempts++
		out, err := mariadbSuper(t.Context(), pod, e.fillSQL("after_full", 20))
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		accepted = time.Now()
		return nil
	})
	t.Logf("disk full -> claim grown from %dMi to %dMi %v later with no edit -> 20 MiB written %v after the refusal (%d attempts)",
		grownMi, nowMi, regrown.Sub(full).Round(time.Millisecond), accepted.Sub(full).Round(time.Millisecond), attempts)
	if got := mustSQL(t, mariadbSuper, pod, "select count(*) from app.after_full"); got != "20000" {
		t.Errorf("%s rows after the full disk, want 20000", got)
	}
	// 20 MiB of rows and as much binary log may take the volume past the
	// threshold again, and the operator grow it once more.
	e.dfFollowsTheClaim(t, pod, nowMi)
	if got := jsonpath(t, "pod/"+pod, "{.metadata.uid}"); got != uid {
		t.Error("the pod was replaced")
	}
	if got := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}"); got != restarts {
		t.Errorf("the container restarted: %s restarts, was %s", got, restarts)
	}
	lastUptime, began, _ := uptime()
	if between := int64(began.Sub(firstRead).Seconds()); lastUptime-firstUptime < between {
		t.Errorf("mariadbd restarted: Uptime %d s, was %d s %d s before", lastUptime, firstUptime, between)
	}
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=growmaria,reason=StorageGrowing", "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	t.Logf("StorageGrowing events:\n%s", events)
}

// TestPostgresStorageCannotGrowOnAFixedClass: on a class without volume
// expansion (96Mi tmpfs volumes of the fixed-size local class, which fill
// at their size), with autoGrow at 50%: the instance reports its volume's
// size and use as df sees them; rows written past the threshold bring
// StorageGrowthBlocked True with StorageClassCannotExpand and its event,
// and the claim is left as it is.
func TestPostgresStorageCannotGrowOnAFixedClass(t *testing.T) {
	requireClusterBeside(t)
	applyDatabase(t, "fixedpg", "postgres", "15", 1, fmt.Sprintf(`  storage:
    size: 96Mi
    storageClassName: %s
    autoGrow: {thresholdPercent: 50, maximum: 400Mi}
  parameters: {max_wal_size: "32MB", min_wal_size: "32MB"}
`, localcluster.FixedSizeStorageClassName))
	pod := "fixedpg-0"
	used, avail, size := postgresStorage.volumeDF(t, pod)
	t.Logf("after initdb: %d KiB used of %d (%.0f%%)", used, size, usedPercent(used, avail))
	if size != 96*1024 {
		t.Fatalf("df shows %d KiB, want the claim's 96Mi", size)
	}
	for range 30 {
		if usedPercent(used, avail) >= 55 {
			break
		}
		mustSQL(t, postgresSuper, pod, postgresStorage.fillSQL("fill", 3)+"\ncheckpoint;")
		used, avail, _ = postgresStorage.volumeDF(t, pod)
	}
	if usedPercent(used, avail) < 55 {
		t.Fatalf("never past 55%%: %d KiB used, %d available", used, avail)
	}
	// The instance's report: the volume's size, and its use past 55%.
	eventually(t, time.Minute, "the instance reports its volume", func() error {
		u := jsonpath(t, "database/fixedpg", "{.status.instances[0].volumeUsedBytes}")
		c := jsonpath(t, "database/fixedpg", "{.status.instances[0].volumeCapacityBytes}")
		usedBytes, err1 := strconv.ParseInt(u, 10, 64)
		capacityBytes, err2 := strconv.ParseInt(c, 10, 64)
		// The file system's size: at most the volume's, a little less for
		// its own records.
		if err1 != nil || err2 != nil || capacityBytes > 96<<20 || 100*capacityBytes < 95*(96<<20) || 100*usedBytes < 55*capacityBytes {
			return fmt.Errorf("volume %q bytes used of %q, want more than 55%% of about %d", u, c, 96<<20)
		}
		return nil
	})
	var cond string
	eventually(t, 2*time.Minute, "StorageGrowthBlocked", func() error {
		cond = jsonpath(t, "database/fixedpg", `{.status.conditions[?(@.type=="StorageGrowthBlocked")].status} {.status.conditions[?(@.type=="StorageGrowthBlocked")].reason}: {.status.conditions[?(@.type=="StorageGrowthBlocked")].message}`)
		if !strings.HasPrefix(cond, "True StorageClassCannotExpand") {
			return fmt.Errorf("StorageGrowthBlocked = %q", cond)
		}
		return nil
	})
	t.Logf("%.0f%% used: %s", usedPercent(used, avail), cond)
	if got := jsonpath(t, "pvc/data-"+pod, "{.spec.resources.requests.storage}"); got != "96Mi" {
		t.Errorf("the claim asks for %s", got)
	}
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=fixedpg,reason=StorageGrowthBlocked", "-o", "jsonpath={.items[*].message}")
	if events == "" {
		t.Error("no StorageGrowthBlocked event")
	}
}
