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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/secrettest"
	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// dumpEngine is an engine whose Databases the backup tests fill, dump,
// and restore, read with the engine's own client.
type dumpEngine struct {
	short, engine, version string
	sourceType             v1alpha1.BackupSourceType
	// container is the instance's container; client runs the engine's
	// client in it as the Database's owner over the instance manager's
	// socket, with SQL on standard input: the credentials never leave the
	// pod.
	container, client string
	// fill creates a few tables of rows; tables lists the database's
	// tables, one a line.
	fill, tables string
	// checksum is SQL whose answer is a table's row count and a checksum
	// of its rows, computed by the server.
	checksum func(table string) string
}

var dumpEngines = []dumpEngine{
	{
		short: "pg", engine: "postgres", version: "15", sourceType: v1alpha1.SourcePostgreSQL,
		container: "postgres",
		client:    `PGPASSWORD="$STEWARD_OWNER_PASSWORD" exec psql -h /steward/run -U "$STEWARD_OWNER_USERNAME" -d "$STEWARD_DATABASE" -qAt -v ON_ERROR_STOP=1`,
		fill: `create table items (
  id int primary key, name text not null, price numeric(10,2), created timestamptz, tags text[], attrs jsonb);
insert into items
  select g, 'item ' || g, g * 0.37, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute',
         array['t' || g % 7, 't' || g % 11], jsonb_build_object('n', g, 'even', g % 2 = 0)
  from generate_series(1, 10000) g;
create table events (id bigserial primary key, item_id int references items (id), body bytea, note text);
insert into events (item_id, body, note)
  select g % 10000 + 1, decode(md5(g::text), 'hex'), case when g % 5 = 0 then null else 'é ' || g end
  from generate_series(1, 10000) g;
create table empty_table (x int);`,
		tables: `select tablename from pg_tables where schemaname = 'public' order by 1`,
		checksum: func(table string) string {
			return fmt.Sprintf(`select count(*) || ' rows, md5 ' || coalesce(md5(string_agg(t::text, ',' order by t::text)), '-') from %q t`, table)
		},
	},
	{
		short: "maria", engine: "mariadb", version: "10.11", sourceType: v1alpha1.SourceMySQL,
		container: "mariadb",
		client:    `MYSQL_PWD="$STEWARD_OWNER_PASSWORD" exec mariadb -S /steward/run/mysqld.sock -u "$STEWARD_OWNER_USERNAME" -N -B "$STEWARD_DATABASE"`,
		fill: `create table items (
  id int primary key, name varchar(64) not null, price decimal(10,2), created datetime(3), body blob);
insert into items
  select seq, concat('item ', seq), seq * 0.37, timestamp '2026-01-01 00:00:00' + interval seq minute, unhex(md5(seq))
  from seq_1_to_10000;
create table notes (
  id int auto_increment primary key, item_id int, note text character set utf8mb4,
  foreign key (item_id) references items (id));
insert into notes (item_id, note)
  select seq % 10000 + 1, if(seq % 5 = 0, null, concat('é ', seq)) from seq_1_to_10000;
create table empty_table (x int);`,
		tables: `select table_name from information_schema.tables where table_schema = database() order by 1`,
		checksum: func(table string) string {
			return fmt.Sprintf("select concat(count(*), ' rows') from `%[1]s`; checksum table `%[1]s` extended", table)
		},
	},
}

// storeSecretOf names the Secret with the S3 emulator's credentials that
// startStore creates for t's top-level test: one per test, so that tests
// running side by side do not delete each other's.
func storeSecretOf(t *testing.T) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return "store-" + strings.ToLower(strings.TrimPrefix(top, "Test"))
}

