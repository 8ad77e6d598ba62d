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

package restore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

func get(ns, name string, obj client.Object) error {
	return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func newDatabase(ns, name string) *v1alpha1.Database {
	return &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.DatabaseSpec{
			Engine:  v1alpha1.EnginePostgres,
			Version: "16",
			Storage: v1alpha1.DatabaseStorage{Size: new(resource.MustParse("1Gi"))},
		},
	}
}

// markReady makes the Database Ready through its StatefulSet.
func markReady(t *testing.T, ns, name string) {
	t.Helper()
	apitest.MarkDatabaseReady(t, k8s, timeout, client.ObjectKey{Namespace: ns, Name: name})
}

func newBackup(ns, name, db string) *v1alpha1.Backup {
	return &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.BackupSpec{
			Source: v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: db}},
			Destination: v1alpha1.BackupDestination{
				Type: v1alpha1.DestinationS3, Bucket: "dumps", Prefix: "prod/", Region: "eu-west-1",
				CredentialsSecretRef: &corev1.LocalObjectReference{Name: "store"},
			},
			Schedule: "@daily",
		},
	}
}

func newRestore(ns string, mutate func(*v1alpha1.Restore)) *v1alpha1.Restore {
	r := &v1alpha1.Restore{
		ObjectMeta: metav1.ObjectMeta{Name: restoreName, Namespace: ns},
		Spec: v1alpha1.RestoreSpec{
			Source: v1alpha1.RestoreSource{BackupRef: &corev1.LocalObjectReference{Name: "nightly"}},
			Target: v1alpha1.RestoreTarget{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "db"}},
		},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// restoreName names the Restore of each test.
const restoreName = "r"

// waitFor waits until the Restore's status satisfies ok.
func waitFor(t *testing.T, ns, what string, ok func(*v1alpha1.Restore) bool) *v1alpha1.Restore {
	t.Helper()
	r := &v1alpha1.Restore{}
	eventually(t, func() error {
		if err := get(ns, restoreName, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("waiting for %s; status: %+v", what, r.Status)
		}
		return nil
	})
	return r
}

func readyReason(r *v1alpha1.Restore) string {
	if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// finish creates the pod the Job controller would have created, ended with
// the result in its termination message, as the kubelet would report it.
func finish(t *testing.T, ns string, job *batchv1.Job, res dumpcmd.Result) {
	t.Helper()
	finishWith(t, ns, job, string(res.Marshal()), res.Succeeded)
}

// finishWith ends the Job's pod with a termination message.
func finishWith(t *testing.T, ns string, job *batchv1.Job, message string, succeeded bool) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Namespace: ns, Labels: job.Spec.Template.Labels},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: jobs.Container, Image: job.Spec.Template.Spec.Containers[0].Image}},
		},
	}
	create(t, pod)
	exit := int32(0)
	if !succeeded {
		exit = 1
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: jobs.Container, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exit, Reason: "Completed", Message: message,
				StartedAt: metav1.Now(), FinishedAt: metav1.Now(),
			}},
		}},
	}
	if exit != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatalf("ending pod %s: %v", pod.Name, err)
	}
}

// job waits for the Restore's Job.
func job(t *testing.T, ns string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	eventually(t, func() error { return get(ns, restoreName+"-restore", j) })
	return j
}

