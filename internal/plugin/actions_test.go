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

package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// playOperator calls step every 20 ms in the background, as the operator
// would reconcile, until step returns true or the test ends.
func playOperator(t *testing.T, step func(ctx context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if step(ctx) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// runBackups plays the Backup controller's part for on-demand runs: it
// answers a new steward.dev/backup-now value with a run of its Job, which
// succeeds or fails with message.
func runBackups(t *testing.T, ns, name string, succeed bool, message string) {
	playOperator(t, func(ctx context.Context) bool {
		b := &v1alpha1.Backup{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b) != nil {
			return false
		}
		want := b.Annotations[v1alpha1.AnnotationBackupNow]
		if want == "" || want == b.Status.LastManualRun {
			return false
		}
		run := v1alpha1.BackupRun{Job: b.ManualJobName(want), StartTime: ptr.To(at(-time.Minute)), CompletionTime: ptr.To(at(0)),
			Succeeded: succeed, Message: message, DurationSeconds: 38}
		if succeed {
			run.Object, run.Size = "orders/2026-12-01T120000Z.dump", 13<<20
			b.Status.LastBackup = &run
		}
		b.Status.LastManualRun = want
		b.Status.History = append([]v1alpha1.BackupRun{run}, b.Status.History...)
		if err := k8s.Status().Update(ctx, b); err != nil {
			t.Logf("writing the status of backup %s: %v", name, err)
		}
		return false // every new value gets its run
	})
}

func TestBackup(t *testing.T) {
	h := newHarness(t)
	_, b := h.orders()
	running := h.operatorRunning()

	// A Database names the Backup that its spec.backup creates.
	out := h.run("backup", "orders").ok(t)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	value := b.Annotations[v1alpha1.AnnotationBackupNow]
	if value == "" || !strings.Contains(out, fmt.Sprintf("backup/orders-backup: asked for a run now (steward.dev/backup-now=%s); the operator runs it as Job %s.", value, b.ManualJobName(value))) {
		t.Errorf("annotation %q, output:\n%s", value, out)
	}

	t.Run("wait", func(t *testing.T) {
		runBackups(t, h.ns, "orders-backup", true, "")
		out := h.run("backup", "backup/orders-backup", "--wait", running).ok(t)
		for _, want := range []string{"The operator started Job orders-backup-now-", "Backup succeeded: job orders-backup-now-",
			"2026-12-01T12:00:00Z (0s ago), 13.0 MiB in 38s, orders/2026-12-01T120000Z.dump"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
	t.Run("failed", func(t *testing.T) {
		runBackups(t, h.ns, "orders-backup", false, "uploading to s3 backups: AccessDenied")
		h.run("backup", "database/orders", "--wait", running).fails(t, "failed: uploading to s3 backups: AccessDenied")
	})

	// Two Backups of one database, neither its own: say which to run.
	for _, name := range []string{"payments-hourly", "payments-daily"} {
		h.create(decode[v1alpha1.Backup](t, `
metadata: {name: `+name+`}
spec:
  source: {type: mysql, databaseRef: {name: payments}}
  destination: {type: s3, bucket: backups}
  schedule: "@daily"
`))
	}
	h.create(decode[v1alpha1.Database](t, `
metadata: {name: payments}
spec: {engine: mariadb, version: "11.4"}
`), decode[v1alpha1.Database](t, `
metadata: {name: sessions}
spec: {engine: postgres, version: "17"}
`))
	h.run("backup", "payments").fails(t, `database "payments" has 2 Backups (backup/payments-daily, backup/payments-hourly): name the one to run`)
	h.run("backup", "sessions").fails(t, `database "sessions" has no Backup: set its spec.backup, or create a Backup whose spec.source.databaseRef names it`)
	h.run("backup", "webapp/sessions").fails(t, `"webapp/sessions": give a Backup or a Database`)
}

func TestRestoreIntoDatabase(t *testing.T) {
	h := newHarness(t)
	h.orders()
	running := h.operatorRunning()
	h.run("restore", "orders-backup", "--to", "orders", "--time", "2026-12-01T10:00:00Z").fails(t,
		"--time: backup/orders-backup does not archive the log (no spec.pointInTime), so only its dumps can be restored; pick one with --object")
	h.run("restore", "orders-backup", "--to", "orders", "--time", "yesterday").fails(t,
		`--time "yesterday" is neither an RFC 3339 time (2026-12-01T10:00:00Z) nor latest`)
	h.run("restore", "orders-backup", "--to", "orders", "--time", "latest", "--object", "x.dump").fails(t,
		"--time and --object exclude each other")
	h.run("restore", "orders-backup").fails(t, "--to DATABASE is required")

	// The operator runs the Restore and reports it.
	playOperator(t, func(ctx context.Context) bool {
		list := &v1alpha1.RestoreList{}
		if k8s.List(ctx, list, client.InNamespace(h.ns)) != nil || len(list.Items) == 0 {
			return false
		}
		rs := &list.Items[0]
		rs.Status = v1alpha1.RestoreStatus{ObservedGeneration: 1, Phase: v1alpha1.RestoreRunning, Job: rs.Name + "-restore",
			Object: "orders/2026-12-01T020000Z.dump", StartTime: ptr.To(at(-time.Minute))}
		if k8s.Status().Update(ctx, rs) != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
		rs.Status.Phase, rs.Status.CompletionTime = v1alpha1.RestoreSucceeded, ptr.To(at(0))
		return k8s.Status().Update(ctx, rs) == nil
	})
	out := h.run("restore", "orders-backup", "--to", "orders", "--overwrite", running).ok(t)
	list := &v1alpha1.RestoreList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(h.ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("restores: %v %v", list.Items, err)
	}
	rs := list.Items[0]
	if !strings.HasPrefix(rs.Name, "orders-restore-") || rs.Spec.Source.BackupRef.Name != "orders-backup" || rs.Spec.Source.Object != "latest" ||
		rs.Spec.Target.Type != v1alpha1.SourcePostgreSQL || rs.Spec.Target.DatabaseRef.Name != "orders" || !rs.Spec.Overwrite {
		t.Errorf("restore: %+v", rs.Spec)
	}
	for _, want := range []string{
		fmt.Sprintf("restore/%s created: latest of backup/orders-backup into database/orders.", rs.Name),
		fmt.Sprintf("restore/%s: Running, Job %s-restore", rs.Name, rs.Name),
		"Restored orders/2026-12-01T020000Z.dump in 1m0s.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}

	h.create(decode[v1alpha1.Database](t, `
metadata: {name: payments}
spec: {engine: mariadb, version: "11.4"}
`))
	h.run("restore", "orders-backup", "--to", "payments", running).fails(t, "backup/orders-backup holds postgresql dumps, and database/payments runs mariadb")
}

func TestRestoreToAPointInTime(t *testing.T) {
	h := newHarness(t)
	_, b := h.orders()
	b.Spec.PointInTime = &v1alpha1.BackupPointInTime{}
	if err := k8s.Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	out := h.run("restore", "orders-backup", "--to", "orders", "--time", "2026-12-01T10:00:00Z", "--overwrite", "--no-wait").ok(t)
	list := &v1alpha1.RestoreList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(h.ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("restores: %v %v", list.Items, err)
	}
	src := list.Items[0].Spec.Source
	if src.PointInTime == nil || src.PointInTime.TargetTime == nil || !src.PointInTime.TargetTime.Equal(&metav1.Time{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}) {
		t.Errorf("source %+v: want pointInTime 2026-12-01T10:00:00Z", src)
	}
	if want := "created: point in time 2026-12-01T10:00:00Z of backup/orders-backup into database/orders."; !strings.Contains(out, want) {
		t.Errorf("no %q in\n%s", want, out)
	}
	h.run("restore", "orders-backup", "--to", "orders-latest", "--time", "latest", "--no-wait").ok(t)
	db := &v1alpha1.Database{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "orders-latest"}, db); err != nil {
		t.Fatal(err)
	}
	if p := db.Spec.Bootstrap.FromBackup.PointInTime; p == nil || p.TargetTime != nil {
		t.Errorf("the new Database's bootstrap %+v: want the latest point", db.Spec.Bootstrap.FromBackup)
	}
}

func TestRestoreFails(t *testing.T) {
	h := newHarness(t)
	h.orders()
	playOperator(t, func(ctx context.Context) bool {
		list := &v1alpha1.RestoreList{}
		if k8s.List(ctx, list, client.InNamespace(h.ns)) != nil || len(list.Items) == 0 {
			return false
		}
		rs := &list.Items[0]
		rs.Status = v1alpha1.RestoreStatus{ObservedGeneration: 1, Phase: v1alpha1.RestoreFailed,
			Message: "database orders already holds 12 tables: set overwrite to replace them"}
		return k8s.Status().Update(ctx, rs) == nil
	})
	h.run("restore", "orders-backup", "--to", "orders", h.operatorRunning()).fails(t,
		"failed: database orders already holds 12 tables: set overwrite to replace them")
	// --no-wait creates it and returns.
	out := h.run("restore", "orders-backup", "--to", "orders", "--no-wait", "--object", "orders/2026-11-30T020000Z.dump").ok(t)
	if !strings.Contains(out, "of backup/orders-backup into database/orders.\nFollow it with: kubectl steward status restore/orders-restore-") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRestoreToNewDatabase(t *testing.T) {
	h := newHarness(t)
	h.orders()
	// The Database controller creates the bootstrap Restore, and the
	// Restore controller runs it.
	playOperator(t, func(ctx context.Context) bool {
		db := &v1alpha1.Database{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "orders-v17"}, db) != nil {
			return false
		}
		rs := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: db.BootstrapRestoreName(), Namespace: h.ns},
			Spec: v1alpha1.RestoreSpec{Source: db.Spec.Bootstrap.FromBackup,
				Target: v1alpha1.RestoreTarget{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: db.Name}}}}
		if err := k8s.Create(ctx, rs); err != nil {
			return false
		}
		db.Status.BootstrapRestore = rs.Name
		if k8s.Status().Update(ctx, db) != nil {
			return false
		}
		rs.Status = v1alpha1.RestoreStatus{Phase: v1alpha1.RestoreSucceeded, Object: "orders/2026-12-01T020000Z.dump",
			StartTime: ptr.To(at(-2 * time.Minute)), CompletionTime: ptr.To(at(0))}
		return k8s.Status().Update(ctx, rs) == nil
	})
	out := h.run("restore", "backup/orders-backup", "--to", "orders-v17", "--version", "17", h.operatorRunning()).ok(t)
	for _, want := range []string{
		"database/orders-v17 created (postgres 17, like database/orders) from latest of backup/orders-backup.",
		"restore/orders-v17-bootstrap: Succeeded",
		"Restored orders/2026-12-01T020000Z.dump in 2m0s.",
		"database/orders-v17 is bootstrapped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	db := &v1alpha1.Database{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "orders-v17"}, db); err != nil {
		t.Fatal(err)
	}
	if db.Spec.Version != "17" || *db.Spec.Replicas != 3 || db.Spec.Backup != nil ||
		db.Spec.Bootstrap.FromBackup.BackupRef.Name != "orders-backup" || db.Spec.Bootstrap.FromBackup.Object != "latest" {
		t.Errorf("new database: %+v", db.Spec)
	}

	// A Backup of a database that is gone needs the engine and version.
	h.create(decode[v1alpha1.Backup](t, `
metadata: {name: old-backup}
spec:
  source: {type: mysql, databaseRef: {name: old}}
  destination: {type: s3, bucket: backups}
  schedule: "@daily"
`))
	h.run("restore", "old-backup", "--to", "old-copy", "--no-wait").fails(t,
		`database "old-copy" does not exist, and the source of backup/old-backup is no Database to copy: give --engine and --version`)
	h.run("restore", "old-backup", "--to", "old-copy", "--no-wait", "--engine", "mariadb", "--version", "11.4").ok(t)
}

func TestSwitchover(t *testing.T) {
	h := newHarness(t)
	db, _ := h.orders()
	running := h.operatorRunning()
	h.run("switchover", "orders", "--to", "orders-0").fails(t, `database "orders": orders-0 is the primary already`)
	h.run("switchover", "orders", "--to", "orders-9").fails(t, `database "orders" has no instance "orders-9"; its replicas: orders-1, orders-2`)

	t.Run("done", func(t *testing.T) {
		playOperator(t, func(ctx context.Context) bool {
			cur := &v1alpha1.Database{}
			if k8s.Get(ctx, client.ObjectKeyFromObject(db), cur) != nil || cur.Annotations[v1alpha1.AnnotationSwitchoverTo] != "orders-1" {
				return false
			}
			cur.Status.Primary, cur.Status.Term = "orders-1", 5
			cur.Status.LastRoleChange = &v1alpha1.DatabaseRoleChange{Type: v1alpha1.RoleChangeSwitchover, From: "orders-0", To: "orders-1",
				Term: 5, Reason: "requested", StartedAt: at(-time.Second), FinishedAt: ptr.To(at(0)), WriteGapMilliseconds: 830}
			if k8s.Status().Update(ctx, cur) != nil {
				return false
			}
			delete(cur.Annotations, v1alpha1.AnnotationSwitchoverTo)
			return k8s.Update(ctx, cur) == nil
		})
		out := h.run("switchover", "orders", "--to", "orders-1", running).ok(t)
		for _, want := range []string{
			"database/orders: asked for a switchover from orders-0 to orders-1 (steward.dev/switchover-to=orders-1).",
			"orders-1 is the primary (term 5), was orders-0; no instance accepted writes for 0.8 s.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		playOperator(t, func(ctx context.Context) bool {
			cur := &v1alpha1.Database{}
			if k8s.Get(ctx, client.ObjectKeyFromObject(db), cur) != nil || cur.Annotations[v1alpha1.AnnotationSwitchoverTo] != "any" {
				return false
			}
			h.event(cur, "Database", v1alpha1.EventSwitchoverRefused, "Switchover to any refused: no replica is ready and caught up", 0, 1)
			delete(cur.Annotations, v1alpha1.AnnotationSwitchoverTo)
			return k8s.Update(ctx, cur) == nil
		})
		h.run("switchover", "orders", running).fails(t, "the operator refused the switchover: Switchover to any refused: no replica is ready and caught up")
	})
	out := h.run("switchover", "orders", "--no-wait").ok(t)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(db), db); err != nil {
		t.Fatal(err)
	}
	if db.Annotations[v1alpha1.AnnotationSwitchoverTo] != "any" || !strings.Contains(out, "to any") {
		t.Errorf("annotation %v, output %s", db.Annotations, out)
	}

	h.create(decode[v1alpha1.Database](t, `
metadata: {name: ledger}
spec: {engine: mysql, version: "8.4", replicas: 2}
`), decode[v1alpha1.Database](t, `
metadata: {name: tiny}
spec: {engine: postgres, version: "17"}
`))
	h.run("switchover", "ledger").fails(t, `database "ledger" runs mysql: Steward keeps its first instance as the primary, and switches over PostgreSQL and MariaDB only`)
	h.run("switchover", "tiny").fails(t, `database "tiny" has 0 instance(s): a switchover needs a replica`)
}

func TestRestartAndReloadAreNotSupported(t *testing.T) {
	h := newHarness(t)
	h.run("restart", "orders").fails(t, "restart is not supported by this operator version: it has no restart request (no annotation or field asks for one); it rolls a Database's pods itself")
	h.run("reload", "orders").fails(t, "reload is not supported by this operator version: it has no reload request (no annotation or field asks for one); it reloads the engine itself")
}
