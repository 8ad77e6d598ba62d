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

package workloadpolicy_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestAdmissionPolicyTypeChecks runs the type checker whose findings a
// cluster's controller manager writes to the ValidatingAdmissionPolicy's
// status.typeChecking, against the schemas of the CRDs and of the
// WorkloadPolicy parameters. The validations must type-check for every
// kind. The variables may name fields only some kinds have, behind a test
// of the kind: "undefined field" is the one error they may have.
func TestAdmissionPolicyTypeChecks(t *testing.T) {
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: v1alpha1.WorkloadPolicyAdmission}, &vap); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checker := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc}, RestMapper: k8s.RESTMapper()}
	for _, w := range checker.Check(&vap) {
		t.Errorf("%s: %s", w.FieldRef, w.Warning)
	}
	ctx := checker.CreateContext(&vap)
	for _, v := range vap.Spec.Variables {
		for _, r := range checker.CheckExpression(ctx, v.Expression) {
			if r.Err != nil {
				t.Errorf("variable %s, %s: %v", v.Name, r.GVK.Kind, r.Err)
			}
			if r.Issues == nil {
				continue
			}
			for _, line := range strings.Split(r.Issues.Error(), "\n") {
				if strings.HasPrefix(line, "ERROR:") && !strings.Contains(line, "undefined field") {
					t.Errorf("variable %s, %s: %s", v.Name, r.GVK.Kind, line)
				}
			}
		}
	}
}
