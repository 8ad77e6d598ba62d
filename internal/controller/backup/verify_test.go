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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
)

func verifyWeekly(b *v1alpha1.Backup) {
	b.Spec.Verify = &v1alpha1.BackupVerify{Schedule: "0 5 * * 0"}
}

// createVerification creates a Job of the verification CronJob, as the
// CronJob controller would.
func createVerification(t *testing.T, ns, backupName, job string) {
	t.Helper()
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return get(ns, backupName+"-verify", cj) })
	create(t, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: ns, Labels: cj.Spec.JobTemplate.Labels},
		Spec:       *cj.Spec.JobTemplate.Spec.DeepCopy(),
	})
}

// gone waits until the Job is deleted.
func gone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		err := get(ns, name, &batchv1.Job{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("Job %s is still there (%w)", name, err)
	})
}

func TestScheduledVerification(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop", verifyWeekly, func(b *v1alpha1.Backup) { b.Spec.TimeZone = new("Europe/Berlin") }))
	passCheck(t, ns, "shop")
	b := waitFor(t, ns, "shop", "no verification yet", hasCond(v1alpha1.ConditionVerified, "Unknown", v1alpha1.ReasonNoVerificationYet))
	if c := cond(b, v1alpha1.ConditionVerificationStale); c == nil || c.Status != metav1.ConditionFalse || b.Status.NextVerificationTime == nil ||
		b.Status.NextVerificationTime.In(mustZone(t, "Europe/Berlin")).Weekday() != time.Sunday {
		t.Errorf("VerificationStale %+v, next verification %v", c, b.Status.NextVerificationTime)
	}

	// The CronJob: the engine's image with Steward's binary, the store's
	// credentials, and nothing of the database's.
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return get(ns, "shop-verify", cj) })
	if cj.Spec.Schedule != "0 5 * * 0" || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Europe/Berlin" ||
		cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || metav1.GetControllerOf(cj).Name != "shop" ||
		cj.Labels[v1alpha1.LabelBackupVerify] != "shop" || cj.Labels[v1alpha1.LabelBackup] != "" {
		t.Errorf("CronJob %+v, labels %v", cj.Spec, cj.Labels)
	}
	js := cj.Spec.JobTemplate.Spec
	pod := js.Template.Spec
	c := pod.Containers[0]
	if js.TTLSecondsAfterFinished == nil || js.BackoffLimit == nil || *js.BackoffLimit != 0 || c.Image != "postgres:17" ||
		strings.Join(c.Command, " ") != "/steward/bin/steward backup-verify" || c.Resources.Limits.Memory().String() != "1Gi" ||
		js.Template.Labels[v1alpha1.LabelBackupVerify] != "shop" || *pod.AutomountServiceAccountToken {
		t.Errorf("Job template: ttl %v, backoff %v, image %s, command %v, limits %v, labels %v", js.TTLSecondsAfterFinished, js.BackoffLimit,
			c.Image, c.Command, c.Resources.Limits, js.Template.Labels)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("the verification reads a Secret through its environment: %s from %s", e.Name, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	if env[dumpcmd.EnvDBType] != "postgresql" || env[dumpcmd.EnvDBName] != "shop" || env[dumpcmd.EnvDestinationBucket] != "backups" ||
		env[dumpcmd.EnvDBHost] != "" || env[dumpcmd.EnvStoreCredentialsDir] == "" {
		t.Errorf("environment %v", env)
	}

	// A verification that passed.
	createVerification(t, ns, "shop", "shop-verify-1")
	start := time.Now().Add(-time.Minute).UTC()
	finishJob(t, ns, "shop-verify-1", dumpcmd.Result{Succeeded: true, Key: "2026/11/22/20261122T020000.000Z-shop.pgdump",
		Reason: v1alpha1.ReasonVerificationPassed, Message: "restored; 3 tables, 1200 rows, each table's row count and checksum as at backup time",
		TablesChecked: 3, StartTime: start, CompletionTime: start.Add(12 * time.Second), DurationSeconds: 12})
	b = waitFor(t, ns, "shop", "a passed verification", hasCond(v1alpha1.ConditionVerified, "True", v1alpha1.ReasonVerificationPassed))
	last := b.Status.LastVerified
	if last == nil || !last.Passed || last.Job != "shop-verify-1" || last.Backup != "2026/11/22/20261122T020000.000Z-shop.pgdump" ||
		last.DurationSeconds != 12 || last.TablesChecked != 3 || last.Time == nil || last.Time.Unix() != start.Add(12*time.Second).Unix() {
		t.Fatalf("lastVerified = %+v", last)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventVerificationPassed, "3 tables, 1200 rows")
	if m := metric(t, "steward_backup_verification_success", ns); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("steward_backup_verification_success = %v, want 1", m)
	}
	if m := metric(t, "steward_backup_last_verification_timestamp_seconds", ns); m == nil || int64(m.GetGauge().GetValue()) != start.Add(12*time.Second).Unix() {
		t.Errorf("steward_backup_last_verification_timestamp_seconds = %v", m)
	}
	gone(t, ns, "shop-verify-1")

	// One that found an altered table: a Warning, the metric at 0; Ready
	// is about taking backups and stays True.
	createVerification(t, ns, "shop", "shop-verify-2")
	finishJob(t, ns, "shop-verify-2", dumpcmd.Result{Succeeded: false, Key: "2026/11/29/20261129T020000.000Z-shop.pgdump",
		Reason: v1alpha1.ReasonTableChecksumMismatch, Error: "table public.items has its 400 rows but another checksum",
		StartTime: time.Now().UTC(), CompletionTime: time.Now().UTC(), DurationSeconds: 9})
	b = waitFor(t, ns, "shop", "a failed verification", hasCond(v1alpha1.ConditionVerified, "False", v1alpha1.ReasonTableChecksumMismatch))
	if c := cond(b, v1alpha1.ConditionVerified); !strings.Contains(c.Message, "shop-verify-2") || !strings.Contains(c.Message, "public.items") {
		t.Errorf("Verified = %+v", c)
	}
	if c := cond(b, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventVerificationFailed, "TableChecksumMismatch")
	if m := metric(t, "steward_backup_verification_success", ns); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("steward_backup_verification_success = %v, want 0", m)
	}
	gone(t, ns, "shop-verify-2")

	// A pod that ended without a result.
	createVerification(t, ns, "shop", "shop-verify-3")
	finishJobWith(t, ns, "shop-verify-3", "", 137)
	b = waitFor(t, ns, "shop", "a verification without a result", hasCond(v1alpha1.ConditionVerified, "False", v1alpha1.ReasonVerificationFailed))
	if !strings.Contains(b.Status.LastVerified.Message, "without a result") {
		t.Errorf("lastVerified = %+v", b.Status.LastVerified)
	}

	// Without spec.verify the CronJob goes; the last outcome stays.
	eventually(t, func() error {
		if err := get(ns, "shop", b); err != nil {
			return err
		}
		b.Spec.Verify = nil
		return k8s.Update(context.Background(), b)
	})
	eventually(t, func() error {
		err := get(ns, "shop-verify", &batchv1.CronJob{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("CronJob shop-verify is still there (%w)", err)
	})
	b = waitFor(t, ns, "shop", "no next verification", func(b *v1alpha1.Backup) bool {
		return b.Status.NextVerificationTime == nil && cond(b, v1alpha1.ConditionVerificationStale) == nil
	})
	if b.Status.LastVerified == nil || b.Status.LastVerified.Job != "shop-verify-3" {
		t.Errorf("lastVerified = %+v", b.Status.LastVerified)
	}
}

func TestVerifyNow(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop", func(b *v1alpha1.Backup) { b.Spec.Source.Type = v1alpha1.SourceMySQL }))
	passCheck(t, ns, "shop")
	waitFor(t, ns, "shop", "Ready", hasCond(v1alpha1.ConditionReady, "True", v1alpha1.ReasonScheduled))
	eventually(t, func() error {
		b := &v1alpha1.Backup{}
		if err := get(ns, "shop", b); err != nil {
			return err
		}
		b.Annotations = map[string]string{v1alpha1.AnnotationVerifyNow: "2026-11-26T19:00"}
		return k8s.Update(context.Background(), b)
	})
	b := waitFor(t, ns, "shop", "the manual verification", func(b *v1alpha1.Backup) bool {
		return b.Status.LastManualVerification == "2026-11-26T19:00"
	})
	name := b.ManualVerifyJobName("2026-11-26T19:00")
	job := &batchv1.Job{}
	if err := get(ns, name, job); err != nil {
		t.Fatalf("on-demand verification Job: %v", err)
	}
	if metav1.GetControllerOf(job).Name != "shop" || job.Spec.Template.Spec.Containers[0].Image != "mysql:8.4" {
		t.Errorf("Job: owner %v, image %s", metav1.GetControllerOf(job), job.Spec.Template.Spec.Containers[0].Image)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventVerificationRequested, name)
	if err := get(ns, "shop-verify", &batchv1.CronJob{}); !apierrors.IsNotFound(err) {
		t.Errorf("a verification CronJob without spec.verify: %v", err)
	}
	finishJob(t, ns, name, dumpcmd.Result{Succeeded: false, Reason: v1alpha1.ReasonNoBackup,
		Error: `there is no complete mysql backup of database "shop" in the bucket`, CompletionTime: time.Now().UTC()})
	waitFor(t, ns, "shop", "the manual verification's result", hasCond(v1alpha1.ConditionVerified, "False", v1alpha1.ReasonNoBackup))
}

func TestVerificationStale(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "hourly", func(b *v1alpha1.Backup) {
		b.Spec.Verify = &v1alpha1.BackupVerify{Schedule: "@hourly"}
	}))
	passCheck(t, ns, "hourly")
	waitFor(t, ns, "hourly", "fresh", hasCond(v1alpha1.ConditionVerificationStale, "False", v1alpha1.ReasonVerificationFresh))
	eventually(t, func() error {
		b := &v1alpha1.Backup{}
		if err := get(ns, "hourly", b); err != nil {
			return err
		}
		old := metav1.NewTime(time.Now().Add(-3 * time.Hour).Truncate(time.Second))
		b.Status.LastVerified = &v1alpha1.BackupVerification{Job: "hourly-verify-old", Passed: true, Time: &old, Reason: v1alpha1.ReasonVerificationPassed}
		return k8s.Status().Update(context.Background(), b)
	})
	touch(t, ns, "hourly")
	b := waitFor(t, ns, "hourly", "stale", hasCond(v1alpha1.ConditionVerificationStale, "True", v1alpha1.ReasonNoRecentVerification))
	if c := cond(b, v1alpha1.ConditionVerified); c.Status != metav1.ConditionTrue {
		t.Errorf("Verified = %+v", c)
	}
	expectEvent(t, ns, "hourly", v1alpha1.EventVerificationStale, "twice the verify schedule")

	// Suspended verifications are not stale.
	eventually(t, func() error {
		if err := get(ns, "hourly", b); err != nil {
			return err
		}
		b.Spec.Verify.Suspend = true
		return k8s.Update(context.Background(), b)
	})
	waitFor(t, ns, "hourly", "not stale while suspended", func(b *v1alpha1.Backup) bool {
		return cond(b, v1alpha1.ConditionVerificationStale) == nil && b.Status.NextVerificationTime == nil
	})
	cj := &batchv1.CronJob{}
	eventually(t, func() error {
		if err := get(ns, "hourly-verify", cj); err != nil {
			return err
		}
		if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
			return fmt.Errorf("the verification CronJob is not suspended")
		}
		return nil
	})
}

func TestInvalidVerificationsAreRejected(t *testing.T) {
	ns := namespace(t)
	for name, b := range map[string]*v1alpha1.Backup{
		"mongodb":   newBackup(ns, "mongo", verifyWeekly, func(b *v1alpha1.Backup) { b.Spec.Source.Type = v1alpha1.SourceMongoDB }),
		"long name": newBackup(ns, strings.Repeat("a", 46), verifyWeekly),
		"schedule":  newBackup(ns, "sched", func(b *v1alpha1.Backup) { b.Spec.Verify = &v1alpha1.BackupVerify{Schedule: "every sunday"} }),
	} {
		if err := k8s.Create(context.Background(), b); err == nil || !apierrors.IsInvalid(err) {
			t.Errorf("%s: created (%v), want it refused", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	create(t, newBackup(ns, strings.Repeat("a", 45), verifyWeekly))
	create(t, newBackup(ns, strings.Repeat("b", 50)))
}
