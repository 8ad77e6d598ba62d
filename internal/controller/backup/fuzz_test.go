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

package backup

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

// cronSchedule is the schema's rule on a schedule: a macro or five fields.
var cronSchedule = regexp.MustCompile(`^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$|^\S+( \S+){4}$`)

// fuzzBackup is a Backup the schema admits, or nil: named name (at most 50
// characters), on schedule in zone tz ("-" for none), of a Database or a
// connection, to the destination and with the retention choice picks.
func fuzzBackup(name, schedule, tz string, choice uint8) *v1alpha1.Backup {
	if len(name) > 50 || len(validation.IsDNS1123Subdomain(name)) > 0 || len(schedule) > 128 ||
		!cronSchedule.MatchString(schedule) || len(tz) > 64 {
		return nil
	}
	b := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: "uid-backup"},
		Spec: v1alpha1.BackupSpec{
			Source: v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "orders"}},
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "steward-backups", Prefix: "samples/orders",
				Endpoint: "https://minio.example:9000", Region: "us-east-1", CredentialsSecretRef: &corev1.LocalObjectReference{Name: "backup-store"}},
			Schedule: schedule,
			Suspend:  choice&1 != 0,
		},
	}
	if tz != "-" {
		b.Spec.TimeZone = &tz
	}
	if choice&2 != 0 {
		b.Spec.Source = v1alpha1.BackupSource{Type: v1alpha1.SourceMySQL, Connection: &v1alpha1.DatabaseConnection{
			Host: "mysql.example", Port: 3306, Database: "app", CredentialsSecretRef: corev1.LocalObjectReference{Name: "mysql"}}}
	}
	if choice&4 != 0 {
		b.Spec.Destination = v1alpha1.BackupDestination{Type: v1alpha1.DestinationFile, Bucket: "dumps",
			Volume: &corev1.LocalObjectReference{Name: "backups"}}
	}
	if choice&8 != 0 {
		b.Spec.Retention = &v1alpha1.BackupRetention{KeepDaily: new(int32(7)), KeepWeekly: new(int32(4)), KeepMonthly: new(int32(12)),
			MaxAge: &metav1.Duration{Duration: time.Duration(choice) * time.Hour}}
	}
	return b
}

