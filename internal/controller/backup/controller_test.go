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

package backup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

func newBackup(ns, name string, mutate ...func(*v1alpha1.Backup)) *v1alpha1.Backup {
	b := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.BackupSpec{
			Source: v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, Connection: &v1alpha1.DatabaseConnection{
				Host: "pg.example", Database: "shop", CredentialsSecretRef: corev1.LocalObjectReference{Name: "pg-login"},
			}},
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups", Prefix: "shop/",
				Endpoint: "http://s3.example:9000", AllowInsecureEndpoint: true, CredentialsSecretRef: &corev1.LocalObjectReference{Name: "s3-keys"}},
			Schedule:  "0 2 * * *",
			Retention: &v1alpha1.BackupRetention{KeepLast: new(int32(3)), MaxAge: &metav1.Duration{Duration: 720 * time.Hour}},
		},
	}
	for _, m := range mutate {
		m(b)
	}
	return b
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

func get(ns, name string, obj client.Object) error {
	return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func waitFor(t *testing.T, ns, name, what string, ok func(*v1alpha1.Backup) bool) *v1alpha1.Backup {
	t.Helper()
	b := &v1alpha1.Backup{}
	eventually(t, func() error {
		if err := get(ns, name, b); err != nil {
			return err
		}
		if !ok(b) {
			return fmt.Errorf("waiting for %s; status: %+v", what, b.Status)
		}
		return nil
	})
	return b
}

func cond(b *v1alpha1.Backup, t string) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, t)
}

func hasCond(t, status, reason string) func(*v1alpha1.Backup) bool {
	return func(b *v1alpha1.Backup) bool {
		c := cond(b, t)
		return c != nil && string(c.Status) == status && c.Reason == reason
	}
}

// finishJob marks a Job finished and creates its pod with the run's result
// in the termination message, as the Job controller and kubelet would.
func finishJob(t *testing.T, ns, job string, res dumpcmd.Result) {
	t.Helper()
	exit := int32(0)
	if !res.Succeeded {
		exit = 1
	}
	finishJobWith(t, ns, job, string(res.Marshal()), exit)
}

// storeSecret creates the Secret s3-keys that newBackup's destination
// names, with values no store takes.
func storeSecret(t *testing.T, ns string) {
	t.Helper()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: ns},
		StringData: map[string]string{store.AWSAccessKeyID: "AKIAEXAMPLE", store.AWSSecretAccessKey: "not-a-real-secret"}})
}

// checkJob waits for the Job that checks the Backup's destination and
// returns its name.
func checkJob(t *testing.T, ns, backup string) string {
	t.Helper()
	var name string
	eventually(t, func() error {
		list := &batchv1.JobList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelBackupCheck: backup}); err != nil {
			return err
		}
		for _, j := range list.Items {
			if len(j.Status.Conditions) == 0 {
				name = j.Name
				return nil
			}
		}
		return fmt.Errorf("no running check Job of Backup %s", backup)
	})
	return name
}

// passCheck finishes the check of the Backup's destination with success,
// as its pod would against a store that takes the credentials.
func passCheck(t *testing.T, ns, backup string) {
	t.Helper()
	finishJob(t, ns, checkJob(t, ns, backup), dumpcmd.Result{Succeeded: true, CompletionTime: time.Now().UTC()})
	waitFor(t, ns, backup, "the check passed", hasCond(v1alpha1.ConditionDestinationChecked, "True", v1alpha1.ReasonCheckPassed))
}

// createRun creates a Job of the Backup as the CronJob controller would.
func createRun(t *testing.T, ns, backupName, job string) {
	t.Helper()
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return get(ns, backupName, cj) })
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: ns, Labels: cj.Spec.JobTemplate.Labels},
		Spec:       *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	create(t, j)
}

func expectEvent(t *testing.T, ns, name, reason, contains string) {
	t.Helper()
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, contains) {
				return nil
			}
			if e.Regarding.Name == name {
				seen = append(seen, e.Reason+": "+e.Note)
			}
		}
		return fmt.Errorf("no %s event for %s containing %q; its events: %q", reason, name, contains, seen)
	})
}

