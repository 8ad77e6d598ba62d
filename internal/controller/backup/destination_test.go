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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/secrettest"
	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// s3Backup is a Backup of newBackup's source to the S3 emulator d, with
// the credentials Secret s3-keys holding creds.
func s3Backup(t *testing.T, ns, name string, d store.Destination, creds map[string][]byte, mutate ...func(*v1alpha1.Backup)) {
	t.Helper()
	if err := get(ns, "s3-keys", &corev1.Secret{}); err != nil {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: ns}, Data: creds})
	}
	create(t, newBackup(ns, name, append([]func(*v1alpha1.Backup){func(b *v1alpha1.Backup) {
		b.Spec.Destination.Endpoint, b.Spec.Destination.Region, b.Spec.Destination.Bucket = d.Endpoint, d.Region, d.Bucket
	}}, mutate...)...))
}

// TestDestinationCheck: a new Backup's destination is checked by a Job in
// its namespace, in Steward's image, with the store's credentials Secret
// and nothing else; until it passes the Backup is not Ready. Against the
// S3 emulator the check passes, its Job is deleted, and the Backup is
// Ready; a destination that changes to a missing bucket is checked again
// and the Backup says why it cannot be used.
func TestDestinationCheck(t *testing.T) {
	ns := namespace(t)
	d, creds := storetest.S3(t)
	s3Backup(t, ns, "shop", d, creds)
	name := checkJob(t, ns, "shop")
	b := waitFor(t, ns, "shop", "CheckingDestination", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonCheckingDestination))
	if c := cond(b, v1alpha1.ConditionDestinationChecked); c == nil || c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, name) {
		t.Errorf("DestinationChecked = %+v, want Unknown naming Job %s", c, name)
	}
	if b.Status.Phase != v1alpha1.BackupPending || cond(b, v1alpha1.ConditionReconciling).Status != metav1.ConditionTrue {
		t.Errorf("phase %s, Reconciling %+v: want Pending, Reconciling, while the check runs", b.Status.Phase, cond(b, v1alpha1.ConditionReconciling))
	}
	if c := cond(b, v1alpha1.ConditionInsecureEndpoint); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, d.Endpoint) {
		t.Errorf("InsecureEndpoint = %+v, want True for %s", c, d.Endpoint)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventInsecureEndpoint, "allowed by allowInsecureEndpoint")

	job := &batchv1.Job{}
	if err := get(ns, name, job); err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "steward:test" || strings.Join(c.Command, " ") != "/steward-agent" || strings.Join(c.Args, " ") != dumpcmd.CommandCheck || len(pod.InitContainers) != 0 {
		t.Errorf("check pod: image %s, command %q, args %q, %d init containers", c.Image, c.Command, c.Args, len(pod.InitContainers))
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil || strings.HasPrefix(e.Name, "STEWARD_DB_") {
			t.Errorf("the check pod has %s: it needs no database", e.Name)
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.SecurityContext.RunAsNonRoot == nil ||
		!*pod.SecurityContext.RunAsNonRoot || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("check pod security: token %v, pod %+v, container %+v", pod.AutomountServiceAccountToken, pod.SecurityContext, c.SecurityContext)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || job.Spec.TTLSecondsAfterFinished == nil || job.Spec.ActiveDeadlineSeconds == nil ||
		metav1.GetControllerOf(job).Name != "shop" || job.Labels[v1alpha1.LabelBackup] != "" || job.Labels[v1alpha1.LabelBackupCheck] != "shop" {
		t.Errorf("check Job: backoffLimit %v, ttl %v, deadline %v, owner %v, labels %v", job.Spec.BackoffLimit,
			job.Spec.TTLSecondsAfterFinished, job.Spec.ActiveDeadlineSeconds, metav1.GetControllerOf(job), job.Labels)
	}

	if run := runJob(t, ns, name); run.code != 0 {
		t.Fatalf("the check failed: %s\n%s", run.message, run.log)
	}
	b = waitFor(t, ns, "shop", "Ready", hasCond(v1alpha1.ConditionReady, "True", v1alpha1.ReasonScheduled))
	if dc := b.Status.DestinationCheck; dc == nil || !dc.Passed || dc.Job != name || dc.Hash == "" || dc.CompletionTime == nil {
		t.Errorf("status.destinationCheck = %+v", dc)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventDestinationChecked, name)
	eventually(t, func() error {
		if err := get(ns, name, &batchv1.Job{}); err == nil {
			return fmt.Errorf("the finished check Job %s is still there", name)
		}
		return nil
	})

	// A schedule's change is no new destination: no new check.
	patch(t, ns, "shop", `{"spec":{"schedule":"0 4 * * *"}}`)
	waitFor(t, ns, "shop", "the new schedule", func(b *v1alpha1.Backup) bool {
		return b.Status.ObservedGeneration == b.Generation && b.Generation > 1
	})
	if jobs := checkJobs(t, ns, "shop"); len(jobs) != 0 {
		t.Errorf("check Jobs %v after a change of the schedule", jobs)
	}

	patch(t, ns, "shop", `{"spec":{"destination":{"bucket":"missing"}}}`)
	second := checkJob(t, ns, "shop")
	if second == name {
		t.Errorf("the new destination is checked by the Job of the old one, %s", name)
	}
	if run := runJob(t, ns, second); run.code == 0 || run.result.Reason != v1alpha1.ReasonBucketNotFound {
		t.Fatalf("the check of a missing bucket: %s", run.message)
	}
	b = waitFor(t, ns, "shop", "BucketNotFound", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonBucketNotFound))
	if c := cond(b, v1alpha1.ConditionDestinationChecked); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "NoSuchBucket") ||
		b.Status.Phase != v1alpha1.BackupFailed || cond(b, v1alpha1.ConditionStalled).Status != metav1.ConditionTrue {
		t.Errorf("DestinationChecked %+v, phase %s, Stalled %+v: want the store's error, Failed, Stalled", c, b.Status.Phase, cond(b, v1alpha1.ConditionStalled))
	}
	expectEvent(t, ns, "shop", v1alpha1.EventDestinationCheckFailed, "NoSuchBucket")
}