// expectEvent waits for an event with the reason about the test's Restore.
func expectEvent(t *testing.T, ns, reason string) {
	t.Helper()
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == restoreName && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event for %s among %d events", reason, restoreName, len(list.Items))
	})
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func TestRestoreFromABackupIntoADatabase(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db"))
	create(t, newRestore(ns, nil))

	r := waitFor(t, ns, "WaitingForBackup", func(r *v1alpha1.Restore) bool {
		return r.Status.Phase == v1alpha1.RestorePending && readyReason(r) == v1alpha1.ReasonWaitingForBackup
	})
	if c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "nightly") {
		t.Errorf("message does not name the Backup: %q", c.Message)
	}
	expectEvent(t, ns, v1alpha1.ReasonWaitingForBackup)

	create(t, newBackup(ns, "nightly", "db"))
	// The message names the Database and where it stands: no status yet
	// (a new Database's first status is held back until it is Ready, or
	// for 30 s), or its Ready reason.
	waitFor(t, ns, "WaitingForDatabase", func(r *v1alpha1.Restore) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionReady)
		return r.Status.Phase == v1alpha1.RestorePending && c != nil && c.Reason == v1alpha1.ReasonWaitingForDatabase &&
			strings.Contains(c.Message, "Database db") &&
			(strings.Contains(c.Message, "no status yet") || strings.Contains(c.Message, v1alpha1.ReasonCreating))
	})
	expectEvent(t, ns, v1alpha1.ReasonWaitingForDatabase)
	if err := get(ns, "r-restore", &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a Job exists before the Database is Ready (%v)", err)
	}

	markReady(t, ns, "db")
	j := job(t, ns)
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0: a failed restore is not retried", j.Spec.BackoffLimit)
	}
	if owner := metav1.GetControllerOf(j); owner == nil || owner.Kind != "Restore" || owner.Name != "r" {
		t.Errorf("Job controller = %+v, want the Restore", owner)
	}
	if j.Labels[v1alpha1.LabelRestore] != "r" || j.Labels["app.kubernetes.io/managed-by"] != "steward" ||
		j.Spec.Template.Labels[v1alpha1.LabelRestore] != "r" || j.Spec.Template.Labels["app.kubernetes.io/managed-by"] != "steward" {
		t.Errorf("labels: Job %v, pod %v", j.Labels, j.Spec.Template.Labels)
	}
	c := j.Spec.Template.Spec.Containers[0]
	if c.Image != "postgres:16" || c.Command[1] != "restore" {
		t.Errorf("container runs %v in %s, want restore in the Database's image postgres:16", c.Command, c.Image)
	}
	env := envOf(c)
	for name, want := range map[string]string{
		dumpcmd.EnvDBType: "postgresql", dumpcmd.EnvDBHost: "db." + ns + ".svc", dumpcmd.EnvDBPort: "5432", dumpcmd.EnvDBName: "app",
		dumpcmd.EnvDestinationType: "s3", dumpcmd.EnvDestinationBucket: "dumps", dumpcmd.EnvDestinationPrefix: "prod/",
		dumpcmd.EnvRestoreKey: "latest", dumpcmd.EnvRestoreOverwrite: "false",
	} {
		if got := env[name].Value; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{dumpcmd.EnvDBUsername, dumpcmd.EnvDBPassword} {
		e := env[name]
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "db-credentials" {
			t.Errorf("%s = %+v, want only a reference to the Secret db-credentials", name, e)
		}
	}
	password := &corev1.Secret{}
	if err := get(ns, "db-credentials", password); err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Env {
		if e.Value != "" && strings.Contains(e.Value, string(password.Data["password"])) {
			t.Errorf("the password is in the Job's environment (%s)", e.Name)
		}
	}
	waitFor(t, ns, "Running", func(r *v1alpha1.Restore) bool {
		return r.Status.Phase == v1alpha1.RestoreRunning && r.Status.Job == "r-restore" && r.Status.StartTime != nil
	})
	expectEvent(t, ns, v1alpha1.EventRestoreStarted)

	const key = "db/20260301T020000Z.dump"
	finish(t, ns, j, dumpcmd.Result{Succeeded: true, Key: key, Size: 1234,
		StartTime: time.Now().Add(-time.Minute), CompletionTime: time.Now()})
	r = waitFor(t, ns, "Succeeded", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreSucceeded })
	if r.Status.Object != key || r.Status.CompletionTime == nil || r.Status.Message != "" {
		t.Errorf("status = %+v, want object %s and a completion time", r.Status, key)
	}
	if !meta.IsStatusConditionTrue(r.Status.Conditions, v1alpha1.ConditionReady) ||
		meta.IsStatusConditionTrue(r.Status.Conditions, v1alpha1.ConditionProgressing) ||
		meta.IsStatusConditionTrue(r.Status.Conditions, v1alpha1.ConditionDegraded) {
		t.Errorf("conditions = %+v, want Ready only", r.Status.Conditions)
	}
	expectEvent(t, ns, v1alpha1.EventRestoreSucceeded)
}

