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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

func TestWorkloadPolicyDefault(t *testing.T) {
	p := &v1alpha1.WorkloadPolicy{Spec: v1alpha1.WorkloadPolicySpec{Environment: "production", RunAsNonRoot: new(true)}}
	app := func(c *corev1.SecurityContext, pod *corev1.PodSecurityContext) *v1alpha1.WebApp {
		return &v1alpha1.WebApp{Spec: v1alpha1.WebAppSpec{Image: "shop:1", SecurityContext: c, PodSecurityContext: pod}}
	}
	readOnly := &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)}
	for _, tc := range []struct {
		name     string
		policy   *v1alpha1.WorkloadPolicy
		obj, old *v1alpha1.WebApp
		want     string // the path set, or ""
		wantPod  *corev1.PodSecurityContext
	}{
		{"nothing set", p, app(nil, nil), nil,
			"spec.podSecurityContext.runAsNonRoot", &corev1.PodSecurityContext{RunAsNonRoot: new(true)}},
		{"other pod fields kept", p, app(readOnly, &corev1.PodSecurityContext{FSGroup: new(int64(2000))}), nil,
			"spec.podSecurityContext.runAsNonRoot", &corev1.PodSecurityContext{FSGroup: new(int64(2000)), RunAsNonRoot: new(true)}},
		{"pod says false", p, app(nil, &corev1.PodSecurityContext{RunAsNonRoot: new(false)}), nil,
			"", &corev1.PodSecurityContext{RunAsNonRoot: new(false)}},
		{"container says false", p, app(&corev1.SecurityContext{RunAsNonRoot: new(false)}, nil), nil, "", nil},
		{"container says true", p, app(&corev1.SecurityContext{RunAsNonRoot: new(true)}, nil), nil, "", nil},
		{"policy without runAsNonRoot", &v1alpha1.WorkloadPolicy{Spec: v1alpha1.WorkloadPolicySpec{Environment: "staging", MaxReplicas: new(int32(2))}},
			app(nil, nil), nil, "", nil},
		{"update leaving the security contexts alone", p, app(nil, nil), app(nil, nil), "", nil},
		{"update changing a security context", p, app(readOnly, nil), app(nil, nil),
			"spec.podSecurityContext.runAsNonRoot", &corev1.PodSecurityContext{RunAsNonRoot: new(true)}},
		{"update dropping the default", p, app(nil, nil), app(nil, &corev1.PodSecurityContext{RunAsNonRoot: new(true)}),
			"spec.podSecurityContext.runAsNonRoot", &corev1.PodSecurityContext{RunAsNonRoot: new(true)}},
	} {
		var old runtime.Object
		if tc.old != nil {
			old = tc.old
		}
		set := tc.policy.Default(tc.obj, old)
		got := ""
		if len(set) > 0 {
			got = set[0].String()
		}
		if got != tc.want || len(set) > 1 {
			t.Errorf("%s: Default set %v, want %q", tc.name, set, tc.want)
		}
		if !equality.Semantic.DeepEqual(tc.obj.Spec.PodSecurityContext, tc.wantPod) {
			t.Errorf("%s: podSecurityContext %+v, want %+v", tc.name, tc.obj.Spec.PodSecurityContext, tc.wantPod)
		}
	}

	// An AppStack's apps, each compared with the app of the same name.
	stack := func(apps ...v1alpha1.StackApp) *v1alpha1.AppStack {
		return &v1alpha1.AppStack{Spec: v1alpha1.AppStackSpec{Environment: v1alpha1.StackProduction, Apps: apps}}
	}
	before := stack(v1alpha1.StackApp{Name: "api"}, v1alpha1.StackApp{Name: "web"})
	after := stack(v1alpha1.StackApp{Name: "api"},
		v1alpha1.StackApp{Name: "web", WebAppSpec: v1alpha1.WebAppSpec{SecurityContext: readOnly}},
		v1alpha1.StackApp{Name: "admin"},
		v1alpha1.StackApp{Name: "root", WebAppSpec: v1alpha1.WebAppSpec{SecurityContext: &corev1.SecurityContext{RunAsNonRoot: new(false)}}})
	var paths []string
	for _, f := range p.Default(after, before) {
		paths = append(paths, f.String())
	}
	if want := []string{"spec.apps[web].podSecurityContext.runAsNonRoot", "spec.apps[admin].podSecurityContext.runAsNonRoot"}; !slices.Equal(paths, want) {
		t.Errorf("AppStack update: Default set %v, want %v", paths, want)
	}

	var nilApp *v1alpha1.WebApp
	for _, obj := range []runtime.Object{nil, nilApp, &corev1.Pod{}, &v1alpha1.Cache{}, &v1alpha1.Database{}} {
		if set := p.Default(obj, nil); len(set) > 0 {
			t.Errorf("%T: Default set %v", obj, set)
		}
	}
}