// TestMissingCredentialsSecret: a Backup whose credentials Secret does not
// exist says so, without a check Job, whose pod could not start; once the
// Secret exists its destination is checked.
func TestMissingCredentialsSecret(t *testing.T) {
	ns := namespace(t)
	create(t, newBackup(ns, "shop"))
	b := waitFor(t, ns, "shop", "CredentialsMissing", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonCredentialsMissing))
	if c := cond(b, v1alpha1.ConditionDestinationChecked); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "s3-keys") {
		t.Errorf("DestinationChecked = %+v, want False naming the Secret", c)
	}
	expectEvent(t, ns, "shop", v1alpha1.EventDestinationCheckFailed, "s3-keys")
	if jobs := checkJobs(t, ns, "shop"); len(jobs) != 0 {
		t.Errorf("check Jobs %v without the Secret", jobs)
	}
	storeSecret(t, ns)
	touch(t, ns, "shop")
	checkJob(t, ns, "shop")
}

// TestPlainHTTPRestoreIsRejected: a Restore's destination takes the same
// rule as a Backup's.
func TestPlainHTTPRestoreIsRejected(t *testing.T) {
	ns := namespace(t)
	r := &v1alpha1.Restore{
		ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns},
		Spec: v1alpha1.RestoreSpec{
			Source: v1alpha1.RestoreSource{Destination: &v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "dumps", Endpoint: "http://s3.example:9000"}},
			Target: v1alpha1.RestoreTarget{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "db"}},
		},
	}
	if err := k8s.Create(context.Background(), r.DeepCopy()); err == nil || !strings.Contains(err.Error(), "allowInsecureEndpoint") {
		t.Errorf("a Restore from a plain http:// endpoint: %v, want refused", err)
	}
	r.Spec.Source.Destination.AllowInsecureEndpoint = true
	create(t, r)
}