func TestAFailedRestoreIsFinalAndSaysWhy(t *testing.T) {
	ns := namespace(t)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ext-login", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("shop"), "password": []byte("ext-password-never-shown")},
	})
	create(t, newRestore(ns, func(r *v1alpha1.Restore) {
		r.Spec.Source = v1alpha1.RestoreSource{
			Destination: &v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "old-dumps"},
			Object:      "shop/20260101T000000Z.dump",
		}
		r.Spec.Target = v1alpha1.RestoreTarget{Type: v1alpha1.SourceMySQL, Connection: &v1alpha1.DatabaseConnection{
			Host: "mysql.example", Database: "shop", CredentialsSecretRef: corev1.LocalObjectReference{Name: "ext-login"},
		}}
	}))
	j := job(t, ns)
	c := j.Spec.Template.Spec.Containers[0]
	env := envOf(c)
	if c.Image != jobs.DefaultImage(v1alpha1.SourceMySQL) || env[dumpcmd.EnvDBHost].Value != "mysql.example" ||
		env[dumpcmd.EnvDBPort].Value != "3306" || env[dumpcmd.EnvRestoreKey].Value != "shop/20260101T000000Z.dump" ||
		env[dumpcmd.EnvDestinationBucket].Value != "old-dumps" {
		t.Errorf("image %s, env %+v", c.Image, env)
	}
	if ref := env[dumpcmd.EnvDBPassword].ValueFrom; ref == nil || ref.SecretKeyRef.Name != "ext-login" || env[dumpcmd.EnvDBPassword].Value != "" {
		t.Errorf("password env = %+v, want a reference to ext-login", env[dumpcmd.EnvDBPassword])
	}

	const why = "the target database is not empty; set spec.overwrite to replace its tables"
	finish(t, ns, j, dumpcmd.Result{Succeeded: false, Key: "shop/20260101T000000Z.dump", Error: why,
		StartTime: time.Now(), CompletionTime: time.Now()})
	r := waitFor(t, ns, "Failed", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreFailed })
	if r.Status.Message != why || r.Status.CompletionTime == nil {
		t.Errorf("status = %+v, want the run's error", r.Status)
	}
	d := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonRestoreFailed || d.Message != why {
		t.Errorf("Degraded = %+v", d)
	}
	expectEvent(t, ns, v1alpha1.EventRestoreFailed)

	// Final: nothing runs again and the status stays, whatever the pods say.
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), &pods.Items[0]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	after := &v1alpha1.Restore{}
	if err := get(ns, "r", after); err != nil {
		t.Fatal(err)
	}
	if after.Status.Phase != v1alpha1.RestoreFailed || after.Status.Message != why {
		t.Errorf("a failed restore changed: %+v", after.Status)
	}
	jobs := &batchv1.JobList{}
	if err := k8s.List(context.Background(), jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 1 {
		t.Errorf("%d Jobs (%v), want the one that failed", len(jobs.Items), err)
	}
}

func TestATargetOfAnotherEngineIsRefused(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db"))
	create(t, newBackup(ns, "nightly", "db"))
	create(t, newRestore(ns, func(r *v1alpha1.Restore) { r.Spec.Target.Type = v1alpha1.SourceMySQL }))
	r := waitFor(t, ns, "Failed", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreFailed })
	if readyReason(r) != v1alpha1.ReasonTargetMismatch || !strings.Contains(r.Status.Message, "postgres") ||
		!strings.Contains(r.Status.Message, "mysql") {
		t.Errorf("reason %s, message %q: want TargetMismatch naming both types", readyReason(r), r.Status.Message)
	}
	if err := get(ns, "r-restore", &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Job was created for a mismatched target (%v)", err)
	}
	expectEvent(t, ns, v1alpha1.EventRestoreFailed)
}

func TestTheSpecCannotChange(t *testing.T) {
	ns := namespace(t)
	create(t, newRestore(ns, nil))
	r := &v1alpha1.Restore{}
	if err := get(ns, "r", r); err != nil {
		t.Fatal(err)
	}
	orig := r.DeepCopy()
	r.Spec.Overwrite = true
	// A merge patch carries no resourceVersion: the controller's status
	// writes cannot make it conflict.
	err := k8s.Patch(context.Background(), r, client.MergeFrom(orig))
	if err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Errorf("got %v, want the spec refused as immutable", err)
	}
}

// TestAPodThatDiesWithoutAResultFailsTheRestore: a restore container killed
// before it wrote its result (out of memory, evicted) fails the Restore with
// what the kubelet reported.
func TestAPodThatDiesWithoutAResultFailsTheRestore(t *testing.T) {
	ns := namespace(t)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ext-login", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("shop"), "password": []byte("ext-password-never-shown")},
	})
	create(t, newRestore(ns, func(r *v1alpha1.Restore) {
		r.Spec.Source = v1alpha1.RestoreSource{Destination: &v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "dumps"}}
		r.Spec.Target = v1alpha1.RestoreTarget{Type: v1alpha1.SourcePostgreSQL, Connection: &v1alpha1.DatabaseConnection{
			Host: "pg.example", Database: "shop", CredentialsSecretRef: corev1.LocalObjectReference{Name: "ext-login"},
		}}
	}))
	j := job(t, ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-x1", Namespace: ns, Labels: j.Spec.Template.Labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: jobs.Container, Image: j.Spec.Template.Spec.Containers[0].Image}}},
	}
	create(t, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: jobs.Container, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "OOMKilled", StartedAt: metav1.Now(), FinishedAt: metav1.Now(),
		}},
	}}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	r := waitFor(t, ns, "Failed", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreFailed })
	if !strings.Contains(r.Status.Message, "OOMKilled") || !strings.Contains(r.Status.Message, "137") {
		t.Errorf("message %q does not say how the container ended", r.Status.Message)
	}
}