func TestCronJobRunsTheDumpWithSecretsOnlyByReference(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop", func(b *v1alpha1.Backup) { b.Spec.TimeZone = new("Europe/Berlin") }))
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return get(ns, "shop", cj) })
	if cj.Spec.Schedule != "0 2 * * *" || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Europe/Berlin" ||
		cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("CronJob spec: schedule %q, zone %v, concurrency %s", cj.Spec.Schedule, cj.Spec.TimeZone, cj.Spec.ConcurrencyPolicy)
	}
	job := cj.Spec.JobTemplate.Spec
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0: a failure is reported, not retried", job.BackoffLimit)
	}
	pod := job.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("pod: restartPolicy %s, automount token %v", pod.RestartPolicy, pod.AutomountServiceAccountToken)
	}
	if pod.InitContainers[0].Image != "steward:test" || pod.Containers[0].Image != "postgres:17" {
		t.Errorf("images: init %s, main %s", pod.InitContainers[0].Image, pod.Containers[0].Image)
	}
	if got := strings.Join(pod.Containers[0].Command, " "); got != "/steward/bin/steward backup" {
		t.Errorf("command = %q", got)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e
	}
	if p := env[dumpcmd.EnvDBPassword]; p.Value != "" || p.ValueFrom == nil || p.ValueFrom.SecretKeyRef.Name != "pg-login" {
		t.Errorf("the password is not taken from the Secret by reference: %+v", p)
	}
	for name, want := range map[string]string{
		dumpcmd.EnvDBHost: "pg.example", dumpcmd.EnvDBPort: "5432", dumpcmd.EnvDBName: "shop", dumpcmd.EnvDestinationType: "s3",
		dumpcmd.EnvDestinationBucket: "backups", dumpcmd.EnvDestinationPrefix: "shop/", dumpcmd.EnvKeepLast: "3",
		dumpcmd.EnvMaxAge: "720h0m0s", dumpcmd.EnvStoreCredentialsDir: "/var/run/steward/store",
	} {
		if got := env[name].Value; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	secretVolume := false
	for _, v := range pod.Volumes {
		secretVolume = secretVolume || (v.Secret != nil && v.Secret.SecretName == "s3-keys")
	}
	if !secretVolume {
		t.Error("the store's credentials Secret is not mounted")
	}
	passCheck(t, ns, "shop")
	b := waitFor(t, ns, "shop", "Ready", hasCond(v1alpha1.ConditionReady, "True", v1alpha1.ReasonScheduled))
	if b.Status.NextScheduleTime == nil {
		t.Error("nextScheduleTime is not set")
	} else if h := b.Status.NextScheduleTime.In(mustZone(t, "Europe/Berlin")).Hour(); h != 2 {
		t.Errorf("next run at %s: not 02:00 in Berlin", b.Status.NextScheduleTime)
	}
	if c := cond(b, v1alpha1.ConditionLastBackupSucceeded); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("LastBackupSucceeded = %+v, want Unknown before any run", c)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestRunResultsLandInStatusEventsAndMetrics(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop"))
	passCheck(t, ns, "shop")
	createRun(t, ns, "shop", "shop-1")
	start := time.Now().Add(-time.Minute).UTC()
	finishJob(t, ns, "shop-1", dumpcmd.Result{Succeeded: true, Key: "2026/11/22/20261122T020000.000Z-shop.pgdump",
		Size: 4096, SHA256: strings.Repeat("ab", 32), StartTime: start, CompletionTime: start.Add(42 * time.Second),
		DurationSeconds: 42, Pruned: 2})
	b := waitFor(t, ns, "shop", "a recorded success", hasCond(v1alpha1.ConditionLastBackupSucceeded, "True", v1alpha1.ReasonSucceeded))
	last := b.Status.LastBackup
	if last == nil || last.Object != "2026/11/22/20261122T020000.000Z-shop.pgdump" || last.Size != 4096 ||
		last.SHA256 != strings.Repeat("ab", 32) || last.DurationSeconds != 42 || last.Job != "shop-1" {
		t.Fatalf("lastBackup = %+v", last)
	}
	if len(b.Status.History) != 1 || !strings.Contains(b.Status.History[0].Message, "Pruned 2") {
		t.Errorf("history = %+v", b.Status.History)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventBackupSucceeded, "4096 bytes")
	if m := metric(t, "steward_backup_last_size_bytes", ns); m == nil || m.GetGauge().GetValue() != 4096 {
		t.Errorf("steward_backup_last_size_bytes = %v", m)
	}
	if m := metric(t, "steward_backup_last_success_timestamp_seconds", ns); m == nil ||
		int64(m.GetGauge().GetValue()) != start.Add(42*time.Second).Unix() {
		t.Errorf("steward_backup_last_success_timestamp_seconds = %v", m)
	}

	// A failed run: the message reaches status and an event; the last
	// success stays; the failure counter counts it once.
	createRun(t, ns, "shop", "shop-2")
	finishJob(t, ns, "shop-2", dumpcmd.Result{Succeeded: false, Error: "pg_dump: connection refused",
		StartTime: time.Now().UTC(), CompletionTime: time.Now().UTC()})
	b = waitFor(t, ns, "shop", "a recorded failure", hasCond(v1alpha1.ConditionLastBackupSucceeded, "False", v1alpha1.ReasonFailed))
	if c := cond(b, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "connection refused") {
		t.Errorf("Ready = %+v", c)
	}
	if b.Status.LastBackup.Job != "shop-1" || len(b.Status.History) != 2 || b.Status.History[0].Job != "shop-2" {
		t.Errorf("after a failure: last %s, history %+v", b.Status.LastBackup.Job, b.Status.History)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventBackupFailed, "connection refused")
	if m := metric(t, "steward_backup_failures_total", ns); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("steward_backup_failures_total = %v, want 1", m)
	}
	// Later reconciles do not record or count the run again.
	touch(t, ns, "shop")
	time.Sleep(500 * time.Millisecond)
	if m := metric(t, "steward_backup_failures_total", ns); m.GetCounter().GetValue() != 1 {
		t.Errorf("the failure was counted again: %v", m.GetCounter().GetValue())
	}
	_ = get(ns, "shop", b)
	if len(b.Status.History) != 2 {
		t.Errorf("history has %d runs, want 2", len(b.Status.History))
	}
}

