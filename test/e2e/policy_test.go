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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// TestWorkloadPolicyReportsExistingObjects: a WebApp that a policy made
// after it forbids is reported by the running operator (the policy's status
// and a PolicyViolation event on the WebApp), and left as it is; a new
// WebApp breaking the same rule is refused at admission.
func TestWorkloadPolicyReportsExistingObjects(t *testing.T) {
	const ns = "e2e-policy-prod"
	kubectl(t, "", "apply", "--server-side", "-k", "config/policy")
	kubectl(t, "", "create", "namespace", ns)
	kubectl(t, "", "label", "namespace", ns, "steward.dev/environment=e2e-production")
	big := strings.ReplaceAll(strings.ReplaceAll(webapp, "e2e-webapp", ns), "healthCheck:", "replicas: 5\n  healthCheck:")
	kubectl(t, big, "apply", "-f", "-")

	kubectl(t, `apiVersion: steward.dev/v1alpha1
kind: WorkloadPolicy
metadata:
  name: e2e-production
spec:
  environment: e2e-production
  maxReplicas: 3
`, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = kubectlMayFail("delete", "workloadpolicy", "e2e-production", "--ignore-not-found") })

	eventually(t, 2*time.Minute, func() error {
		got := kubectl(t, "", "get", "workloadpolicy", "e2e-production", "-o",
			`jsonpath={.status.violations} {.status.violators[0].namespace}/{.status.violators[0].name} {.status.conditions[?(@.type=="Compliant")].status}`)
		if got != "1 "+ns+"/hello False" {
			return fmt.Errorf("policy status %q, want one violator %s/hello and Compliant False", got, ns)
		}
		events := kubectl(t, "", "get", "events", "--namespace="+ns, "--field-selector=reason=PolicyViolation,involvedObject.name=hello", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "spec.replicas") || !strings.Contains(events, "e2e-production") {
			return fmt.Errorf("PolicyViolation events on the WebApp: %q", events)
		}
		return nil
	})
	if got := kubectl(t, "", "get", "webapp", "hello", "--namespace="+ns, "-o", "jsonpath={.spec.replicas}"); got != "5" {
		t.Errorf("the existing WebApp's replicas are %s, want 5: a policy made later reports, it does not change", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := strings.ReplaceAll(big, "name: hello", "name: hello-again")
	if out, err := devenv.Kubectl(ctx, cluster, []byte(other), "apply", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "spec.replicas: Invalid value: 5: e2e-production allows at most 3 (policy e2e-production)") {
		t.Errorf("a new WebApp with 5 replicas: %q, %v; want a refusal naming the rule and the policy", out, err)
	}
}
