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

package v1alpha1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// WorkloadPolicy.Check's verdicts are tested against the API server's in
// internal/controller/workloadpolicy; these are the cases around them.

func TestWorkloadPolicyAppliesTo(t *testing.T) {
	p := &v1alpha1.WorkloadPolicy{Spec: v1alpha1.WorkloadPolicySpec{Environment: "production"}}
	custom := &v1alpha1.WorkloadPolicy{Spec: v1alpha1.WorkloadPolicySpec{EnvironmentLabel: "acme.com/tier", Environment: "production"}}
	for _, tc := range []struct {
		policy *v1alpha1.WorkloadPolicy
		labels map[string]string
		want   bool
	}{
		{p, map[string]string{v1alpha1.DefaultEnvironmentLabel: "production"}, true},
		{p, map[string]string{v1alpha1.DefaultEnvironmentLabel: "staging"}, false},
		{p, map[string]string{"acme.com/tier": "production"}, false},
		{p, nil, false},
		{custom, map[string]string{"acme.com/tier": "production"}, true},
		{custom, map[string]string{v1alpha1.DefaultEnvironmentLabel: "production"}, false},
	} {
		if got := tc.policy.AppliesTo(tc.labels); got != tc.want {
			t.Errorf("policy on %s=%s, namespace labels %v: AppliesTo = %v, want %v",
				tc.policy.EnvironmentLabel(), tc.policy.Spec.Environment, tc.labels, got, tc.want)
		}
	}
}

func TestWorkloadPolicyCheckReadsOnlyItsKinds(t *testing.T) {
	p := &v1alpha1.WorkloadPolicy{ObjectMeta: metav1.ObjectMeta{Name: "production"},
		Spec: v1alpha1.WorkloadPolicySpec{Environment: "production", MaxReplicas: new(int32(1)), RunAsNonRoot: new(true)}}
	var nilApp *v1alpha1.WebApp
	for _, obj := range []runtime.Object{nil, nilApp, &corev1.Pod{}, &v1alpha1.Backup{}} {
		if errs := p.Check(obj, nil); len(errs) > 0 {
			t.Errorf("%T: %v", obj, errs)
		}
	}
	// A WebApp checked against its nil self is checked as created.
	app := &v1alpha1.WebApp{Spec: v1alpha1.WebAppSpec{Image: "shop:1", Replicas: new(int32(2))}}
	if errs := p.Check(app, nilApp); len(errs) != 2 {
		t.Errorf("WebApp with 2 replicas, no runAsNonRoot: %v, want 2 violations", errs)
	}
}