// FuzzJobs checks the Jobs of any Backup the schema admits: the same every
// time, named within the limits the Job and CronJob controllers set (52
// characters for a CronJob, 63 for a Job, whose name is also a label),
// with valid labels, owned by the Backup; a CronJob on the Backup's
// schedule in an explicit zone; runs selected by the Backup's label and
// check and delete Jobs not. It also checks the parsing of the schedule.
func FuzzJobs(f *testing.F) {
	f.Add("orders-s3", "0 2 * * *", "-", "1700000000", uint8(8))
	f.Add("orders-s3", "@daily", "Europe/Paris", "now", uint8(1|2))
	f.Add("catalog.nightly", "*/15 * * * *", "", "x", uint8(4|8))
	f.Add("a-backup-name-of-exactly-fifty-characters-for-jobs", "0 0 30 2 *", "UTC", "", uint8(255))
	f.Add("b", "61 25 32 13 8", "Mars/Olympus", "v", uint8(0))
	f.Add("b", "CRON_TZ=UTC 0 * * *", "Local", "v", uint8(0))
	f.Add("a-backup-name-of-exactly-45-characters-verify", "0 5 * * 0", "Europe/Berlin", "2026-11-26", uint8(16|32|2))
	f.Add("orders", "@weekly", "-", "", uint8(16|1))
	f.Fuzz(func(t *testing.T, name, schedule, tz, value string, choice uint8) {
		b := fuzzBackup(name, schedule, tz, choice)
		if b == nil {
			t.Skip("refused by the schema")
		}
		checkSchedule(t, b)
		src := source{conn: jobs.Connection{Type: b.Spec.Source.Type, Host: "orders.prod.svc", Port: 5432, Database: "app",
			CredentialsSecret: "orders-credentials"}, image: "postgres:16"}
		hash := destinationHash(b.Spec.Destination, "uid/1", "app")
		build := func() []any {
			return []any{CronJob(b, src, "steward:test"), ManualJob(b, src, "steward:test", value),
				CheckJob(b, hash, "steward:test"), DeleteJob(b, hash, "app", "steward:test")}
		}
		if first := build(); !equality.Semantic.DeepEqual(first, build()) {
			t.Fatal("the Jobs differ from one build to the next")
		}

		cj := CronJob(b, src, "steward:test")
		checkMeta(t, b, *cj.Name, 52, cj.Labels, cj.OwnerReferences)
		if *cj.Spec.Schedule != b.Spec.Schedule || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != timeZone(b) || *cj.Spec.Suspend != b.Spec.Suspend {
			t.Fatalf("CronJob schedule %q in %v, suspend %v", *cj.Spec.Schedule, cj.Spec.TimeZone, *cj.Spec.Suspend)
		}
		checkRun(t, b, cj.Spec.JobTemplate.Labels, cj.Spec.JobTemplate.Spec.Template)

		manual := ManualJob(b, src, "steward:test", value)
		checkMeta(t, b, *manual.Name, 63, manual.Labels, manual.OwnerReferences)
		if *manual.Name != b.ManualJobName(value) {
			t.Fatalf("manual Job %s, want %s", *manual.Name, b.ManualJobName(value))
		}
		checkRun(t, b, manual.Labels, manual.Spec.Template)

		for _, task := range []struct {
			name   string
			labels map[string]string
			refs   []metav1ac.OwnerReferenceApplyConfiguration
			tmpl   *corev1ac.PodTemplateSpecApplyConfiguration
		}{
			{*CheckJob(b, hash, "i").Name, CheckJob(b, hash, "i").Labels, CheckJob(b, hash, "i").OwnerReferences, CheckJob(b, hash, "i").Spec.Template},
			{*DeleteJob(b, hash, "app", "i").Name, DeleteJob(b, hash, "app", "i").Labels, DeleteJob(b, hash, "app", "i").OwnerReferences, DeleteJob(b, hash, "app", "i").Spec.Template},
		} {
			checkMeta(t, b, task.name, 63, task.labels, task.refs)
			if _, ok := task.labels[v1alpha1.LabelBackup]; ok {
				t.Fatalf("Job %s carries %s, which selects the runs", task.name, v1alpha1.LabelBackup)
			}
			if !equality.Semantic.DeepEqual(task.tmpl.Labels, task.labels) {
				t.Fatalf("Job %s: pod labels %v, want %v", task.name, task.tmpl.Labels, task.labels)
			}
		}
		if choice&16 != 0 && len(name) <= 45 {
			b.Spec.Verify = &v1alpha1.BackupVerify{Schedule: schedule, Suspend: choice&32 != 0}
			checkVerify(t, b, src, value)
		}
	})
}

// checkVerify checks the verification CronJob and on-demand Job of a
// Backup with spec.verify (whose name has at most 45 characters, as the
// schema says): the same every time, named within the limits, labelled as
// verifications and not as runs, suspended with the Backup or
// spec.verify, and with no Secret in the environment: a verification
// never reads the database's credentials.
func checkVerify(t *testing.T, b *v1alpha1.Backup, src source, value string) {
	t.Helper()
	if !equality.Semantic.DeepEqual(VerifyCronJob(b, src, "i"), VerifyCronJob(b, src, "i")) ||
		!equality.Semantic.DeepEqual(ManualVerifyJob(b, src, "i", value), ManualVerifyJob(b, src, "i", value)) {
		t.Fatal("the verification Jobs differ from one build to the next")
	}
	cj := VerifyCronJob(b, src, "i")
	checkMeta(t, b, *cj.Name, 52, cj.Labels, cj.OwnerReferences)
	if *cj.Spec.Schedule != b.Spec.Verify.Schedule || *cj.Spec.TimeZone != timeZone(b) ||
		*cj.Spec.Suspend != (b.Spec.Suspend || b.Spec.Verify.Suspend) {
		t.Fatalf("verification CronJob schedule %q in %v, suspend %v", *cj.Spec.Schedule, *cj.Spec.TimeZone, *cj.Spec.Suspend)
	}
	manual := ManualVerifyJob(b, src, "i", value)
	checkMeta(t, b, *manual.Name, 63, manual.Labels, manual.OwnerReferences)
	for _, j := range []struct {
		name   string
		labels map[string]string
		tmpl   *corev1ac.PodTemplateSpecApplyConfiguration
	}{
		{*cj.Name, cj.Spec.JobTemplate.Labels, cj.Spec.JobTemplate.Spec.Template},
		{*manual.Name, manual.Labels, manual.Spec.Template},
	} {
		if err := fuzzcheck.Labels(j.labels); err != nil {
			t.Fatal(err)
		}
		if _, ok := j.labels[v1alpha1.LabelBackup]; ok || j.labels[v1alpha1.LabelBackupVerify] != b.Name ||
			!equality.Semantic.DeepEqual(j.tmpl.Labels, j.labels) {
			t.Fatalf("verification %s labelled %v, its pods %v", j.name, j.labels, j.tmpl.Labels)
		}
		for _, e := range j.tmpl.Spec.Containers[0].Env {
			if e.ValueFrom != nil {
				t.Fatalf("verification %s: %s comes from %+v", j.name, *e.Name, e.ValueFrom)
			}
		}
	}
}