// TestDeleteFailureKeepsTheBackupUntilRetain: a delete Job that the store
// refuses keeps the Backup, with the store's error in an event and in
// Ready; setting deletionPolicy Retain lets it go and stops the deletion.
func TestDeleteFailureKeepsTheBackupUntilRetain(t *testing.T) {
	ns := namespace(t)
	d, creds := storetest.S3(t)
	creds[store.AWSSecretAccessKey] = []byte("refused-secret-0123456789")
	s3Backup(t, ns, "stuck", d, creds, func(b *v1alpha1.Backup) { b.Spec.DeletionPolicy = v1alpha1.DeletionDelete })
	b := waitFor(t, ns, "stuck", "finalizer", func(b *v1alpha1.Backup) bool { return len(b.Finalizers) == 1 })
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if run := runJob(t, ns, b.DeleteJobName()); run.code == 0 {
		t.Fatalf("the delete Job succeeded with refused credentials: %s", run.message)
	}
	b = waitFor(t, ns, "stuck", "DeleteFailed", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonDeleteFailed))
	if msg := cond(b, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "SignatureDoesNotMatch") || !strings.Contains(msg, "deletionPolicy is Retain") {
		t.Errorf("Ready's message %q does not carry the store's error and the way out", msg)
	}
	expectEvent(t, ns, "stuck", v1alpha1.EventDumpsDeleteFailed, "SignatureDoesNotMatch")
	time.Sleep(time.Second)
	if err := get(ns, "stuck", &v1alpha1.Backup{}); err != nil {
		t.Fatalf("the Backup went although its dumps were not deleted: %v", err)
	}
	patch(t, ns, "stuck", `{"spec":{"deletionPolicy":"Retain"}}`)
	eventually(t, func() error {
		if err := get(ns, "stuck", &v1alpha1.Backup{}); err == nil {
			return fmt.Errorf("the Backup still exists")
		}
		return nil
	})
	expectEvent(t, ns, "stuck", v1alpha1.EventDumpsRetained, "deletionPolicy Retain")
	if err := get(ns, b.DeleteJobName(), &batchv1.Job{}); err == nil {
		t.Error("the delete Job is left after deletionPolicy Retain")
	}
}

// TestUnknownDatabaseNameBlocksDelete: when nothing says which database
// the dumps are of, no delete Job starts and the Backup says why.
func TestUnknownDatabaseNameBlocksDelete(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "orphan", func(b *v1alpha1.Backup) {
		b.Spec.Source = v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "never"}}
		b.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	}))
	b := waitFor(t, ns, "orphan", "finalizer", func(b *v1alpha1.Backup) bool { return len(b.Finalizers) == 1 })
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	b = waitFor(t, ns, "orphan", "DeleteFailed", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonDeleteFailed))
	if msg := cond(b, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "name is unknown") {
		t.Errorf("Ready's message %q", msg)
	}
	expectEvent(t, ns, "orphan", v1alpha1.EventDumpsDeleteFailed, "name is unknown")
	if err := get(ns, b.DeleteJobName(), &batchv1.Job{}); err == nil {
		t.Error("a delete Job started without the database's name")
	}
	patch(t, ns, "orphan", `{"spec":{"deletionPolicy":"Retain"}}`)
	eventually(t, func() error {
		if err := get(ns, "orphan", &v1alpha1.Backup{}); err == nil {
			return fmt.Errorf("the Backup still exists")
		}
		return nil
	})
}