// TestBackupAndRestore runs, for a PostgreSQL and a MariaDB Database of
// one instance each, filled with a few tables, a scheduled and an
// on-demand Backup as real Jobs into an S3 emulator that the pods reach
// inside the cluster's network; checks each stored dump against the
// Backup's status and its manifest; refuses to restore a dump whose bytes
// were changed in the bucket, leaving the target empty; and restores the
// scheduled dump into a new Database, with a Restore and with
// bootstrap.fromBackup, whose tables are row for row those of the source.
//
// Beside them, a Backup whose credentials the store refuses fails the check
// of its destination and the deletion of its dumps, both Jobs in real
// containers, and none of its planted credentials reaches a status, an
// event, a pod's termination message or log, or the operator's log.
func TestBackupAndRestore(t *testing.T) {
	requireClusterBeside(t)
	s3 := startStore(t)
	for _, e := range dumpEngines {
		t.Run(e.engine, func(t *testing.T) {
			t.Parallel()
			backupAndRestore(t, e, s3)
		})
	}
	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		credentialsStayInTheirPods(t, s3)
	})
}

func backupAndRestore(t *testing.T, e dumpEngine, s3 *storetest.S3Server) {
	src, dst := "bk-"+e.short, "bk-"+e.short+"-copy"
	applyDumpDatabase(t, src, e, "")
	applyDumpDatabase(t, dst, e, "")
	for _, name := range []string{src, dst} {
		eventually(t, 7*time.Minute, "Database "+name+" Ready", func() error { return databaseReady(t, name) })
		t.Logf("%s %s Database %s Ready %v after its creation", e.engine, e.version, name, readyTook(t, name))
	}

	began := time.Now()
	e.must(t, src+"-0", e.fill)
	want := e.tableChecksums(t, src+"-0")
	t.Logf("%s filled in %v: %v", src, time.Since(began).Round(time.Millisecond), want)
	if len(want) != 3 || !strings.HasPrefix(want["items"], "10000 rows") {
		t.Fatalf("the source's tables are %v, want 3 with 10000 rows in items", want)
	}

	// A Backup scheduled every minute and asked for a run now: the
	// on-demand Job starts at once, the CronJob's at the next minute.
	prefix := "realnode/" + src
	now := fmt.Sprint(time.Now().Unix())
	began = time.Now()
	applyAndDelete(t, "backup/"+src, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Backup
metadata:
  name: %[1]s
  namespace: default
  annotations: {%[2]s: %[3]q}
spec:
  source: {type: %[4]s, databaseRef: {name: %[1]s}}
  destination:
    type: s3
    bucket: %[5]s
    prefix: %[6]s
    endpoint: %[7]s
    allowInsecureEndpoint: true
    credentialsSecretRef: {name: %[8]s}
  schedule: "* * * * *"
`, src, v1alpha1.AnnotationBackupNow, now, e.sourceType, storetest.Bucket, prefix, s3.Destination.Endpoint, storeSecretOf(t)))
	manual, scheduled := waitForRuns(t, src, now, began)
	var checked v1alpha1.Backup
	getJSON(t, &checked, "backup", src)
	if c := meta.FindStatusCondition(checked.Status.Conditions, v1alpha1.ConditionDestinationChecked); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Backup %s: DestinationChecked %+v, want True: its check Job, in the operator's image, reached the store", src, c)
	}
	// No more scheduled runs: the test has what it needs.
	kubectl(t, "patch", "backup", src, "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	for _, run := range []v1alpha1.BackupRun{manual, scheduled} {
		checkStored(t, s3, prefix, e.sourceType, run)
		res := jobResult(t, run.Job)
		t.Logf("%s: Job %s stored %s, %d bytes, sha256 %s: the run %.2fs, the Job from its start %v",
			src, run.Job, run.Object, run.Size, run.SHA256, res.DurationSeconds, run.CompletionTime.Sub(run.StartTime.Time))
	}

	// A third Database starts from the scheduled dump, with
	// bootstrap.fromBackup; it is checked at the end.
	boot := "bk-" + e.short + "-boot"
	bootBegan := time.Now()
	applyDumpDatabase(t, boot, e, fmt.Sprintf("  bootstrap:\n    fromBackup: {backupRef: {name: %s}, object: %q}\n", src, scheduled.Object))

	// The on-demand dump with one byte changed in the bucket is refused
	// before the target is touched.
	corruptObject(t, s3, prefix+"/"+manual.Object)
	began = time.Now()
	bad := waitForRestore(t, applyRestore(t, src+"-corrupted", src, manual.Object, dst, e.sourceType))
	if bad.Status.Phase != v1alpha1.RestoreFailed {
		t.Fatalf("the restore of the corrupted dump: phase %s (%s), want Failed", bad.Status.Phase, bad.Status.Message)
	}
	for _, part := range []string{"backup checksum mismatch", manual.Object, "its manifest says", manual.SHA256, "the target was not touched"} {
		if !strings.Contains(bad.Status.Message, part) {
			t.Errorf("the failed restore's message %q does not say %q", bad.Status.Message, part)
		}
	}
	if c := meta.FindStatusCondition(bad.Status.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the failed restore is not Degraded: %+v", bad.Status.Conditions)
	}
	if tables := e.must(t, dst+"-0", e.tables); tables != "" {
		t.Errorf("after the refused restore the target has tables %q, want none", tables)
	}
	t.Logf("%s: the corrupted dump refused %v after the Restore's creation: %s",
		src, time.Since(began).Round(time.Millisecond), bad.Status.Message)

	// The scheduled dump restores into the new Database, row for row.
	began = time.Now()
	good := waitForRestore(t, applyRestore(t, dst, src, scheduled.Object, dst, e.sourceType))
	if good.Status.Phase != v1alpha1.RestoreSucceeded || good.Status.Object != scheduled.Object {
		t.Fatalf("the restore of %s: phase %s, object %q (%s); want Succeeded", scheduled.Object,
			good.Status.Phase, good.Status.Object, good.Status.Message)
	}
	res := jobResult(t, good.Status.Job)
	if res.SHA256 != scheduled.SHA256 || res.Size != scheduled.Size {
		t.Errorf("the restore verified %d bytes with sha256 %s, the backup stored %d with %s", res.Size, res.SHA256, scheduled.Size, scheduled.SHA256)
	}
	got := e.tableChecksums(t, dst+"-0")
	if !maps.Equal(got, want) {
		t.Errorf("the restored tables differ from the source's:\n got  %v\n want %v", got, want)
	}
	t.Logf("%s: %s restored into %s %v after the Restore's creation: the run %.2fs, the Job from its start %v; %d tables equal",
		src, scheduled.Object, dst, time.Since(began).Round(time.Millisecond), res.DurationSeconds,
		good.Status.CompletionTime.Sub(good.Status.StartTime.Time), len(got))

	eventually(t, 5*time.Minute, "Database "+boot+" Ready", func() error {
		var db v1alpha1.Database
		getJSON(t, &db, "database", boot)
		if c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionDegraded); c != nil && c.Reason == v1alpha1.ReasonBootstrapFailed {
			t.Fatalf("Database %s: %s", boot, c.Message)
		}
		return databaseReady(t, boot)
	})
	var db v1alpha1.Database
	getJSON(t, &db, "database", boot)
	if c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionBootstrapped); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, scheduled.Object) {
		t.Errorf("Database %s's Bootstrapped condition does not name %s: %+v", boot, scheduled.Object, c)
	}
	var bootRestore v1alpha1.Restore
	getJSON(t, &bootRestore, "restore", db.Status.BootstrapRestore)
	res = jobResult(t, bootRestore.Status.Job)
	if got := e.tableChecksums(t, boot+"-0"); !maps.Equal(got, want) {
		t.Errorf("the tables of %s, bootstrapped from the backup, differ from the source's:\n got  %v\n want %v", boot, got, want)
	}
	t.Logf("%s: bootstrapped from %s and Ready %v after its creation (%v by its own timestamps): the restore run %.2fs, its Job from its start %v",
		boot, scheduled.Object, time.Since(bootBegan).Round(time.Millisecond), readyTook(t, boot), res.DurationSeconds,
		bootRestore.Status.CompletionTime.Sub(bootRestore.Status.StartTime.Time))
}

// largeBackupEnv, set to 1, runs TestBackupLargePostgres.
const largeBackupEnv = "STEWARD_BACKUP_LARGE"

// TestBackupLargePostgres measures a backup and a restore of a PostgreSQL
// database of about 150 MB (a million rows of about 100 bytes). It takes
// minutes, too long for every run: it runs only when
// STEWARD_BACKUP_LARGE=1.
func TestBackupLargePostgres(t *testing.T) {
	if os.Getenv(largeBackupEnv) != "1" {
		t.Skipf("skipping: it takes minutes; %s=1 runs it", largeBackupEnv)
	}
	requireClusterBeside(t)
	s3 := startStore(t)
	e := dumpEngines[0]
	src, dst := "bk-large", "bk-large-copy"
	storage := "  storage: {size: 2Gi}\n"
	applyDumpDatabase(t, src, e, storage)
	applyDumpDatabase(t, dst, e, storage)
	for _, name := range []string{src, dst} {
		eventually(t, 7*time.Minute, "Database "+name+" Ready", func() error { return databaseReady(t, name) })
	}
	began := time.Now()
	e.must(t, src+"-0", `create table big (id int primary key, payload text, at timestamptz);
insert into big select g, md5(g::text) || md5((g * 7)::text) || 'abcdefghijklmnopqrstuvwxyz0123', now()
  from generate_series(1, 1000000) g;`)
	checksum := `select count(*) || ' rows, md5 ' || md5(string_agg(md5(t::text), '' order by id)) from big t`
	want := e.must(t, src+"-0", checksum)
	size := e.must(t, src+"-0", `select pg_size_pretty(pg_database_size(current_database())) || ', table ' || pg_size_pretty(pg_total_relation_size('big'))`)
	t.Logf("%s filled in %v: %s; database %s", src, time.Since(began).Round(time.Millisecond), want, size)

	now := fmt.Sprint(time.Now().Unix())
	began = time.Now()
	prefix := "realnode/" + src
	applyAndDelete(t, "backup/"+src, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Backup
metadata:
  name: %[1]s
  namespace: default
  annotations: {%[2]s: %[3]q}
spec:
  source: {type: postgresql, databaseRef: {name: %[1]s}}
  destination:
    type: s3
    bucket: %[4]s
    prefix: %[5]s
    endpoint: %[6]s
    allowInsecureEndpoint: true
    credentialsSecretRef: {name: %[7]s}
  schedule: "@yearly"
  suspend: true
`, src, v1alpha1.AnnotationBackupNow, now, storetest.Bucket, prefix, s3.Destination.Endpoint, storeSecretOf(t)))
	var run v1alpha1.BackupRun
	eventually(t, 15*time.Minute, "the on-demand backup of "+src, func() error {
		var b v1alpha1.Backup
		getJSON(t, &b, "backup", src)
		if len(b.Status.History) == 0 {
			return fmt.Errorf("no run yet: %+v", b.Status.Conditions)
		}
		run = b.Status.History[0]
		if !run.Succeeded {
			t.Fatalf("Job %s failed: %s", run.Job, run.Message)
		}
		return nil
	})
	tookBackup := time.Since(began)
	checkStored(t, s3, prefix, e.sourceType, run)
	res := jobResult(t, run.Job)
	t.Logf("%s: %d bytes stored %v after the annotation: the run %.2fs, the Job from its start %v",
		src, run.Size, tookBackup.Round(time.Millisecond), res.DurationSeconds, run.CompletionTime.Sub(run.StartTime.Time))

	began = time.Now()
	rs := waitForRestore(t, applyRestore(t, dst, src, run.Object, dst, e.sourceType))
	if rs.Status.Phase != v1alpha1.RestoreSucceeded {
		t.Fatalf("the restore: phase %s: %s", rs.Status.Phase, rs.Status.Message)
	}
	res = jobResult(t, rs.Status.Job)
	t.Logf("%s: restored into %s %v after the Restore's creation: the run %.2fs, the Job from its start %v",
		src, dst, time.Since(began).Round(time.Millisecond), res.DurationSeconds, rs.Status.CompletionTime.Sub(rs.Status.StartTime.Time))
	if got := e.must(t, dst+"-0", checksum); got != want {
		t.Errorf("the restored table: %s, the source's: %s", got, want)
	}
}