// checkSchedule checks the parsing of the Backup's schedule: the same
// answer every time, a time zone refused exactly when the Go runtime does
// not know it, and for a schedule that fires, a next run after now.
func checkSchedule(t *testing.T, b *v1alpha1.Backup) {
	t.Helper()
	s, p := parseSchedule(b.Spec.Schedule, b.Spec.TimeZone)
	if _, again := parseSchedule(b.Spec.Schedule, b.Spec.TimeZone); fmt.Sprint(p) != fmt.Sprint(again) {
		t.Fatalf("parseSchedule is not deterministic: %v, then %v", p, again)
	}
	if tz := b.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil && (p == nil || !strings.Contains(p.Message, "timeZone")) {
			t.Fatalf("timeZone %q is unknown, but parseSchedule says %v", *tz, p)
		}
	}
	if p != nil {
		if p.Reason != v1alpha1.ReasonInvalidSchedule {
			t.Fatalf("problem %+v", p)
		}
		return
	}
	now := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	if next := s.next(now); !next.IsZero() && !next.After(now) {
		t.Fatalf("schedule %q: next run %v is not after %v", b.Spec.Schedule, next, now)
	}
	if i := s.interval(now); i < 0 {
		t.Fatalf("schedule %q: interval %v", b.Spec.Schedule, i)
	}
}

// checkRun checks a run's Job labels and pod.
func checkRun(t *testing.T, b *v1alpha1.Backup, jobLabels map[string]string, tmpl *corev1ac.PodTemplateSpecApplyConfiguration) {
	t.Helper()
	if err := fuzzcheck.Labels(jobLabels); err != nil {
		t.Fatal(err)
	}
	if tmpl.Labels[v1alpha1.LabelBackup] != b.Name || jobLabels[v1alpha1.LabelBackup] != b.Name {
		t.Fatalf("a run of %s labelled %v, its pods %v", b.Name, jobLabels, tmpl.Labels)
	}
	if *tmpl.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("restart policy %s", *tmpl.Spec.RestartPolicy)
	}
	for _, e := range tmpl.Spec.Containers[0].Env {
		if *e.Name == "STEWARD_RETENTION_TIME_ZONE" && *e.Value != timeZone(b) {
			t.Fatalf("retention in %s, the schedule in %s", *e.Value, timeZone(b))
		}
	}
}

// checkMeta checks a child's name, labels and controller.
func checkMeta(t *testing.T, b *v1alpha1.Backup, name string, maxLen int, labels map[string]string, refs []metav1ac.OwnerReferenceApplyConfiguration) {
	t.Helper()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > maxLen || len(validation.IsValidLabelValue(name)) > 0 {
		t.Fatalf("child %q of Backup %s: %v", name, b.Name, errs)
	}
	if err := fuzzcheck.Labels(labels); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(refs) != 1 || *refs[0].UID != b.UID || !*refs[0].Controller || *refs[0].Kind != "Backup" {
		t.Fatalf("%s: owner references %+v", name, refs)
	}
}