// TestNoCredentialReachesStatusEventsOrLogs plants distinctive
// credentials of every kind in the credentials Secrets of Backups whose
// checks and deletions fail with errors that quote them (stores that echo
// what a request carried, user information in the endpoint, a SAS token in
// the URL of a store that cannot be reached, an OAuth token endpoint that
// quotes the signed assertion and its key's id), runs their check and
// delete Jobs as pods would, and looks for every planted value in the
// Backups' statuses, the namespace's events, the pods' termination
// messages, the commands' logs and everything the operator logged.
func TestNoCredentialReachesStatusEventsOrLogs(t *testing.T) {
	ns := namespace(t)
	p := secrettest.New(t)
	gcs, _ := storetest.GCS(t)
	azurite, _ := storetest.Azurite(t)
	s3, s3Creds := storetest.S3(t)
	s3Creds[store.AWSSessionToken] = []byte(p.S3SessionToken)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pg-login", Namespace: ns},
		StringData: map[string]string{"username": "backup", "password": p.DBPassword}})
	cases := []struct {
		name  string
		d     v1alpha1.BackupDestination
		creds map[string][]byte
	}{
		{"s3-echo", v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups", Endpoint: p.WithUser(secrettest.EchoS3(t))}, p.S3Credentials()},
		{"s3-closed", v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups", Endpoint: p.WithUser(secrettest.ClosedEndpoint(t))}, p.S3Credentials()},
		{"s3-missing-bucket", v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "missing", Endpoint: s3.Endpoint, Region: s3.Region}, s3Creds},
		{"gcs-token", v1alpha1.BackupDestination{Type: v1alpha1.DestinationGCS, Bucket: "backups", Endpoint: gcs.Endpoint}, p.GCSCredentials(secrettest.TokenServer(t))},
		{"azure-sas-closed", v1alpha1.BackupDestination{Type: v1alpha1.DestinationAzure, Bucket: "backups",
			Endpoint: p.WithUser(secrettest.ClosedEndpoint(t)) + "/plantedaccount"}, p.AzureSASCredentials("plantedaccount")},
		{"azure-sas-echo", v1alpha1.BackupDestination{Type: v1alpha1.DestinationAzure, Bucket: "backups",
			Endpoint: secrettest.EchoAzure(t, "plantedaccount")}, p.AzureSASCredentials("plantedaccount")},
		{"azure-key", v1alpha1.BackupDestination{Type: v1alpha1.DestinationAzure, Bucket: "backups", Endpoint: azurite.Endpoint},
			p.AzureKeyCredentials(storetest.AzuriteAccount)},
	}
	var seen strings.Builder
	for _, tc := range cases {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tc.name + "-keys", Namespace: ns}, Data: tc.creds})
		create(t, newBackup(ns, tc.name, func(b *v1alpha1.Backup) {
			b.Spec.Destination = tc.d
			b.Spec.Destination.AllowInsecureEndpoint = true
			b.Spec.Destination.CredentialsSecretRef = &corev1.LocalObjectReference{Name: tc.name + "-keys"}
			b.Spec.DeletionPolicy = v1alpha1.DeletionDelete
		}))
	}
	for _, tc := range cases {
		run := runJob(t, ns, checkJob(t, ns, tc.name))
		seen.WriteString(run.message + run.log)
		b := waitFor(t, ns, tc.name, "a failed check", hasCond(v1alpha1.ConditionDestinationChecked, "False", run.result.Reason))
		t.Logf("%s: %s: %s", tc.name, run.result.Reason, cond(b, v1alpha1.ConditionDestinationChecked).Message)
		if run.code == 0 || run.result.Reason == "" {
			t.Errorf("%s: the check: %s", tc.name, run.message)
		}
		if err := k8s.Delete(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		run = runJob(t, ns, b.DeleteJobName())
		seen.WriteString(run.message + run.log)
		b = waitFor(t, ns, tc.name, "DeleteFailed", hasCond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonDeleteFailed))
		data, err := json.Marshal(b.Status)
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(data)
		expectEvent(t, ns, tc.name, v1alpha1.EventDumpsDeleteFailed, "")
	}
	events := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		seen.WriteString(e.Note + "\n")
	}
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				seen.WriteString(cs.State.Terminated.Message + "\n")
			}
		}
	}
	for _, tc := range cases {
		patch(t, ns, tc.name, `{"spec":{"deletionPolicy":"Retain"}}`)
	}
	for _, where := range []struct{ name, text string }{
		{"the statuses, events, termination messages and commands' logs", seen.String()},
		{"the operator's log", operatorLog.String()},
	} {
		if found := p.Find(where.text); len(found) > 0 {
			t.Errorf("%s hold planted credentials: %v", where.name, found)
		}
	}
	if n := strings.Count(seen.String(), "***"); n == 0 {
		t.Error("nothing was redacted: the provocations quoted no credential")
	} else {
		t.Logf("%d redactions", n)
	}
}

// checkJobs lists the names of the Backup's check Jobs.
func checkJobs(t *testing.T, ns, backup string) []string {
	t.Helper()
	list := &batchv1.JobList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelBackupCheck: backup}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

// patch merge-patches a Backup.
func patch(t *testing.T, ns, name, p string) {
	t.Helper()
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(context.Background(), b, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
		t.Fatalf("patching Backup %s: %v", name, err)
	}
}
