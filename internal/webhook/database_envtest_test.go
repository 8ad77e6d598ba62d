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
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

const databaseHook = "vdatabase.steward.dev"

func newDatabase(ns string, engine v1alpha1.DatabaseEngine, version string, params map[string]string) *v1alpha1.Database {
	names++
	return &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("db%d", names)},
		Spec:       v1alpha1.DatabaseSpec{Engine: engine, Version: version, Parameters: params},
	}
}

// TestDatabaseWebhookRejectsInvalidParameters applies a Database with a
// size that is not one and a connection count out of range, and gets both
// problems back, each as a cause naming its parameter.
func TestDatabaseWebhookRejectsInvalidParameters(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	db := newDatabase(ns, v1alpha1.EnginePostgres, "16", map[string]string{
		"shared_buffers": "not-a-size", "max_connections": "-5", "work_mem": "16MB", "my_extension.mode": "whatever",
	})
	err := k8s.Create(context.Background(), db)
	expectDenied(t, err, databaseHook,
		`spec.parameters.shared_buffers: Invalid value: "not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`,
		`spec.parameters.max_connections: Invalid value: -5 is out of range: between 1 and 262143`)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("want causes, got %#v", err)
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	if want := []string{"spec.parameters.max_connections", "spec.parameters.shared_buffers"}; !slices.Equal(fields, want) {
		t.Errorf("cause fields = %v, want %v", fields, want)
	}
}

func TestDatabaseWebhookChecksMariaDB(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	db := newDatabase(ns, v1alpha1.EngineMariaDB, "11.4", map[string]string{
		"innodb_buffer_pool_size": "1GB", "slow_query_log": "ON", "long_query_time": "0.5",
	})
	expectDenied(t, k8s.Create(context.Background(), db), databaseHook,
		`spec.parameters.innodb_buffer_pool_size: Invalid value: "1GB" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`)
}

// TestDatabaseWebhookOnUpdate admits valid parameters, rejects a change
// that brings an invalid one (storing nothing of it), and still lets
// labels and finalizers change.
func TestDatabaseWebhookOnUpdate(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	db := newDatabase(ns, v1alpha1.EnginePostgres, "16", map[string]string{"shared_buffers": "128 MB", "jit": "off"})
	if err := k8s.Create(ctx, db); err != nil {
		t.Fatalf("valid Database rejected: %v", err)
	}
	db.Spec.Parameters["statement_timeout"] = "5min"
	if err := k8s.Update(ctx, db); err != nil {
		t.Fatalf("valid update rejected: %v", err)
	}
	db.Spec.Parameters["checkpoint_timeout"] = "10s"
	expectDenied(t, k8s.Update(ctx, db), databaseHook,
		`spec.parameters.checkpoint_timeout: Invalid value: 10s is out of range: between 30s and 1d`)

	var stored v1alpha1.Database
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), &stored); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Spec.Parameters["checkpoint_timeout"]; ok {
		t.Errorf("the rejected update was stored: %v", stored.Spec.Parameters)
	}
	stored.Labels = map[string]string{"team": "orders"}
	stored.Finalizers = append(stored.Finalizers, "example.com/keep")
	if err := k8s.Update(ctx, &stored); err != nil {
		t.Errorf("metadata update rejected: %v", err)
	}
	stored.Finalizers = nil
	if err := k8s.Update(ctx, &stored); err != nil {
		t.Errorf("finalizer removal rejected: %v", err)
	}
}

func TestAppStackWebhookChecksDatabaseParameters(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	s := newAppStack(ns, func(s *v1alpha1.AppStack) {
		s.Spec.Databases[0].Parameters = map[string]string{"work_mem": "lots", "effective_io_concurrency": "200"}
	})
	expectDenied(t, k8s.Create(context.Background(), s), appStackHook,
		`spec.databases[db].parameters.work_mem: Invalid value: "lots" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`)
}