// touch changes a label, which makes the operator reconcile.
func touch(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		b := &v1alpha1.Backup{}
		if err := get(ns, name, b); err != nil {
			return err
		}
		if b.Labels == nil {
			b.Labels = map[string]string{}
		}
		b.Labels["touched"] = fmt.Sprint(time.Now().UnixNano())
		return k8s.Update(context.Background(), b)
	})
}

func TestStaleWhenNoRecentSuccess(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "hourly", func(b *v1alpha1.Backup) { b.Spec.Schedule = "@hourly" }))
	passCheck(t, ns, "hourly")
	waitFor(t, ns, "hourly", "fresh", hasCond(v1alpha1.ConditionBackupStale, "False", v1alpha1.ReasonFresh))

	// The last success was three hours ago; runs stopped succeeding.
	eventually(t, func() error {
		b := &v1alpha1.Backup{}
		if err := get(ns, "hourly", b); err != nil {
			return err
		}
		old := metav1.NewTime(time.Now().Add(-3 * time.Hour))
		b.Status.LastBackup = &v1alpha1.BackupRun{Job: "hourly-old", Succeeded: true, CompletionTime: &old, Object: "k"}
		return k8s.Status().Update(context.Background(), b)
	})
	touch(t, ns, "hourly")
	b := waitFor(t, ns, "hourly", "stale", hasCond(v1alpha1.ConditionBackupStale, "True", v1alpha1.ReasonStale))
	if c := cond(b, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ConditionBackupStale {
		t.Errorf("Ready = %+v, want False because stale", c)
	}
	expectEvent(t, ns, "hourly", v1alpha1.EventBackupStale, "twice the schedule")
}

func TestOnDemandRun(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop"))
	passCheck(t, ns, "shop")
	waitFor(t, ns, "shop", "Ready", hasCond(v1alpha1.ConditionReady, "True", v1alpha1.ReasonScheduled))
	eventually(t, func() error {
		b := &v1alpha1.Backup{}
		if err := get(ns, "shop", b); err != nil {
			return err
		}
		b.Annotations = map[string]string{v1alpha1.AnnotationBackupNow: "2026-11-22T10:00"}
		return k8s.Update(context.Background(), b)
	})
	b := waitFor(t, ns, "shop", "the manual run", func(b *v1alpha1.Backup) bool { return b.Status.LastManualRun == "2026-11-22T10:00" })
	name := b.ManualJobName("2026-11-22T10:00")
	job := &batchv1.Job{}
	if err := get(ns, name, job); err != nil {
		t.Fatalf("on-demand Job: %v", err)
	}
	if job.Spec.TTLSecondsAfterFinished == nil || metav1.GetControllerOf(job).Name != "shop" {
		t.Errorf("on-demand Job: ttl %v, owner %v", job.Spec.TTLSecondsAfterFinished, metav1.GetControllerOf(job))
	}
	finishJob(t, ns, name, dumpcmd.Result{Succeeded: true, Key: "k1", Size: 1, SHA256: "00", CompletionTime: time.Now().UTC()})
	waitFor(t, ns, "shop", "the manual run's result", func(b *v1alpha1.Backup) bool {
		return b.Status.LastBackup != nil && b.Status.LastBackup.Job == name
	})
	expectEvent(t, ns, "shop", v1alpha1.EventBackupRequested, name)
}