// credentialsStayInTheirPods plants credentials the store refuses in a
// Backup's Secrets and endpoint, and looks for them wherever the check and
// the deletion of its dumps could have written them.
func credentialsStayInTheirPods(t *testing.T, s3 *storetest.S3Server) {
	const name = "bk-leak"
	p := secrettest.New(t)
	secret := func(name string, data map[string][]byte) {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(data)) {
			fmt.Fprintf(&b, "  %s: %s\n", k, base64.StdEncoding.EncodeToString(data[k]))
		}
		applyAndDelete(t, "secret/"+name, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: default\ndata:\n%s", name, b.String()))
	}
	secret(name+"-store", p.S3Credentials())
	secret(name+"-db", map[string][]byte{"username": []byte("backup"), "password": []byte(p.DBPassword)})
	applyAndDelete(t, "backup/"+name, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Backup
metadata:
  name: %[1]s
  namespace: default
spec:
  source:
    type: postgresql
    connection: {host: nowhere.invalid, database: shop, credentialsSecretRef: {name: %[1]s-db}}
  destination:
    type: s3
    bucket: %[2]s
    endpoint: %[3]q
    allowInsecureEndpoint: true
    credentialsSecretRef: {name: %[1]s-store}
  schedule: "@yearly"
  suspend: true
  deletionPolicy: Delete
`, name, storetest.Bucket, p.WithUser(s3.Destination.Endpoint)))
	reason := func(condition string) string {
		var b v1alpha1.Backup
		getJSON(t, &b, "backup", name)
		if c := meta.FindStatusCondition(b.Status.Conditions, condition); c != nil {
			return c.Reason
		}
		return ""
	}
	eventually(t, 4*time.Minute, "the refused check of "+name, func() error {
		if r := reason(v1alpha1.ConditionDestinationChecked); r != v1alpha1.ReasonCredentialsRefused {
			return fmt.Errorf("DestinationChecked reason %q", r)
		}
		return nil
	})
	kubectl(t, "delete", "backup", name, "--wait=false")
	eventually(t, 4*time.Minute, "the refused deletion of the dumps of "+name, func() error {
		if r := reason(v1alpha1.ConditionReady); r != v1alpha1.ReasonDeleteFailed {
			return fmt.Errorf("Ready reason %q", r)
		}
		return nil
	})
	var seen strings.Builder
	seen.WriteString(kubectl(t, "get", "backup", name, "-o", "jsonpath={.status}"))
	seen.WriteString(kubectl(t, "get", "events", "--field-selector=involvedObject.name="+name, "-o", "jsonpath={.items[*].message}"))
	for _, label := range []string{v1alpha1.LabelBackupCheck, v1alpha1.LabelBackupDelete} {
		seen.WriteString(kubectl(t, "get", "pods", "-l", label+"="+name, "-o", "jsonpath={.items[*].status.containerStatuses[*].state.terminated.message}"))
		// A check's pod may be gone with its Job, once its result was read.
		logs, _ := devenv.Kubectl(t.Context(), cluster, nil, "logs", "-l", label+"="+name, "--tail=-1", "--ignore-errors")
		seen.WriteString(logs)
	}
	operatorLog := kubectl(t, "logs", "--namespace", devenv.OperatorNamespace, "deployment/"+devenv.OperatorRelease, "--tail=-1")
	if found := p.Find(seen.String()); len(found) > 0 {
		t.Errorf("the status, events, or the Jobs' pods hold planted credentials %v:\n%s", found, seen.String())
	}
	if found := p.Find(operatorLog); len(found) > 0 {
		t.Errorf("the operator's log holds planted credentials %v", found)
	}
	kubectl(t, "patch", "backup", name, "--type=merge", "-p", `{"spec":{"deletionPolicy":"Retain"}}`)
	kubectl(t, "wait", "--for=delete", "backup/"+name, "--timeout=120s")
}

// startStore serves the S3 emulator on a listener inside the cluster's
// network, where pods reach it at http://10.250.0.1:<port> and nothing
// outside the machine can, and creates the Secret with its credentials.
// The test reads and changes the objects through the emulator's in-memory
// backend: the cluster's addresses are not reachable from the test's own
// network namespace.
func startStore(t *testing.T) *storetest.S3Server {
	t.Helper()
	l, err := cluster.Listen()
	if err != nil {
		t.Fatal(err)
	}
	s3 := storetest.S3On(t, l)
	var data strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s3.Credentials)) {
		fmt.Fprintf(&data, "  %s: %q\n", k, s3.Credentials[k])
	}
	applyAndDelete(t, "secret/"+storeSecretOf(t), fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: default
stringData:
%s`, storeSecretOf(t), data.String()))
	return s3
}

