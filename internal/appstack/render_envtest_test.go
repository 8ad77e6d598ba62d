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

package appstack_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// TestRenderedObjectsPassTheCRDs creates what Render makes of the
// e-commerce stack, in every environment and with every engine, in a real
// API server: the schemas and CEL rules of Database, Cache, WebApp and
// AppConfig must admit each object as rendered.
func TestRenderedObjectsPassTheCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, err := apitest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

	for _, tc := range []struct {
		env    v1alpha1.StackEnvironment
		engine v1alpha1.DatabaseEngine
	}{
		{v1alpha1.StackProduction, v1alpha1.EnginePostgres},
		{v1alpha1.StackStaging, v1alpha1.EngineMySQL},
		{v1alpha1.StackDevelopment, v1alpha1.EngineMariaDB},
		{v1alpha1.StackDevelopment, ""},
	} {
		s := stack(tc.env, func(s *v1alpha1.AppStack) {
			s.Name = string(tc.env)[:4] + string(tc.engine)
			s.Namespace = ns
			s.Spec.Databases[0].Engine = tc.engine
			s.Spec.Monitoring = &v1alpha1.StackMonitoring{Enabled: true}
		})
		d := appstack.Render(s)
		var objs []client.Object
		for name, spec := range d.Databases {
			objs = append(objs, &v1alpha1.Database{ObjectMeta: meta(appstack.ObjectName(s, name)), Spec: spec})
		}
		for name, spec := range d.Caches {
			objs = append(objs, &v1alpha1.Cache{ObjectMeta: meta(appstack.ObjectName(s, name)), Spec: spec})
		}
		for name, spec := range d.Apps {
			objs = append(objs, &v1alpha1.WebApp{ObjectMeta: meta(appstack.ObjectName(s, name)), Spec: spec})
		}
		objs = append(objs, &v1alpha1.AppConfig{ObjectMeta: meta(appstack.ObjectName(s, appstack.ConfigComponent)), Spec: *d.Config})
		for _, obj := range objs {
			if err := k8s.Create(ctx, obj); err != nil {
				t.Errorf("%s, engine %q: %T %s: %v", tc.env, tc.engine, obj, obj.GetName(), err)
			}
		}
	}
}
