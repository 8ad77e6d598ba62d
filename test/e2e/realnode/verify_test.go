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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// TestBackupVerification runs, for a PostgreSQL and a MariaDB Database,
// verifications of their backups as real Jobs: the engine's image starts
// a throwaway server inside the verification's pod, restores the newest
// backup from the S3 emulator into it and compares every table with the
// manifest. A scheduled verification of a good backup passes; the same
// backup, its object replaced by a dump of altered data with the
// manifest's size and SHA-256 recomputed (the table digests kept), fails
// with TableChecksumMismatch; with one byte changed in the bucket, it
// fails with ChecksumMismatch. Finished verification Jobs are deleted.
func TestBackupVerification(t *testing.T) {
	requireClusterBeside(t)
	s3 := startStore(t)
	for _, e := range dumpEngines {
		t.Run(e.engine, func(t *testing.T) {
			t.Parallel()
			verification(t, e, s3)
		})
	}
}

func verification(t *testing.T, e dumpEngine, s3 *storetest.S3Server) {
	name := "vf-" + e.short
	applyDumpDatabase(t, name, e, "")
	eventually(t, 7*time.Minute, "Database "+name+" Ready", func() error { return databaseReady(t, name) })
	e.must(t, name+"-0", e.fill)

	prefix := "realnode/" + name
	now := fmt.Sprint(time.Now().Unix())
	applyAndDelete(t, "backup/"+name, fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
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
  schedule: "@yearly"
`, name, v1alpha1.AnnotationBackupNow, now, e.sourceType, storetest.Bucket, prefix, s3.Destination.Endpoint, storeSecretOf(t)))
	first := waitForRun(t, name, (&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}}).ManualJobName(now))
	var m dump.Manifest
	if err := json.Unmarshal(readObject(t, s3, prefix+"/"+first.Object+dump.ManifestSuffix), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != 3 {
		t.Fatalf("the manifest of %s has tables %+v, want 3", first.Object, m.Tables)
	}
	t.Logf("%s: backup %s, manifest tables %+v", name, first.Object, m.Tables)

	// A scheduled verification, every minute until one passed.
	began := time.Now()
	kubectl(t, "patch", "backup", name, "--type=merge", "-p", `{"spec":{"verify":{"schedule":"* * * * *"}}}`)
	// No verify-now yet: any verification is the CronJob's.
	v := waitForVerification(t, name, func(v *v1alpha1.BackupVerification) bool { return strings.HasPrefix(v.Job, name+"-verify-") })
	if !v.Passed || v.Reason != v1alpha1.ReasonVerificationPassed || v.Backup != first.Object || v.TablesChecked != 3 {
		t.Fatalf("the scheduled verification: %+v", v)
	}
	t.Logf("%s: scheduled verification %s passed %v after spec.verify was set; the verification took %ds: %s",
		name, v.Job, time.Since(began).Round(time.Second), v.DurationSeconds, v.Message)
	kubectl(t, "patch", "backup", name, "--type=merge", "-p", `{"spec":{"verify":{"schedule":"* * * * *","suspend":true}}}`)
	var b v1alpha1.Backup
	getJSON(t, &b, "backup", name)
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionVerified); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Verified = %+v", c)
	}
	eventually(t, 2*time.Minute, "the verification Job "+v.Job+" deleted with its pod", func() error {
		out := kubectl(t, "get", "job", v.Job, "--ignore-not-found", "-o", "name") +
			kubectl(t, "get", "pods", "-l", "batch.kubernetes.io/job-name="+v.Job, "-o", "name")
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("left: %s", out)
		}
		return nil
	})

	// A second backup of altered data (a row changed, as many rows)
	// replaces the first's object; the first's manifest gets the new
	// size and SHA-256, and keeps its table digests. The second backup
	// leaves the bucket, so that the first is the newest again.
	e.must(t, name+"-0", "update items set name = 'altered' where id = 42")
	second := backupNow(t, name, "altered")
	secondKey := prefix + "/" + second.Object
	altered := readObject(t, s3, secondKey)
	putObject(t, s3, prefix+"/"+first.Object, altered)
	sum := sha256.Sum256(altered)
	m.Size, m.SHA256 = int64(len(altered)), hex.EncodeToString(sum[:])
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, s3, prefix+"/"+first.Object+dump.ManifestSuffix, data)
	for _, k := range []string{secondKey, secondKey + dump.ManifestSuffix} {
		if _, err := s3.Backend.DeleteObject(storetest.Bucket, k); err != nil {
			t.Fatal(err)
		}
	}
	v = verifyNow(t, name, "altered")
	if v.Passed || v.Reason != v1alpha1.ReasonTableChecksumMismatch || v.Backup != first.Object || !strings.Contains(v.Message, "items") {
		t.Errorf("the verification of the altered dump: %+v, want TableChecksumMismatch naming items", v)
	}
	t.Logf("%s: the altered dump with a recomputed checksum: %s: %s (%ds)", name, v.Reason, v.Message, v.DurationSeconds)

	// One byte changed in the bucket.
	corruptObject(t, s3, prefix+"/"+first.Object)
	v = verifyNow(t, name, "corrupted")
	if v.Passed || v.Reason != v1alpha1.ReasonChecksumMismatch || !strings.Contains(v.Message, "its manifest says") {
		t.Errorf("the verification of the corrupted object: %+v, want ChecksumMismatch", v)
	}
	t.Logf("%s: the corrupted object: %s: %s (%ds)", name, v.Reason, v.Message, v.DurationSeconds)
	getJSON(t, &b, "backup", name)
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionVerified); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonChecksumMismatch {
		t.Errorf("Verified = %+v", c)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True: taking backups works", c)
	}
}

// waitForRun waits for a successful run of the Job job.
func waitForRun(t *testing.T, name, job string) v1alpha1.BackupRun {
	t.Helper()
	var run v1alpha1.BackupRun
	eventually(t, 4*time.Minute, "run "+job+" of Backup "+name, func() error {
		var b v1alpha1.Backup
		getJSON(t, &b, "backup", name)
		for _, r := range b.Status.History {
			if r.Job != job {
				continue
			}
			if !r.Succeeded {
				t.Fatalf("Backup %s: Job %s failed: %s", name, r.Job, r.Message)
			}
			run = r
			return nil
		}
		return fmt.Errorf("runs %+v, conditions %+v", b.Status.History, b.Status.Conditions)
	})
	return run
}

// backupNow asks for a run with the backup-now annotation and waits for it.
func backupNow(t *testing.T, name, value string) v1alpha1.BackupRun {
	t.Helper()
	kubectl(t, "annotate", "--overwrite", "backup", name, v1alpha1.AnnotationBackupNow+"="+value)
	return waitForRun(t, name, (&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}}).ManualJobName(value))
}

// verifyNow asks for a verification with the verify-now annotation and
// returns its outcome.
func verifyNow(t *testing.T, name, value string) v1alpha1.BackupVerification {
	t.Helper()
	began := time.Now()
	kubectl(t, "annotate", "--overwrite", "backup", name, v1alpha1.AnnotationVerifyNow+"="+value)
	job := (&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}}).ManualVerifyJobName(value)
	v := waitForVerification(t, name, func(v *v1alpha1.BackupVerification) bool { return v.Job == job })
	t.Logf("%s: verification %s ended %v after the annotation", name, job, time.Since(began).Round(time.Second))
	return v
}

// waitForVerification waits until status.lastVerified is one that ok
// accepts.
func waitForVerification(t *testing.T, name string, ok func(*v1alpha1.BackupVerification) bool) v1alpha1.BackupVerification {
	t.Helper()
	var v v1alpha1.BackupVerification
	eventually(t, 5*time.Minute, "a verification of Backup "+name, func() error {
		var b v1alpha1.Backup
		getJSON(t, &b, "backup", name)
		if b.Status.LastVerified == nil || !ok(b.Status.LastVerified) {
			return fmt.Errorf("lastVerified %+v, conditions %+v", b.Status.LastVerified, b.Status.Conditions)
		}
		v = *b.Status.LastVerified
		return nil
	})
	return v
}

// putObject writes an object into the emulator's backend.
func putObject(t *testing.T, s3 *storetest.S3Server, key string, data []byte) {
	t.Helper()
	obj, err := s3.Backend.HeadObject(storetest.Bucket, key)
	if err != nil {
		t.Fatalf("%s is not in the bucket: %v", key, err)
	}
	if _, err := s3.Backend.PutObject(storetest.Bucket, key, obj.Metadata, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatalf("writing %s: %v", key, err)
	}
}
