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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func newStack(mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	names++
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%d", names)},
		Spec: v1alpha1.AppStackSpec{
			Environment: v1alpha1.StackProduction,
			Databases:   []v1alpha1.StackDatabase{{Name: "db", Engine: v1alpha1.EnginePostgres, Version: "16"}},
			Caches:      []v1alpha1.StackCache{{Name: "cache"}},
			Apps: []v1alpha1.StackApp{
				{Name: "backend", WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/backend:1", Database: &v1alpha1.WebAppBinding{Ref: "db"}, Cache: &v1alpha1.WebAppBinding{Ref: "cache"}},
					Expose: &v1alpha1.StackExpose{Path: "/api"}},
				{Name: "frontend", DependsOn: []string{"backend"}, WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/frontend:1"},
					Expose: &v1alpha1.StackExpose{Path: "/"}},
			},
			Ingress: &v1alpha1.StackIngress{Host: "shop.example.com"},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestAppStackAdmission(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, newStack()); err != nil {
		t.Fatalf("the e-commerce stack: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.AppStack)
		want   string
	}{
		{"unknown dependency", func(s *v1alpha1.AppStack) { s.Spec.Apps[1].DependsOn = []string{"bakend"} }, "dependsOn names a component the stack does not have"},
		{"unknown database binding", func(s *v1alpha1.AppStack) { s.Spec.Apps[0].Database.Ref = "orders" }, "database.ref names a database the stack does not have"},
		{"unknown cache binding", func(s *v1alpha1.AppStack) { s.Spec.Apps[0].Cache.Ref = "sessions" }, "cache.ref names a cache the stack does not have"},
		{"duplicate names", func(s *v1alpha1.AppStack) { s.Spec.Caches[0].Name = "db" }, "unique across databases, caches and apps"},
		{"ingress without exposed apps", func(s *v1alpha1.AppStack) {
			s.Spec.Apps[0].Expose, s.Spec.Apps[1].Expose = nil, nil
		}, "ingress needs at least one app with expose.path"},
		{"bad version", func(s *v1alpha1.AppStack) { s.Spec.Databases[0].Version = "12" }, "PostgreSQL versions 13 to 17"},
		{"database name too long", func(s *v1alpha1.AppStack) {
			s.Name = "a-rather-long-stack-name"
			s.Spec.Databases[0].Name = "orders-database-primary"
			s.Spec.Apps[0].Database.Ref = "orders-database-primary"
		}, "at most 40 characters"},
		{"unknown environment", func(s *v1alpha1.AppStack) { s.Spec.Environment = "prod" }, "spec.environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectInvalid(t, k8s.Create(ctx, newStack(tc.mutate)), tc.want)
		})
	}
}
