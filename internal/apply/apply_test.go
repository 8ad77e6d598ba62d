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

package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func TestContains(t *testing.T) {
	tests := []struct {
		name       string
		live, want any
		contains   bool
	}{
		{"equal scalars", 3.0, 3.0, true},
		{"different scalars", 3.0, 2.0, false},
		{"extra live keys", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 1.0}, true},
		{"missing key", map[string]any{"a": 1.0}, map[string]any{"b": 1.0}, false},
		{"changed nested value", map[string]any{"spec": map[string]any{"replicas": 5.0}}, map[string]any{"spec": map[string]any{"replicas": 3.0}}, false},
		{"empty map wanted, key absent", map[string]any{}, map[string]any{"labels": map[string]any{}}, true},
		{"list elements matched in any order", []any{"x", "y"}, []any{"y"}, true},
		{"list element missing", []any{"x"}, []any{"x", "y"}, false},
		{
			"list of maps with defaulted fields",
			[]any{map[string]any{"name": "app", "image": "a:1", "imagePullPolicy": "IfNotPresent"}},
			[]any{map[string]any{"name": "app", "image": "a:1"}},
			true,
		},
		{
			"list of maps with drifted field",
			[]any{map[string]any{"name": "app", "image": "a:2"}},
			[]any{map[string]any{"name": "app", "image": "a:1"}},
			false,
		},
		{"type mismatch", "3", 3.0, false},
		{"empty string wanted, key absent", map[string]any{"name": "E"}, map[string]any{"name": "E", "value": ""}, true},
		{"empty string wanted, live has a value", map[string]any{"name": "E", "value": "x"}, map[string]any{"name": "E", "value": ""}, false},
		{"false wanted, key absent", map[string]any{}, map[string]any{"allowPrivilegeEscalation": false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.live, tt.want); got != tt.contains {
				t.Errorf("Contains(%v, %v) = %v, want %v", tt.live, tt.want, got, tt.contains)
			}
		})
	}
}

func TestHashIsStable(t *testing.T) {
	a := map[string]any{"b": 1.0, "a": map[string]any{"y": "1", "x": "2"}}
	b := map[string]any{"a": map[string]any{"x": "2", "y": "1"}, "b": 1.0}
	ha, err := hashOf(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := hashOf(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Errorf("hash depends on key order: %s != %s", ha, hb)
	}
	b["b"] = 2.0
	if hc, _ := hashOf(b); hc == ha {
		t.Errorf("hash did not change with content")
	}
}

func TestUpToDate(t *testing.T) {
	want := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "annotations": map[string]any{HashAnnotation: "h1"}},
		"spec":     map[string]any{"type": "ClusterIP"},
	}
	live := func(hash string, typ corev1.ServiceType) *corev1.Service {
		// As read from the API server into a typed object: no TypeMeta,
		// and fields the server defaulted.
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u", Annotations: map[string]string{HashAnnotation: hash}},
			Spec:       corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.0.10", SessionAffinity: corev1.ServiceAffinityNone},
		}
	}
	for _, tt := range []struct {
		name string
		live *corev1.Service
		want bool
	}{
		{"same hash and fields, without apiVersion and kind", live("h1", corev1.ServiceTypeClusterIP), true},
		{"another hash", live("h0", corev1.ServiceTypeClusterIP), false},
		{"a drifted field", live("h1", corev1.ServiceTypeNodePort), false},
	} {
		got, err := upToDate(tt.live, want, "h1")
		if err != nil || got != tt.want {
			t.Errorf("%s: upToDate = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestEmptyEnvValueIsUpToDate holds that a child whose desired configuration
// sets an env var to the empty string is up to date as read back from the
// API server, where the typed object omits the value: before, every
// reconcile re-applied it (a Backup's CronJob, on each of its reconciles).
// A security setting that is gone from the live object stays a change.
func TestEmptyEnvValueIsUpToDate(t *testing.T) {
	desired := appsv1ac.Deployment("web", "ns").WithSpec(appsv1ac.DeploymentSpec().
		WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("app").WithImage("a:1").
				WithEnv(corev1ac.EnvVar().WithName("EMPTY").WithValue("")).
				WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false))))))
	want, err := toMap(desired)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := hashOf(want)
	if err != nil {
		t.Fatal(err)
	}
	setAnnotation(want, HashAnnotation, hash)
	live := func(escalation *bool) *appsv1.Deployment {
		// As read from the API server: "value" omitted, fields defaulted.
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", Annotations: map[string]string{HashAnnotation: hash}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Containers: []corev1.Container{{
					Name: "app", Image: "a:1", ImagePullPolicy: corev1.PullIfNotPresent,
					Env:             []corev1.EnvVar{{Name: "EMPTY", Value: ""}},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: escalation},
				}},
			}}},
		}
	}
	if ok, err := upToDate(live(new(false)), want, hash); err != nil || !ok {
		t.Errorf("live Deployment with the empty env value: upToDate = %v, %v; want true", ok, err)
	}
	if ok, err := upToDate(live(nil), want, hash); err != nil || ok {
		t.Errorf("live Deployment without allowPrivilegeEscalation: upToDate = %v, %v; want false (drift)", ok, err)
	}
}
