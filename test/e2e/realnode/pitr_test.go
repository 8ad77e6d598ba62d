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
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// pitrEngine is what the point-in-time test needs of an engine's SQL.
type pitrEngine struct {
	dumpEngine
	// createTable makes marks (id, at), at the insert's time in UTC.
	createTable string
	// insert inserts a row of marks and returns its time as RFC 3339;
	// insertOnce does so only if the row is missing (it returns nothing
	// then).
	insert, insertOnce string
	// baseSuffix ends the key of a base backup.
	baseSuffix string
}

var pitrEngines = map[string]pitrEngine{
	"postgres": {
		dumpEngine:  dumpEngines[0],
		createTable: `create table marks (id int primary key, at timestamptz not null default clock_timestamp())`,
		insert:      `insert into marks (id) values (%d) returning to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
		insertOnce:  `insert into marks (id) values (%d) on conflict do nothing returning to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
		baseSuffix:  ".tar.gz",
	},
	"mariadb": {
		dumpEngine:  dumpEngines[1],
		createTable: `create table marks (id int primary key, at datetime(6) not null default utc_timestamp(6))`,
		insert:      `insert into marks (id) values (%d) returning date_format(at, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ')`,
		insertOnce:  `insert ignore into marks (id) values (%d) returning date_format(at, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ')`,
		baseSuffix:  ".sql.gz",
	},
}

// TestPointInTimeRecovery archives the WAL of a PostgreSQL Database of two
// instances into an S3 emulator, from the archiver pod the Backup's
// spec.pointInTime starts, writes rows around a time T, and restores into
// a new Database: to T-1s (without the row written at T), to T+1s (with
// it), and to the latest point after a switchover (every acknowledged
// row, those written on the new primary too). Then a second base backup
// with keepLast 1 prunes the first one and its WAL: the recoverable window
// moves, a restore before it is refused with the window's start, and the
// latest point still restores.
func TestPointInTimeRecovery(t *testing.T) {
	pointInTimeRecovery(t, pitrEngines["postgres"], "pitr-pg")
}

// TestMariaDBPointInTimeRecovery is TestPointInTimeRecovery for MariaDB:
// the binary log archived by GTID, base backups that are dumps with their
// GTID position, a switchover to the other instance (the archiver follows
// the new primary from the GTID it reached), and the same restores.
func TestMariaDBPointInTimeRecovery(t *testing.T) {
	pointInTimeRecovery(t, pitrEngines["mariadb"], "pitr-maria")
}

