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

package restore

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

var engines = []v1alpha1.DatabaseEngine{v1alpha1.EnginePostgres, v1alpha1.EngineMySQL, v1alpha1.EngineMariaDB}

// FuzzJob checks the Job of any Restore the schema admits (a name of at
// most 55 characters): the same every time, named <name>-restore within
// the 63 characters of a Job's name and label, with valid labels, owned by
// the Restore, never retried, running a restore of the key whatever the
// run said; and the check of its type against its Database's engine.
func FuzzJob(f *testing.F) {
	f.Add("orders-from-nightly", "", "backup", false, uint8(0))
	f.Add("orders.restore", "2026/01/01/orders.dump", "restore", true, uint8(1|2))
	f.Add("a-restore-name-of-exactly-fifty-five-characters-for-a-job", "latest", "", false, uint8(255))
	f.Fuzz(func(t *testing.T, name, object, command string, overwrite bool, choice uint8) {
		if len(name) > 55 || len(validation.IsDNS1123Subdomain(name)) > 0 || len(object) > 1024 {
			t.Skip("refused by the schema")
		}
		targetType := []v1alpha1.BackupSourceType{v1alpha1.SourcePostgreSQL, v1alpha1.SourceMySQL}[choice%2]
		r := &v1alpha1.Restore{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: "uid-restore"},
			Spec: v1alpha1.RestoreSpec{
				Source: v1alpha1.RestoreSource{BackupRef: &corev1.LocalObjectReference{Name: "orders-s3"}, Object: object},
				Target: v1alpha1.RestoreTarget{Type: targetType, DatabaseRef: &corev1.LocalObjectReference{Name: "orders"}},
			},
		}
		run := jobs.Run{Command: command, Image: "postgres:16", InstanceImage: "steward:test",
			Conn:        jobs.Connection{Type: targetType, Host: "orders.prod.svc", Database: "app", CredentialsSecret: "orders-superuser"},
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "steward-backups", Prefix: "prod/orders"},
			Key:         Key(r), Overwrite: overwrite, Labels: map[string]string{"other": "labels"}}
		job := Job(r, run)
		if !equality.Semantic.DeepEqual(job, Job(r, run)) {
			t.Fatal("the Job differs from one build to the next")
		}
		if *job.Name != JobName(r) || len(*job.Name) > 63 || len(validation.IsDNS1123Subdomain(*job.Name)) > 0 ||
			len(validation.IsValidLabelValue(*job.Name)) > 0 || *job.Namespace != r.Namespace {
			t.Fatalf("Job %s/%s of Restore %s", *job.Namespace, *job.Name, r.Name)
		}
		if err := fuzzcheck.Labels(job.Labels); err != nil {
			t.Fatal(err)
		}
		if refs := job.OwnerReferences; len(refs) != 1 || *refs[0].UID != r.UID || !*refs[0].Controller || *refs[0].Kind != "Restore" {
			t.Fatalf("owner references %+v", refs)
		}
		tmpl := job.Spec.Template
		if *job.Spec.BackoffLimit != 0 || !equality.Semantic.DeepEqual(tmpl.Labels, Labels(r)) {
			t.Fatalf("backoff %d, pod labels %v", *job.Spec.BackoffLimit, tmpl.Labels)
		}
		c := tmpl.Spec.Containers[0]
		if c.Command[len(c.Command)-1] != dumpcmd.CommandRestore {
			t.Fatalf("the run's command is %v", c.Command)
		}
		key := ""
		for _, e := range c.Env {
			if *e.Name == dumpcmd.EnvRestoreKey {
				key = *e.Value
			}
		}
		if want := object; key != want && (want != "" || key != v1alpha1.LatestObject) {
			t.Fatalf("restores %q, want %q", key, want)
		}
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders"}, Spec: v1alpha1.DatabaseSpec{Engine: engines[int(choice>>1)%3]}}
		if err := CheckType(r, db); (err == nil) != (db.SourceType() == targetType) {
			t.Fatalf("CheckType of %s into %s: %v", targetType, db.Spec.Engine, err)
		}
	})
}
