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

package workloadpolicy

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func TestComputeStatus(t *testing.T) {
	p := &v1alpha1.WorkloadPolicy{ObjectMeta: metav1.ObjectMeta{Name: "production", Generation: 3},
		Spec: v1alpha1.WorkloadPolicySpec{Environment: "production"}}
	var found []violator
	for i := range 150 {
		found = append(found, violator{PolicyViolator: v1alpha1.PolicyViolator{
			Kind: "WebApp", Namespace: fmt.Sprintf("ns%03d", 149-i), Name: "shop", Message: "spec.replicas: too many",
		}})
	}
	st := computeStatus(p, found, nil)
	if st.ObservedGeneration != 3 || st.Violations != 150 || len(st.Violators) != maxViolators {
		t.Errorf("generation %d, %d violations, %d violators listed; want 3, 150, %d",
			st.ObservedGeneration, st.Violations, len(st.Violators), maxViolators)
	}
	if st.Violators[0].Namespace != "ns000" {
		t.Errorf("violators not sorted: first %+v", st.Violators[0])
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCompliant)
	want := "150 objects break the policy: WebApp ns000/shop: spec.replicas: too many; "
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonViolations ||
		!strings.HasPrefix(c.Message, want) || !strings.HasSuffix(c.Message, "; and 145 more") {
		t.Errorf("Compliant = %+v", c)
	}
	if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("not Ready: %+v", st.Conditions)
	}

	st = computeStatus(p, nil, nil)
	c = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCompliant)
	if st.Violations != 0 || st.Violators != nil || c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonNoViolations {
		t.Errorf("without violators: %+v", st)
	}
}

// TestComputeStatusUnwatched: in namespaced mode (--watch-namespaces) the
// namespaces of the environment that the operator does not watch are not
// checked, and the conditions say so instead of claiming compliance.
func TestComputeStatusUnwatched(t *testing.T) {
	p := &v1alpha1.WorkloadPolicy{ObjectMeta: metav1.ObjectMeta{Name: "production", Generation: 1},
		Spec: v1alpha1.WorkloadPolicySpec{Environment: "production"}}
	st := computeStatus(p, nil, []string{"shop-b", "shop-a"})
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue ||
		!strings.HasSuffix(ready.Message, "; not those of shop-a, shop-b, which the operator does not watch (--watch-namespaces)") {
		t.Errorf("Ready = %+v", ready)
	}
	compliant := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionCompliant)
	if compliant == nil || compliant.Message != "No object breaks the policy in the namespaces checked" {
		t.Errorf("Compliant = %+v", compliant)
	}
}