func pointInTimeRecovery(t *testing.T, pg pitrEngine, src string) {
	requireClusterBeside(t)
	s3 := startStore(t)
	dst := src + "-copy"
	applyAndDelete(t, "database/"+src, databaseManifest(src, pg.engine, pg.version, 2, ""))
	applyDumpDatabase(t, dst, pg.dumpEngine, "")
	for _, name := range []string{src, dst} {
		eventually(t, 7*time.Minute, "Database "+name+" Ready", func() error { return databaseReady(t, name) })
	}
	primary := func() string { return jsonpath(t, "database/"+src, "{.status.primary}") }
	insert := func(id int) time.Time {
		t.Helper()
		out := strings.TrimSpace(pg.must(t, primary(), fmt.Sprintf(pg.insert, id)))
		at, err := time.Parse(time.RFC3339Nano, out)
		if err != nil {
			t.Fatalf("row %d: %q: %v", id, out, err)
		}
		return at
	}
	pg.must(t, primary(), pg.createTable)
	insert(1)

	prefix := "realnode/" + src
	began := time.Now()
	backup := func(run string, retention string) {
		applyAndDelete(t, "backup/"+src, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Backup
metadata:
  name: %[1]s
  namespace: default
  annotations: {%[2]s: %[3]q}
spec:
  source: {type: %[9]s, databaseRef: {name: %[1]s}}
  destination:
    type: s3
    bucket: %[4]s
    prefix: %[5]s
    endpoint: %[6]s
    allowInsecureEndpoint: true
    credentialsSecretRef: {name: %[7]s}
  schedule: "0 0 1 1 *"
  pointInTime: {maxArchiveLag: 1m}
%[8]s`, src, v1alpha1.AnnotationBackupNow, run, storetest.Bucket, prefix, s3.Destination.Endpoint, storeSecretOf(t), retention, pg.sourceType))
	}
	backup("first", "")
	var b v1alpha1.Backup
	baseDone := func(run string) func() error {
		return func() error {
			getJSON(t, &b, "backup", src)
			st := b.Status.PointInTime
			if st == nil || st.LastBaseBackup == nil || st.LastBaseBackup.Job != b.ManualJobName(run) {
				return fmt.Errorf("no base backup of run %s yet: %+v", run, st)
			}
			if !st.LastBaseBackup.Succeeded {
				t.Fatalf("the base backup failed: %s", st.LastBaseBackup.Message)
			}
			if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionArchiving); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Archiving: %+v", c)
			}
			return nil
		}
	}
	eventually(t, 5*time.Minute, "the first base backup and a current archive", baseDone("first"))
	t.Logf("base backup %s (%d bytes) and archiving %v after the Backup's creation; window from %v",
		b.Status.PointInTime.LastBaseBackup.Object, b.Status.PointInTime.LastBaseBackup.Size,
		time.Since(began).Round(time.Second), b.Status.PointInTime.FirstRecoverableTime)

	// 2.5 s apart: MariaDB's binary log has whole seconds, and the rows
	// around T fall on either side of T-1s and T+1s whatever T's fraction.
	insert(2)
	time.Sleep(2500 * time.Millisecond)
	at := insert(3) // the row written at T
	time.Sleep(2500 * time.Millisecond)
	insert(4)

	// A switchover: the archiver follows the new primary's timeline.
	old := primary()
	kubectl(t, "annotate", "database", src, v1alpha1.AnnotationSwitchoverTo+"="+v1alpha1.SwitchoverToAny)
	eventually(t, 3*time.Minute, "the switchover", func() error {
		if p := primary(); p == old || p == "" {
			return fmt.Errorf("the primary is still %q", p)
		}
		return databaseReady(t, src)
	})
	var last time.Time
	eventually(t, 2*time.Minute, "a write on the new primary", func() error {
		out, err := pg.sql(t.Context(), primary(), fmt.Sprintf(pg.insertOnce, 5))
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(out); s != "" {
			last, err = time.Parse(time.RFC3339Nano, s)
			return err
		}
		return nil
	})
	acked := time.Now()
	var lags []time.Duration
	eventually(t, 5*time.Minute, "the archive past the last acknowledged row", func() error {
		getJSON(t, &b, "backup", src)
		st := b.Status.PointInTime
		if st.LastRecoverableTime == nil || !st.LastRecoverableTime.After(acked) {
			return fmt.Errorf("the archive ends at %v (streaming %v, failures %d: %s)", st.LastRecoverableTime, st.Streaming, st.ArchiveFailures, st.LastArchiveFailure)
		}
		return nil
	})
	for range 4 {
		getJSON(t, &b, "backup", src)
		if s := b.Status.PointInTime.ArchiveLagSeconds; s != nil {
			lags = append(lags, time.Duration(*s)*time.Second)
		}
		time.Sleep(15 * time.Second)
	}
	slices.Sort(lags)
	t.Logf("archive lag as status.pointInTime reported it, 4 reads 15 s apart: %v; last segment %s, failures %d",
		lags, b.Status.PointInTime.LastArchivedSegment, b.Status.PointInTime.ArchiveFailures)

	restore := func(name, target string, want []int) v1alpha1.Restore {
		t.Helper()
		pit := "{}"
		if target != "" {
			pit = fmt.Sprintf("{targetTime: %q}", target)
		}
		began := time.Now()
		applyAndDelete(t, "restore/"+name, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Restore
metadata:
  name: %s
  namespace: default
spec:
  source: {backupRef: {name: %s}, pointInTime: %s}
  target: {type: %s, databaseRef: {name: %s}}
  overwrite: true
`, name, src, pit, pg.sourceType, dst))
		rs := waitForRestore(t, name)
		if want == nil {
			return rs
		}
		if rs.Status.Phase != v1alpha1.RestoreSucceeded || rs.Status.RecoveryPoint == nil {
			t.Fatalf("Restore %s: phase %s, recovery point %v: %s", name, rs.Status.Phase, rs.Status.RecoveryPoint, rs.Status.Message)
		}
		got := idsOf(t, pg.dumpEngine, dst+"-0")
		if !slices.Equal(got, want) {
			t.Errorf("Restore %s to %q: rows %v, want %v", name, target, got, want)
		}
		t.Logf("Restore %s to %q: rows %v, recovery point %s, from %s, %v after its creation (its Job from its start %v)",
			name, target, got, rs.Status.RecoveryPoint.UTC().Format(time.RFC3339), rs.Status.BaseBackup,
			time.Since(began).Round(time.Second), rs.Status.CompletionTime.Sub(rs.Status.StartTime.Time))
		return rs
	}
	before := restore(src+"-before", at.Add(-time.Second).Format(time.RFC3339Nano), []int{1, 2})
	if before.Status.RecoveryPoint.After(at) {
		t.Errorf("the recovery point %v of T-1s is after T %v", before.Status.RecoveryPoint, at)
	}
	restore(src+"-after", at.Add(time.Second).Format(time.RFC3339Nano), []int{1, 2, 3})
	restore(src+"-latest", "", []int{1, 2, 3, 4, 5})
	_ = last

	// A second base backup with keepLast 1 prunes the first and its WAL.
	backup("second", "  retention: {keepLast: 1}\n")
	eventually(t, 5*time.Minute, "the second base backup", baseDone("second"))
	first := b.Status.PointInTime.FirstRecoverableTime
	if first == nil || !first.After(at) {
		t.Fatalf("after pruning the window starts at %v, want after T %v", first, at)
	}
	objects := storeKeys(t, s3, prefix+"/pitr/")
	bases := 0
	for _, k := range objects {
		if strings.HasSuffix(k, pg.baseSuffix) {
			bases++
		}
	}
	if bases != 1 {
		t.Errorf("after pruning with keepLast 1 the store holds %d base backups: %v", bases, objects)
	}
	refused := restore(src+"-pruned", at.Add(time.Second).Format(time.RFC3339Nano), nil)
	if refused.Status.Phase != v1alpha1.RestoreFailed || !strings.Contains(refused.Status.Message, "earliest recoverable time") {
		t.Errorf("a restore to a pruned time: phase %s, message %q; want Failed naming the earliest recoverable time", refused.Status.Phase, refused.Status.Message)
	}
	insert(6)
	acked = time.Now()
	eventually(t, 3*time.Minute, "the archive past row 6", func() error {
		getJSON(t, &b, "backup", src)
		if lr := b.Status.PointInTime.LastRecoverableTime; lr == nil || !lr.After(acked) {
			return errors.New("not yet")
		}
		return nil
	})
	restore(src+"-latest-2", "", []int{1, 2, 3, 4, 5, 6})

	// A verification recovers the archive to its latest point beside the
	// dump's restore, in its own pod.
	kubectl(t, "patch", "backup", src, "--type=merge", "-p", `{"spec":{"verify":{"schedule":"0 0 1 1 *"}}}`)
	kubectl(t, "annotate", "--overwrite", "backup", src, v1alpha1.AnnotationVerifyNow+"=pitr")
	began = time.Now()
	eventually(t, 5*time.Minute, "a verification with a point-in-time recovery", func() error {
		getJSON(t, &b, "backup", src)
		v := b.Status.LastVerified
		if v == nil || v.PointInTime == nil {
			return fmt.Errorf("last verification %+v", v)
		}
		return nil
	})
	v := b.Status.LastVerified
	if !v.Passed || !v.PointInTime.Passed || v.PointInTime.Tables < 1 || v.PointInTime.Rows < 6 || v.PointInTime.RecoveryPoint == nil {
		t.Fatalf("verification %+v, recovery %+v", v, v.PointInTime)
	}
	if strings.HasPrefix(v.Backup, "pitr/") {
		t.Errorf("the verification checked base backup %s instead of the newest dump", v.Backup)
	}
	t.Logf("verification %v after the annotation: dump %s in %ds; recovery to the latest point from %s in %ds: %d tables, %d rows, point %s",
		time.Since(began).Round(time.Second), v.Backup, v.DurationSeconds, v.PointInTime.BaseBackup, v.PointInTime.DurationSeconds,
		v.PointInTime.Tables, v.PointInTime.Rows, v.PointInTime.RecoveryPoint.UTC().Format(time.RFC3339))
}

// storeKeys lists the emulator's keys under a prefix.
func storeKeys(t *testing.T, s3 *storetest.S3Server, prefix string) []string {
	t.Helper()
	list, err := s3.Backend.ListBucket(storetest.Bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list.Contents {
		keys = append(keys, c.Key)
	}
	return keys
}

// idsOf lists the ids in marks.
func idsOf(t *testing.T, e dumpEngine, pod string) []int {
	t.Helper()
	var ids []int
	for _, line := range strings.Fields(e.must(t, pod, `select id from marks order by id`)) {
		n, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("id %q: %v", line, err)
		}
		ids = append(ids, n)
	}
	return ids
}