func TestSourceProblemsAreConditions(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "nodb", func(b *v1alpha1.Backup) {
		b.Spec.Source = v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "orders"}}
	}))
	b := waitFor(t, ns, "nodb", "WaitingForDatabase", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonWaitingForDatabase))
	if !strings.Contains(cond(b, v1alpha1.ConditionReady).Message, "orders") {
		t.Errorf("message does not name the Database: %q", cond(b, v1alpha1.ConditionReady).Message)
	}
	if err := get(ns, "nodb", &batchv1.CronJob{}); err == nil {
		t.Error("a CronJob was created for a Database that does not exist")
	}

	create(t, &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec:       v1alpha1.DatabaseSpec{Engine: v1alpha1.EngineMySQL, Version: "8.4", Storage: v1alpha1.DatabaseStorage{Size: new(mustQuantity("1Gi"))}},
	})
	create(t, newBackup(ns, "mismatch", func(b *v1alpha1.Backup) {
		b.Spec.Source = v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "catalog"}}
	}))
	waitFor(t, ns, "mismatch", "InvalidSource", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonInvalidSource))

	create(t, newBackup(ns, "badcron", func(b *v1alpha1.Backup) { b.Spec.Schedule = "61 * * * *" }))
	waitFor(t, ns, "badcron", "InvalidSchedule", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonInvalidSchedule))
}