// applyDumpDatabase creates a Database of one instance with small
// requests, and deletes it with its volume when the test ends: a Database
// created again under the same name must not adopt the tables of an
// earlier run.
func applyDumpDatabase(t *testing.T, name string, e dumpEngine, extra string) {
	t.Helper()
	applyAndDelete(t, "database/"+name, databaseManifest(name, e.engine, e.version, 1, extra))
}

// applyRestore creates a Restore of a Backup's object into a Database and
// returns its name.
func applyRestore(t *testing.T, name, backup, object, target string, typ v1alpha1.BackupSourceType) string {
	t.Helper()
	applyAndDelete(t, "restore/"+name, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: Restore
metadata:
  name: %s
  namespace: default
spec:
  source: {backupRef: {name: %s}, object: %q}
  target: {type: %s, databaseRef: {name: %s}}
`, name, backup, object, typ, target))
	return name
}

// getJSON reads an object with kubectl get into a typed value.
func getJSON(t *testing.T, into any, args ...string) {
	t.Helper()
	out := kubectl(t, append(append([]string{"get"}, args...), "-o", "json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("kubectl get %v: %v", args, err)
	}
}

// databaseReady says why a Database is not Ready, or nil.
func databaseReady(t *testing.T, name string) error {
	var db v1alpha1.Database
	getJSON(t, &db, "database", name)
	if c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("phase %s, conditions %+v", db.Status.Phase, db.Status.Conditions)
	}
	return nil
}

// readyTook is how long a Ready Database took from its creation to Ready,
// by its own timestamps.
func readyTook(t *testing.T, name string) time.Duration {
	var db v1alpha1.Database
	getJSON(t, &db, "database", name)
	c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		t.Fatalf("Database %s has no Ready condition", name)
	}
	return c.LastTransitionTime.Sub(db.CreationTimestamp.Time)
}

// sql runs SQL in an instance with the engine's client.
func (e dumpEngine) sql(ctx context.Context, pod, sql string) (string, error) {
	return execIn(ctx, pod, e.container, sql, "sh", "-c", e.client)
}

// must runs SQL in an instance and fails the test when it fails.
func (e dumpEngine) must(t *testing.T, pod, sql string) string {
	t.Helper()
	out, err := e.sql(t.Context(), pod, sql)
	if err != nil {
		t.Fatalf("%s: %v: %s", pod, err, out)
	}
	return out
}

// tableChecksums maps each table of an instance's database to its row
// count and the checksum of its rows.
func (e dumpEngine) tableChecksums(t *testing.T, pod string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, table := range strings.Fields(e.must(t, pod, e.tables)) {
		sums[table] = strings.Join(strings.Fields(e.must(t, pod, e.checksum(table))), " ")
	}
	return sums
}

// waitForRuns waits until a Backup's history holds a successful run of
// the on-demand Job for the annotation's value and one of a scheduled Job,
// failing at the first failed run, and logs when each appeared.
func waitForRuns(t *testing.T, name, value string, began time.Time) (manual, scheduled v1alpha1.BackupRun) {
	t.Helper()
	manualJob := (&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}}).ManualJobName(value)
	eventually(t, 4*time.Minute, "an on-demand and a scheduled run of Backup "+name, func() error {
		var b v1alpha1.Backup
		getJSON(t, &b, "backup", name)
		for _, run := range b.Status.History {
			if !run.Succeeded {
				t.Fatalf("Backup %s: Job %s failed: %s", name, run.Job, run.Message)
			}
			switch {
			case run.Job == manualJob && manual.Job == "":
				manual = run
				t.Logf("%s: the on-demand run succeeded %v after the Backup's creation", name, time.Since(began).Round(time.Second))
			case run.Job != manualJob && scheduled.Job == "":
				scheduled = run
				t.Logf("%s: the scheduled run succeeded %v after the Backup's creation", name, time.Since(began).Round(time.Second))
			}
		}
		if manual.Job == "" || scheduled.Job == "" {
			return fmt.Errorf("runs %+v, conditions %+v", b.Status.History, b.Status.Conditions)
		}
		return nil
	})
	return manual, scheduled
}

// checkStored reads a run's dump and its manifest from the emulator and
// checks them against the run's status: the object is there and not
// empty, and its size and SHA-256 are those the status and the manifest
// claim.
func checkStored(t *testing.T, s3 *storetest.S3Server, prefix string, typ v1alpha1.BackupSourceType, run v1alpha1.BackupRun) {
	t.Helper()
	key := prefix + "/" + run.Object
	data := readObject(t, s3, key)
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if len(data) == 0 || int64(len(data)) != run.Size || got != run.SHA256 {
		t.Errorf("%s holds %d bytes with sha256 %s; the status says %d bytes with %s", key, len(data), got, run.Size, run.SHA256)
	}
	var m dump.Manifest
	if err := json.Unmarshal(readObject(t, s3, key+dump.ManifestSuffix), &m); err != nil {
		t.Fatalf("the manifest of %s: %v", key, err)
	}
	if m.Key != run.Object || m.Size != int64(len(data)) || m.SHA256 != got || m.Type != string(typ) {
		t.Errorf("the manifest of %s says key %s, %d bytes, sha256 %s, type %s; the object is %d bytes with %s, of type %s",
			key, m.Key, m.Size, m.SHA256, m.Type, len(data), got, typ)
	}
}

// readObject reads an object from the emulator's backend.
func readObject(t *testing.T, s3 *storetest.S3Server, key string) []byte {
	t.Helper()
	obj, err := s3.Backend.GetObject(storetest.Bucket, key, nil)
	if err != nil {
		t.Fatalf("%s is not in the bucket: %v", key, err)
	}
	defer func() { _ = obj.Contents.Close() }()
	data, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return data
}

// corruptObject changes one byte in the middle of an object, keeping its
// size and metadata.
func corruptObject(t *testing.T, s3 *storetest.S3Server, key string) {
	t.Helper()
	obj, err := s3.Backend.HeadObject(storetest.Bucket, key)
	if err != nil {
		t.Fatalf("%s is not in the bucket: %v", key, err)
	}
	data := readObject(t, s3, key)
	data[len(data)/2] ^= 0xff
	if _, err := s3.Backend.PutObject(storetest.Bucket, key, obj.Metadata, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatalf("overwriting %s: %v", key, err)
	}
}

// waitForRestore waits until a Restore has succeeded or failed.
func waitForRestore(t *testing.T, name string) v1alpha1.Restore {
	t.Helper()
	var rs v1alpha1.Restore
	eventually(t, 5*time.Minute, "Restore "+name+" finished", func() error {
		rs = v1alpha1.Restore{}
		getJSON(t, &rs, "restore", name)
		if p := rs.Status.Phase; p == v1alpha1.RestoreSucceeded || p == v1alpha1.RestoreFailed {
			return nil
		}
		return fmt.Errorf("phase %q: %+v", rs.Status.Phase, rs.Status.Conditions)
	})
	return rs
}

// jobResult is the result a Job's pod left in its termination message.
func jobResult(t *testing.T, job string) dumpcmd.Result {
	t.Helper()
	var pods corev1.PodList
	getJSON(t, &pods, "pods", "-l", "batch.kubernetes.io/job-name="+job)
	for i := range pods.Items {
		res, ok, err := jobs.Result(&pods.Items[i])
		if err != nil {
			t.Fatalf("the result of Job %s: %v", job, err)
		}
		if ok {
			return res
		}
	}
	t.Fatalf("Job %s has no pod with a result: %d pods", job, len(pods.Items))
	return dumpcmd.Result{}
}
