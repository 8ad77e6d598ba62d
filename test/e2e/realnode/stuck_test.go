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
	"fmt"
	"strings"
	"testing"
	"time"
)

// stuckPodTimeout is the operator's --stuck-pod-timeout in these tests
// (the chart's default is 2m).
const stuckPodTimeout = 30 * time.Second

// TestStuckWorkReportsItself creates objects whose pods cannot start on a
// real node, each for a reason of its own, and checks that each turns
// Degraded with the pod's own reason and a Warning event, then recovers by
// itself once its spec is fixed.
func TestStuckWorkReportsItself(t *testing.T) {
	requireClusterBeside(t)
	cases := []struct {
		kind, name, manifest string
		// reason and message are what the Degraded condition must carry.
		reason, message string
		// fix is the merge patch that removes the cause.
		fix string
	}{
		{
			kind: "webapp", name: "cannot-pull",
			// A registry on the node's loopback, where nothing listens:
			// the pull fails at once and nothing leaves the machine.
			manifest: `spec: {image: "localhost:9/steward-test/missing:1", resources: {requests: {cpu: 10m}}}`,
			reason:   "ImagePullFailing", message: "localhost:9/steward-test/missing:1",
			fix: `{"spec":{"image":"nginxinc/nginx-unprivileged:1.22"}}`,
		},
		{
			kind: "webapp", name: "crashes",
			// The PostgreSQL server as a web app: it exits at once,
			// refusing to run as root without a data directory.
			manifest: `spec: {image: "postgres:15", resources: {requests: {cpu: 10m}}}`,
			reason:   "CrashLooping", message: "crashes",
			fix: `{"spec":{"image":"nginxinc/nginx-unprivileged:1.22"}}`,
		},
		{
			kind: "database", name: "unschedulable-db",
			manifest: `spec:
  engine: postgres
  version: "15"
  deletionPolicy: Delete
  resources: {requests: {cpu: "3", memory: 256Mi}, limits: {memory: 512Mi}}`,
			reason: "PodsUnschedulable", message: "Insufficient cpu",
			fix: `{"spec":{"resources":{"requests":{"cpu":"50m","memory":"256Mi"},"limits":{"memory":"512Mi"}}}}`,
		},
		{
			kind: "cache", name: "unschedulable-cache",
			manifest: `spec:
  engine: redis
  version: "7.0"
  memory: 64Mi
  resources: {requests: {cpu: "3"}}`,
			reason: "PodsUnschedulable", message: "Insufficient cpu",
			fix: `{"spec":{"resources":{"requests":{"cpu":"20m"}}}}`,
		},
	}
	kinds := map[string]string{"webapp": "WebApp", "database": "Database", "cache": "Cache"}
	began := time.Now()
	for _, c := range cases {
		manifest := fmt.Sprintf("apiVersion: steward.dev/v1alpha1\nkind: %s\nmetadata: {name: %s, namespace: default}\n%s\n", kinds[c.kind], c.name, c.manifest)
		applyAndDelete(t, c.kind+"/"+c.name, manifest)
	}
	for _, c := range cases {
		object := c.kind + "/" + c.name
		var condition string
		eventually(t, stuckPodTimeout+3*time.Minute, object+" Degraded with its pod's reason", func() error {
			condition = jsonpath(t, object, `{.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].reason}: {.status.conditions[?(@.type=="Degraded")].message}`)
			if !strings.HasPrefix(condition, "True "+c.reason+": ") || !strings.Contains(condition, c.message) {
				return fmt.Errorf("Degraded = %q, want True %s with %q", condition, c.reason, c.message)
			}
			return nil
		})
		t.Logf("%s Degraded %v after its creation (timeout %v): %s", object, time.Since(began).Round(time.Second), stuckPodTimeout, condition)
		events := kubectl(t, "get", "events", "--field-selector=type=Warning,reason="+c.reason+",involvedObject.name="+c.name+",involvedObject.kind="+kinds[c.kind],
			"-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, c.message) {
			t.Errorf("%s: no Warning event %s with %q: %q", object, c.reason, c.message, events)
		}
	}
	for _, c := range cases {
		kubectl(t, "patch", c.kind, c.name, "--type=merge", "-p", c.fix)
	}
	for _, c := range cases {
		object := c.kind + "/" + c.name
		began := time.Now()
		kubectl(t, "wait", "--for=condition=Ready", object, "--timeout=300s")
		degraded := jsonpath(t, object, `{.status.conditions[?(@.type=="Degraded")].status}`)
		t.Logf("%s Ready %v after its fix; Degraded=%s", object, time.Since(began).Round(time.Second), degraded)
		if degraded != "False" {
			t.Errorf("%s is Ready but Degraded=%s", object, degraded)
		}
	}
}