func TestInvalidBackupsAreRejected(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.Backup)
		want   string
	}{
		{"cron with four fields", func(b *v1alpha1.Backup) { b.Spec.Schedule = "0 2 * *" }, "five cron fields"},
		{"two sources", func(b *v1alpha1.Backup) {
			b.Spec.Source.DatabaseRef = &corev1.LocalObjectReference{Name: "x"}
		}, "exactly one of source.databaseRef and source.connection"},
		{"file without a volume", func(b *v1alpha1.Backup) {
			b.Spec.Destination = v1alpha1.BackupDestination{Type: v1alpha1.DestinationFile, Bucket: "dumps"}
		}, "destination.volume is required"},
		{"unknown store", func(b *v1alpha1.Backup) { b.Spec.Destination.Type = "ftp" }, "supported values"},
		{"plain http endpoint", func(b *v1alpha1.Backup) { b.Spec.Destination.AllowInsecureEndpoint = false }, "set destination.allowInsecureEndpoint: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), newBackup(ns, "bad", tc.mutate))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDeletingKeepsTheDumpsByDefault(t *testing.T) {
	ns := namespace(t)
	create(t, newBackup(ns, "keep"))
	waitFor(t, ns, "keep", "finalizer", func(b *v1alpha1.Backup) bool { return len(b.Finalizers) == 1 })
	b := &v1alpha1.Backup{}
	_ = get(ns, "keep", b)
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := get(ns, "keep", &v1alpha1.Backup{}); err == nil {
			return fmt.Errorf("the Backup still exists")
		}
		return nil
	})
	expectEvent(t, ns, "keep", v1alpha1.EventDumpsRetained, "deletionPolicy Retain")
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// TestDeletePolicyRemovesOnlyThisBackupsDumps deletes a Backup with
// deletionPolicy Delete: the operator starts a Job in the Backup's
// namespace and touches the store not at all; the Job, run against a real
// (emulated) S3 store, removes the dumps and manifests of the Backup's
// database and leaves another database's dumps under the same prefix
// alone; then the Backup goes.
func TestDeletePolicyRemovesOnlyThisBackupsDumps(t *testing.T) {
	ns := namespace(t)
	d, creds := storetest.S3(t)
	d.Prefix = "team"
	ctx := context.Background()
	bucket, err := store.Open(ctx, d, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	ours := []string{dump.ObjectKey(time.Now().Add(-48*time.Hour), "shop", "pgdump"), dump.ObjectKey(time.Now().Add(-24*time.Hour), "shop", "pgdump")}
	theirs := dump.ObjectKey(time.Now().Add(-24*time.Hour), "billing", "pgdump")
	all := func() []string {
		var keys []string
		for _, key := range append([]string{theirs}, ours...) {
			keys = append(keys, key, key+dump.ManifestSuffix)
		}
		return keys
	}
	for _, k := range all() {
		if err := bucket.WriteAll(ctx, k, []byte("{}"), nil); err != nil {
			t.Fatal(err)
		}
	}
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: ns}, Data: creds})
	create(t, newBackup(ns, "gone", func(b *v1alpha1.Backup) {
		b.Spec.Destination.Endpoint, b.Spec.Destination.Region, b.Spec.Destination.Bucket = d.Endpoint, d.Region, d.Bucket
		b.Spec.Destination.Prefix = d.Prefix
		b.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	}))
	if run := runJob(t, ns, checkJob(t, ns, "gone")); run.code != 0 {
		t.Fatalf("the check failed: %s\n%s", run.message, run.log)
	}
	b := waitFor(t, ns, "gone", "the check passed", hasCond(v1alpha1.ConditionDestinationChecked, "True", v1alpha1.ReasonCheckPassed))
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	eventually(t, func() error { return get(ns, b.DeleteJobName(), job) })
	waitFor(t, ns, "gone", "DeletingDumps", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonDeletingDumps))
	for _, k := range all() {
		if ok, _ := bucket.Exists(ctx, k); !ok {
			t.Fatalf("%s was deleted before the delete Job ran: not by the Job", k)
		}
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			t.Errorf("the delete Job reads %s from a Secret: it needs no database credentials", e.Name)
		}
	}
	if c.Image != "steward:test" || strings.Join(append(c.Command, c.Args...), " ") != "/steward-agent "+dumpcmd.CommandDelete || env[dumpcmd.EnvDBName] != "shop" ||
		env[dumpcmd.EnvDestinationEndpoint] != d.Endpoint || job.Labels[v1alpha1.LabelBackup] != "" || job.Labels[v1alpha1.LabelBackupDelete] != "gone" {
		t.Errorf("delete Job: image %s, command %q, args %q, env %v, labels %v", c.Image, c.Command, c.Args, env, job.Labels)
	}

	if run := runJob(t, ns, job.Name); run.code != 0 || run.result.Deleted != 2 {
		t.Fatalf("the delete Job: exit code %d, %s\n%s", run.code, run.message, run.log)
	}
	eventually(t, func() error {
		if err := get(ns, "gone", &v1alpha1.Backup{}); err == nil {
			return fmt.Errorf("the Backup still exists")
		}
		return nil
	})
	for _, key := range ours {
		for _, k := range []string{key, key + dump.ManifestSuffix} {
			if ok, _ := bucket.Exists(ctx, k); ok {
				t.Errorf("%s was not deleted", k)
			}
		}
	}
	if ok, _ := bucket.Exists(ctx, theirs); !ok {
		t.Error("another database's dump was deleted")
	}
	expectEvent(t, ns, "gone", v1alpha1.EventDumpsDeleted, "deleted 2 stored dumps")
}

// TestARunThatDiesWithoutAResultIsAFailure: a backup container killed before
// it wrote its result is a failed run, with what the kubelet reported.
func TestARunThatDiesWithoutAResultIsAFailure(t *testing.T) {
	ns := namespace(t)
	create(t, newBackup(ns, "shop"))
	createRun(t, ns, "shop", "shop-oom")
	j := &batchv1.Job{}
	eventually(t, func() error { return get(ns, "shop-oom", j) })
	labels := map[string]string{batchv1.JobNameLabel: "shop-oom"}
	for k, v := range j.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-oom-pod", Namespace: ns, Labels: labels},
		Spec:       *j.Spec.Template.Spec.DeepCopy(),
	}
	create(t, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: jobs.Container, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
	}}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	j.Status.StartTime = &now
	j.Status.Failed = 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded"},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
	}
	if err := k8s.Status().Update(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	b := waitFor(t, ns, "shop", "a recorded failure", hasCond(v1alpha1.ConditionLastBackupSucceeded, "False", v1alpha1.ReasonFailed))
	if msg := b.Status.History[0].Message; !strings.Contains(msg, "OOMKilled") || !strings.Contains(msg, "137") {
		t.Errorf("run message %q does not say how the container ended", msg)
	}
}
