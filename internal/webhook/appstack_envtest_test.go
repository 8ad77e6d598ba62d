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

package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

const appStackHook = "vappstack.steward.dev"

// newAppStack is the e-commerce stack: a database and a cache, a backend
// bound to both, a frontend that depends on the backend, an ingress and
// shared configuration.
func newAppStack(ns string, mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	names++
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("shop%d", names)},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackProduction,
			Databases:   []v1alpha1.StackDatabase{{Name: "db"}},
			Caches:      []v1alpha1.StackCache{{Name: "cache"}},
			Apps: []v1alpha1.StackApp{
				{Name: "backend", Expose: &v1alpha1.StackExpose{Path: "/api"}, WebAppSpec: v1alpha1.WebAppSpec{
					Image: "shop/backend:1", Database: &v1alpha1.WebAppBinding{Ref: "db"}, Cache: &v1alpha1.WebAppBinding{Ref: "cache"},
				}},
				{Name: "frontend", DependsOn: []string{"backend"}, Expose: &v1alpha1.StackExpose{Path: "/"},
					WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/frontend:1"}},
			},
			Ingress: &v1alpha1.StackIngress{Host: "shop.example.com"},
			Config: &v1alpha1.StackConfig{Data: map[string]string{
				"API_HOST": "${application}-backend.${namespace}.svc", "API_URL": "http://${API_HOST}/api", "ENV": "${environment}",
			}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestAppStackWebhookRejectsCycle(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns, func(s *v1alpha1.AppStack) { s.Spec.Apps[0].DependsOn = []string{"frontend"} })
	err := k8s.Create(context.Background(), s)
	expectDenied(t, err, appStackHook,
		`spec.apps[backend].dependsOn: Invalid value: "frontend": dependency cycle: backend -> frontend -> backend`)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) != 1 {
		t.Fatalf("want one cause, got %#v", err)
	}
	if got := status.Status().Details.Causes[0].Field; got != "spec.apps[backend].dependsOn" {
		t.Errorf("cause field = %q, want spec.apps[backend].dependsOn", got)
	}
}

func TestAppStackWebhookRejectsSelfDependency(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns, func(s *v1alpha1.AppStack) { s.Spec.Apps[1].DependsOn = []string{"frontend"} })
	expectDenied(t, k8s.Create(context.Background(), s), appStackHook,
		`spec.apps[frontend].dependsOn: Invalid value: "frontend": dependency cycle: frontend -> frontend`)
}

func TestAppStackWebhookAdmitsValid(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns)
	if err := k8s.Create(ctx, s); err != nil {
		t.Fatalf("valid AppStack rejected: %v", err)
	}
	s.Spec.Config.Data["TIMEOUT"] = "30s"
	s.Spec.Apps[1].ConfigKeys = []string{"API_URL", "TIMEOUT"}
	if err := k8s.Update(ctx, s); err != nil {
		t.Fatalf("valid update rejected: %v", err)
	}
}

func TestAppStackWebhookRejectsUpdateIntroducingCycle(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns)
	if err := k8s.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The database waiting for the frontend closes a cycle through the
	// backend's binding.
	s.Spec.Databases[0].DependsOn = []string{"frontend"}
	expectDenied(t, k8s.Update(ctx, s), appStackHook,
		`spec.databases[db].dependsOn: Invalid value: "frontend": dependency cycle: db -> frontend -> backend -> db`)

	var stored v1alpha1.AppStack
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.Databases[0].DependsOn) != 0 {
		t.Errorf("the rejected update was stored: %v", stored.Spec.Databases[0].DependsOn)
	}
	// A metadata-only update still goes through.
	stored.Labels = map[string]string{"team": "shop"}
	if err := k8s.Update(ctx, &stored); err != nil {
		t.Errorf("label update rejected: %v", err)
	}
}

func TestAppStackWebhookRejectsBadConfigReference(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns, func(s *v1alpha1.AppStack) {
		s.Spec.Config.Data["API_URL"] = "http://${API_HOSTT}/api"
	})
	err := k8s.Create(context.Background(), s)
	expectDenied(t, err, appStackHook,
		`spec.config.data: Invalid value: key "API_URL", position 8: unknown reference ${API_HOSTT} (did you mean ${API_HOST}?)`)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) != 1 {
		t.Fatalf("want one cause, got %#v", err)
	}
	if got := status.Status().Details.Causes[0].Field; got != "spec.config.data" {
		t.Errorf("cause field = %q, want spec.config.data", got)
	}
}
