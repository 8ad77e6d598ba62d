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

	"github.com/steward-dev/steward/internal/backup/dump"
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
  schedule: "0 3 * * *"
  retention: {keepDaily: 7}
`

// finishPod writes a finished container's state and termination message
// into a pod's status, as a kubelet would: kwok runs no containers.
func finishPod(t *testing.T, ns, pod string, res dump.Result) {
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

// TestBackupOnTheCluster runs a Backup through the real CronJob and Job
// controllers: the CronJob and on-demand Job have the right spec, and a
// finished pod's termination message lands in the Backup's status.
func TestBackupOnTheCluster(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-backup")
	ns := "--namespace=e2e-backup"
	kubectl(t, backupManifest, "apply", "-f", "-")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "backup/nightly", "--timeout=60s")
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
	finishPod(t, "e2e-backup", pod, dump.Result{Succeeded: true, Key: "2026/11/22/20261122T030000.000Z-shop.pgdump",
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
	finishPod(t, "e2e-backup", jobPod(t, "e2e-backup", second), dump.Result{Succeeded: false, Error: "pg_dump: could not connect to server",
		StartTime: time.Now().UTC(), CompletionTime: time.Now().UTC()})
	eventually(t, 60*time.Second, func() error {
		got := kubectl(t, "", ns, "get", "backup", "nightly", "-o", `jsonpath={.status.conditions[?(@.type=="LastBackupSucceeded")].message}`)
		if !strings.Contains(got, "could not connect") {
			return fmt.Errorf("LastBackupSucceeded message: %q", got)
		}
		return nil
	})
}
