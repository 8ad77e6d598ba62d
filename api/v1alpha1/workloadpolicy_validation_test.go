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
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func newPolicy(mutate ...func(*v1alpha1.WorkloadPolicy)) *v1alpha1.WorkloadPolicy {
	names++
	p := &v1alpha1.WorkloadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("policy%d", names)},
		Spec:       v1alpha1.WorkloadPolicySpec{Environment: "production", MaxReplicas: new(int32(10))},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestWorkloadPolicyDefaults(t *testing.T) {
	p := newPolicy()
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.EnvironmentLabel != v1alpha1.DefaultEnvironmentLabel {
		t.Errorf("environmentLabel = %q, want the default %q", p.Spec.EnvironmentLabel, v1alpha1.DefaultEnvironmentLabel)
	}
	if p.Namespace != "" {
		t.Errorf("a WorkloadPolicy is cluster-scoped, got namespace %q", p.Namespace)
	}
}

func TestWorkloadPolicyValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.WorkloadPolicy)
		want   string // "" for valid
	}{
		{"every rule", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.EnvironmentLabel = "acme.com/tier"
			p.Spec.AllowedImages = []v1alpha1.ImageRule{{Prefix: "registry.acme.com/"}, {Pattern: `^ghcr\.io/acme/.+$`}}
			p.Spec.RequireResources = &v1alpha1.ResourceRule{Requests: []corev1.ResourceName{"cpu", "memory"}, Limits: []corev1.ResourceName{"memory"}}
			p.Spec.RunAsNonRoot = new(true)
		}, ""},
		{"no rule", func(p *v1alpha1.WorkloadPolicy) { p.Spec.MaxReplicas = nil }, "needs at least one rule"},
		{"runAsNonRoot false is no rule", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.MaxReplicas = nil
			p.Spec.RunAsNonRoot = new(false)
		}, "needs at least one rule"},
		{"no environment", func(p *v1alpha1.WorkloadPolicy) { p.Spec.Environment = "" }, "spec.environment"},
		{"environment not a label value", func(p *v1alpha1.WorkloadPolicy) { p.Spec.Environment = "prod env" }, "spec.environment"},
		{"label not a label key", func(p *v1alpha1.WorkloadPolicy) { p.Spec.EnvironmentLabel = "acme.com/tier/x" }, "spec.environmentLabel"},
		{"zero replicas", func(p *v1alpha1.WorkloadPolicy) { p.Spec.MaxReplicas = new(int32(0)) }, "spec.maxReplicas"},
		{"prefix without a slash", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.AllowedImages = []v1alpha1.ImageRule{{Prefix: "ghcr.io/acme"}}
		}, "prefix must end with /"},
		{"pattern not anchored", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.AllowedImages = []v1alpha1.ImageRule{{Pattern: `ghcr\.io/acme/`}}
		}, "pattern must start with ^"},
		{"pattern not a regular expression", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.AllowedImages = []v1alpha1.ImageRule{{Pattern: `^ghcr\.io/(acme`}}
		}, "error parsing regexp: missing closing )"},
		{"prefix and pattern in one entry", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.AllowedImages = []v1alpha1.ImageRule{{Prefix: "ghcr.io/acme/", Pattern: "^ghcr"}}
		}, "exactly one of the fields in [prefix pattern] must be set"},
		{"empty image rule", func(p *v1alpha1.WorkloadPolicy) { p.Spec.AllowedImages = []v1alpha1.ImageRule{{}} },
			"exactly one of the fields in [prefix pattern] must be set"},
		{"unknown resource", func(p *v1alpha1.WorkloadPolicy) {
			p.Spec.RequireResources = &v1alpha1.ResourceRule{Requests: []corev1.ResourceName{"gpu"}}
		}, "spec.requireResources.requests[0]"},
		{"empty resource rule", func(p *v1alpha1.WorkloadPolicy) { p.Spec.RequireResources = &v1alpha1.ResourceRule{} },
			"requireResources needs requests, limits or both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), newPolicy(tc.mutate))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "":
				expectInvalid(t, err, tc.want)
			}
		})
	}
}
