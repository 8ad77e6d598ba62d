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

package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func database(engine v1alpha1.DatabaseEngine, params map[string]string) *v1alpha1.Database {
	return &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders"},
		Spec:       v1alpha1.DatabaseSpec{Engine: engine, Version: "16", Parameters: params},
	}
}

func TestDatabaseProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine v1alpha1.DatabaseEngine
		params map[string]string
		want   []string
	}{
		{name: "none", engine: v1alpha1.EnginePostgres},
		{name: "valid", engine: v1alpha1.EnginePostgres, params: map[string]string{
			"shared_buffers": "256MB", "work_mem": "16 MB", "max_connections": "200", "random_page_cost": "1.1",
			"jit": "off", "synchronous_commit": "local", "statement_timeout": "30s", "wal_buffers": "-1",
			"pg_stat_statements.track": "all", "shared_preload_libraries": "pg_stat_statements",
		}},
		{name: "two bad values, in key order", engine: v1alpha1.EnginePostgres,
			params: map[string]string{"shared_buffers": "not-a-size", "max_connections": "-5", "work_mem": "4MB"},
			want: []string{
				`spec.parameters.max_connections: Invalid value: -5 is out of range: between 1 and 262143`,
				`spec.parameters.shared_buffers: Invalid value: "not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`,
			}},
		{name: "key as written", engine: v1alpha1.EnginePostgres, params: map[string]string{"Work_Mem": "16mb"},
			want: []string{`spec.parameters.Work_Mem: Invalid value: "16mb" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB); units are case-sensitive: MB, not mb`}},
		{name: "mysql", engine: v1alpha1.EngineMySQL,
			params: map[string]string{"innodb_buffer_pool_size": "1GB", "long_query_time": "0.5", "sql_mode": "ANSI"},
			want:   []string{`spec.parameters.innodb_buffer_pool_size: Invalid value: "1GB" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`}},
		{name: "mariadb", engine: v1alpha1.EngineMariaDB,
			params: map[string]string{"max_connections": "5", "transaction_isolation": "READ-COMMITTED"},
			want:   []string{`spec.parameters.max_connections: Invalid value: 5 is out of range: between 10 and 100000`}},
		{name: "unknown engine: the schema's", engine: "oracle", params: map[string]string{"shared_buffers": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range DatabaseProblems(database(tc.engine, tc.params)) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestValidateDatabaseUpdate(t *testing.T) {
	ctx := context.Background()
	v := databaseValidator
	old := database(v1alpha1.EnginePostgres, map[string]string{"shared_buffers": "lots"})
	if _, err := v.ValidateCreate(ctx, old); err == nil {
		t.Error("an invalid Database was admitted on create")
	}
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"team": "orders"}
	labelled.Finalizers = nil
	if _, err := v.ValidateUpdate(ctx, old, labelled); err != nil {
		t.Errorf("a metadata-only update of a spec that predates the webhook was rejected: %v", err)
	}
	// Every known parameter is checked on a change, not only the changed
	// ones: the reconciler would refuse the stored value anyway.
	changed := labelled.DeepCopy()
	changed.Spec.Parameters["work_mem"] = "16MB"
	if _, err := v.ValidateUpdate(ctx, old, changed); err == nil || !strings.Contains(err.Error(), "spec.parameters.shared_buffers") {
		t.Errorf("a change keeping an invalid value was admitted, or with the wrong error: %v", err)
	}
	deleting := changed.DeepCopy()
	deleting.DeletionTimestamp = new(metav1.Now())
	if _, err := v.ValidateUpdate(ctx, old, deleting); err != nil {
		t.Errorf("an update of a Database being deleted was rejected: %v", err)
	}
	if _, err := v.ValidateDelete(ctx, old); err != nil {
		t.Errorf("a deletion was rejected: %v", err)
	}
}
