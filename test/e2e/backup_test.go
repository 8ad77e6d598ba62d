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

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
)

const backupManifest = `
apiVersion: v1
kind: Secret
metadata:
  name: pg-login
  namespace: e2e-backup
stringData:
  username: app
  password: not-used-here
---
apiVersion: steward.dev/v1alpha1
kind: Backup
metadata:
  name: nightly
  namespace: e2e-backup
spec:
  source:
    type: postgresql
    connection:
      host: pg.e2e-backup.svc
      database: shop
      credentialsSecretRef: {name: pg-login}
  destination:
    type: s3
    bucket: backups
    endpoint: http://s3.e2e-backup.svc:9000
    allowInsecureEndpoint: true
  schedule: "0 3 * * *"
  retention: {keepDaily: 7}
  deletionPolicy: Delete
`

// finishPod writes a finished container's state and termination message
// into a pod's status, as a kubelet would: kwok runs no containers.
func finishPod(t *testing.T, ns, pod string, res dumpcmd.Result) {
	t.Helper()
	msg, err := json.Marshal(string(res.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	phase, code := "Succeeded", 0
	if !res.Succeeded {
		phase, code = "Failed", 1
	}
	now := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"phase":%q,"containerStatuses":[{"name":"run","image":"x","imageID":"","ready":false,"restartCount":0,`+
		`"state":{"terminated":{"exitCode":%d,"reason":"Completed","message":%s,"startedAt":%q,"finishedAt":%q}}}]}}`,
		phase, code, msg, now, now)
	kubectl(t, "", "--namespace="+ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch)
}

// jobPod waits for the pod of a Job and returns its name.
func jobPod(t *testing.T, ns, job string) string {
	t.Helper()
	var pod string
	eventually(t, 60*time.Second, func() error {
		pod = strings.TrimSpace(kubectl(t, "", "--namespace="+ns, "get", "pods", "-l", "batch.kubernetes.io/job-name="+job,
			"-o", "jsonpath={.items[0].metadata.name}"))
		if pod == "" {
			return fmt.Errorf("no pod for Job %s yet", job)
		}
		return nil
	})
	return pod
}

// taskJob waits for the Job of a Backup with label (its check or its
// delete) and returns its name.
func taskJob(t *testing.T, ns, label, backup string) string {
	t.Helper()
	var job string
	eventually(t, 60*time.Second, func() error {
		job = strings.TrimSpace(kubectlOrEmpty("--namespace="+ns, "get", "jobs", "-l", label+"="+backup, "-o", "jsonpath={.items[0].metadata.name}"))
		if job == "" {
			return fmt.Errorf("no Job with %s=%s yet", label, backup)
		}
		return nil
	})
	return job
}

// passDestinationCheck finishes the pod of the Job that checks a Backup's
// destination as a kubelet would once the check passed: kwok runs no
// containers.
func passDestinationCheck(t *testing.T, ns, backup string) {
	t.Helper()
	job := taskJob(t, ns, "steward.dev/backup-check", backup)
	now := time.Now().UTC()
	finishPod(t, ns, jobPod(t, ns, job), dumpcmd.Result{Succeeded: true, StartTime: now, CompletionTime: now})
}

// TestBackupOnTheCluster runs a Backup through the real CronJob and Job
// controllers: its destination is checked by a Job in its namespace, in
// the operator's image, before it is Ready; the CronJob and on-demand Job
// have the right spec, and a finished pod's termination message lands in
// the Backup's status; deleting it runs the Job that deletes its dumps.
func TestBackupOnTheCluster(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-backup")
	ns := "--namespace=e2e-backup"
	kubectl(t, backupManifest, "apply", "-f", "-")
	check := taskJob(t, "e2e-backup", "steward.dev/backup-check", "nightly")
	if got := kubectl(t, "", ns, "get", "job", check, "-o", "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].args}"); !strings.Contains(got, "steward") || !strings.HasSuffix(got, `["backup-check"]`) {
		t.Errorf("check Job: %q, want the operator's image running backup-check", got)
	}
	eventually(t, 30*time.Second, func() error {
		if got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); got != "CheckingDestination" {
			return fmt.Errorf("Ready reason before the check finished = %q, want CheckingDestination", got)
		}
		return nil
	})
	passDestinationCheck(t, "e2e-backup", "nightly")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "backup/nightly", "--timeout=60s")
	kubectl(t, "", ns, "wait", "--for=condition=DestinationChecked", "backup/nightly", "--timeout=10s")
	kubectl(t, "", ns, "wait", "--for=delete", "job/"+check, "--timeout=60s")
	if got := kubectl(t, "", ns, "get", "cronjob", "nightly", "-o", "jsonpath={.spec.schedule} {.spec.concurrencyPolicy} {.spec.jobTemplate.spec.backoffLimit}"); got != "0 3 * * * Forbid 0" {
		t.Errorf("CronJob: %q", got)
	}

	// Ask for a run now.
	kubectl(t, "", ns, "annotate", "backup", "nightly", "steward.dev/backup-now=first")
	var job string
	eventually(t, 30*time.Second, func() error {
		job = strings.TrimSpace(kubectl(t, "", ns, "get", "jobs", "-l", "steward.dev/backup=nightly", "-o", "jsonpath={.items[0].metadata.name}"))
		if job == "" {
			return fmt.Errorf("no Job yet")
		}
		return nil
	})
	if img := kubectl(t, "", ns, "get", "job", job, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "postgres:17" {
		t.Errorf("Job image = %q", img)
	}
	pod := jobPod(t, "e2e-backup", job)
	start := time.Now().Add(-10 * time.Second).UTC()
	finishPod(t, "e2e-backup", pod, dumpcmd.Result{Succeeded: true, Key: "2026/11/22/20261122T030000.000Z-shop.pgdump",
		Size: 1234, SHA256: strings.Repeat("0f", 32), StartTime: start, CompletionTime: start.Add(9 * time.Second), DurationSeconds: 9})
	eventually(t, 60*time.Second, func() error {
		got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", "jsonpath={.status.lastBackup.object} {.status.lastBackup.size}")
		if got != "2026/11/22/20261122T030000.000Z-shop.pgdump 1234" {
			return fmt.Errorf("lastBackup: %q", got)
		}
		return nil
	})
	if got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", `jsonpath={.status.conditions[?(@.type=="LastBackupSucceeded")].status}`); got != "True" {
		t.Errorf("LastBackupSucceeded = %q", got)
	}

	// A failed run: its message lands in status.
	kubectl(t, "", ns, "annotate", "--overwrite", "backup", "nightly", "steward.dev/backup-now=second")
	var second string
	eventually(t, 30*time.Second, func() error {
		for _, j := range strings.Fields(kubectl(t, "", ns, "get", "jobs", "-l", "steward.dev/backup=nightly", "-o", "jsonpath={.items[*].metadata.name}")) {
			if j != job {
				second = j
				return nil
			}
		}
		return fmt.Errorf("no second Job yet")
	})
	finishPod(t, "e2e-backup", jobPod(t, "e2e-backup", second), dumpcmd.Result{Succeeded: false, Error: "pg_dump: could not connect to server",
		StartTime: time.Now().UTC(), CompletionTime: time.Now().UTC()})
	eventually(t, 60*time.Second, func() error {
		got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", `jsonpath={.status.conditions[?(@.type=="LastBackupSucceeded")].message}`)
		if !strings.Contains(got, "could not connect") {
			return fmt.Errorf("LastBackupSucceeded message: %q", got)
		}
		return nil
	})

	// Runs stopped succeeding three days ago, on a daily schedule: stale.
	old := time.Now().Add(-72 * time.Hour).UTC().Format(time.RFC3339)
	kubectl(t, "", ns, "patch", "backup", "nightly", "--subresource=status", "--type=merge", "-p",
		fmt.Sprintf(`{"status":{"lastBackup":{"job":"nightly-old","succeeded":true,"object":"k","completionTime":%q}}}`, old))
	kubectl(t, "", ns, "annotate", "--overwrite", "backup", "nightly", "e2e/touch=1")
	kubectl(t, "", ns, "wait", "--for=condition=BackupStale", "backup/nightly", "--timeout=60s")
	if got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); got != "BackupStale" {
		t.Errorf("Ready reason = %q, want BackupStale", got)
	}

	// deletionPolicy Delete: the Backup stays until its delete Job
	// succeeded.
	kubectl(t, "", ns, "delete", "backup", "nightly", "--wait=false")
	del := taskJob(t, "e2e-backup", "steward.dev/backup-delete", "nightly")
	if got := kubectl(t, "", ns, "get", "job", del, "-o", `jsonpath={.spec.template.spec.containers[0].args} {.spec.template.spec.containers[0].env[?(@.name=="STEWARD_DB_NAME")].value}`); got != `["backup-delete"] shop` {
		t.Errorf("delete Job: %q", got)
	}
	kubectl(t, "", ns, "get", "backup", "nightly")
	now := time.Now().UTC()
	finishPod(t, "e2e-backup", jobPod(t, "e2e-backup", del), dumpcmd.Result{Succeeded: true, Deleted: 3, StartTime: now, CompletionTime: now})
	kubectl(t, "", ns, "wait", "--for=delete", "backup/nightly", "--timeout=60s")
	if got := kubectl(t, "", ns, "get", "events", "--field-selector=reason=DumpsDeleted", "-o", "jsonpath={.items[*].message}"); !strings.Contains(got, "deleted 3 stored dumps") {
		t.Errorf("DumpsDeleted events: %q", got)
	}
}

const databaseWithBackups = `
apiVersion: v1
kind: Secret
metadata:
  name: store-keys
  namespace: e2e-dbbackup
stringData:
  AWS_ACCESS_KEY_ID: AKIAE2E
  AWS_SECRET_ACCESS_KEY: not-used-here
---
apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: orders
  namespace: e2e-dbbackup
spec:
  engine: postgres
  version: "16"
  storage: {size: 1Gi}
  backup:
    schedule: "@daily"
    retention: {keepDaily: 7, keepMonthly: 12}
    destination:
      type: s3
      bucket: backups
      prefix: orders
      endpoint: http://s3.e2e-dbbackup.svc:9000
      allowInsecureEndpoint: true
      credentialsSecretRef: {name: store-keys}
`

const databaseFromBackup = `
apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: orders-copy
  namespace: e2e-dbbackup
spec:
  engine: postgres
  version: "16"
  storage: {size: 1Gi}
  bootstrap:
    fromBackup:
      backupRef: {name: orders-backup}
      object: latest
`

// TestDatabaseBackupsAndBootstrap: a Database with spec.backup owns a
// Backup whose results reach the Database's status, and a Database with
// spec.bootstrap.fromBackup is Ready only after its Restore ran.
func TestDatabaseBackupsAndBootstrap(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-dbbackup")
	ns := "--namespace=e2e-dbbackup"
	kubectl(t, databaseWithBackups, "apply", "-f", "-")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders", "--timeout=90s")
	eventually(t, 60*time.Second, func() error {
		owner := kubectlOrEmpty(ns, "get", "backup", "orders-backup", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}")
		if owner != "Database/orders" {
			return fmt.Errorf("Backup orders-backup owner: %q", owner)
		}
		return nil
	})
	passDestinationCheck(t, "e2e-dbbackup", "orders-backup")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "backup/orders-backup", "--timeout=60s")
	if got := kubectl(t, "", ns, "get", "cronjob", "orders-backup", "-o", "jsonpath={.spec.jobTemplate.spec.template.spec.containers[0].image}"); got != "postgres:16" {
		t.Errorf("the backup runs in %q, want the Database's own image postgres:16", got)
	}

	kubectl(t, "", ns, "annotate", "backup", "orders-backup", "steward.dev/backup-now=1")
	var job string
	eventually(t, 30*time.Second, func() error {
		job = strings.TrimSpace(kubectl(t, "", ns, "get", "jobs", "-l", "steward.dev/backup=orders-backup", "-o", "jsonpath={.items[0].metadata.name}"))
		if job == "" {
			return fmt.Errorf("no Job yet")
		}
		return nil
	})
	key := "orders/2026/11/22/20261122T120000.000Z-app.pgdump"
	finishPod(t, "e2e-dbbackup", jobPod(t, "e2e-dbbackup", job), dumpcmd.Result{Succeeded: true, Key: key, Size: 2048,
		SHA256: strings.Repeat("1a", 32), StartTime: time.Now().Add(-5 * time.Second).UTC(), CompletionTime: time.Now().UTC(), DurationSeconds: 5})
	eventually(t, 60*time.Second, func() error {
		if got := kubectl(t, "", ns, "get", "database", "orders", "-o", "jsonpath={.status.lastBackup.object}"); got != key {
			return fmt.Errorf("Database lastBackup: %q", got)
		}
		return nil
	})

	// A new Database from that backup: its Restore runs once an instance
	// is up, and the Database is Ready only after the Restore succeeded.
	kubectl(t, databaseFromBackup, "apply", "-f", "-")
	var restoreJob string
	eventually(t, 90*time.Second, func() error {
		restoreJob = strings.TrimSpace(kubectlOrEmpty(ns, "get", "jobs", "-l", "steward.dev/restore=orders-copy-bootstrap", "-o", "jsonpath={.items[0].metadata.name}"))
		if restoreJob == "" {
			return fmt.Errorf("no restore Job yet")
		}
		return nil
	})
	if ready := kubectl(t, "", ns, "get", "database", "orders-copy", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); ready == "True" {
		t.Error("the Database is Ready before its bootstrap restore ran")
	}
	env := kubectl(t, "", ns, "get", "job", restoreJob, "-o", `jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value};{end}`)
	for _, want := range []string{"STEWARD_DESTINATION_BUCKET=backups;", "STEWARD_DESTINATION_PREFIX=orders;", "STEWARD_RESTORE_KEY=latest;", "STEWARD_DB_HOST=orders-copy.e2e-dbbackup.svc;"} {
		if !strings.Contains(env, want) {
			t.Errorf("restore Job env lacks %s: %s", want, env)
		}
	}
	finishPod(t, "e2e-dbbackup", jobPod(t, "e2e-dbbackup", restoreJob), dumpcmd.Result{Succeeded: true, Key: key, Size: 2048,
		SHA256: strings.Repeat("1a", 32), StartTime: time.Now().UTC(), CompletionTime: time.Now().UTC()})
	kubectl(t, "", ns, "wait", "--for=jsonpath={.status.phase}=Succeeded", "restore/orders-copy-bootstrap", "--timeout=60s")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders-copy", "--timeout=60s")
}

// kubectlOrEmpty runs kubectl and returns "" when it fails (not found yet).
func kubectlOrEmpty(args ...string) string {
	out, err := kubectlMayFail(args...)
	if err != nil {
		return ""
	}
	return out
}
