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

package main

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/database"
	"github.com/steward-dev/steward/internal/engine"
	_ "github.com/steward-dev/steward/internal/engine/postgres"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/password"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// databaseScenario measures small PostgreSQL Databases against the same
// children applied by a plain client: two Secrets, a ConfigMap, three
// Services and a one-replica StatefulSet with a volume claim template.
type databaseScenario struct{}

// dbMajor is the version the Databases are created with; an edit sets the
// minor to its mark, which changes the StatefulSet's image tag.
const dbMajor = "16"

func (databaseScenario) Kind() string { return "Database" }

func (databaseScenario) Empty() client.Object { return &v1alpha1.Database{} }

func (databaseScenario) Child() client.Object { return &appsv1.StatefulSet{} }

func (databaseScenario) database(ns, name string) *v1alpha1.Database {
	class := localcluster.StorageClassName
	return &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DatabaseSpec{
			Engine:  v1alpha1.EnginePostgres,
			Version: dbMajor,
			Size:    v1alpha1.SizeSmall,
			Storage: v1alpha1.DatabaseStorage{Size: new(resource.MustParse("1Gi")), StorageClassName: &class},
			// What the API server defaults; the raw children need them.
			DatabaseName:   "app",
			Owner:          "app",
			DeletionPolicy: v1alpha1.DeletionRetain,
		},
	}
}

func (s databaseScenario) New(ns string, i int, invalid bool) client.Object {
	db := s.database(ns, fmt.Sprintf("db-%05d", i))
	if invalid {
		db.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "does-not-exist"}
	}
	return db
}

func (databaseScenario) Converged(obj client.Object) bool {
	db, ok := obj.(*v1alpha1.Database)
	return ok && db.Status.ObservedGeneration == db.Generation &&
		meta.IsStatusConditionTrue(db.Status.Conditions, v1alpha1.ConditionReady)
}

func (databaseScenario) Waiting(obj client.Object) bool {
	db, ok := obj.(*v1alpha1.Database)
	if !ok {
		return false
	}
	c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == v1alpha1.ReasonCredentialsNotFound
}

// Raw builds the children with the controller's own builders, so that the
// plain client creates the same objects. They are rewritten in two ways:
// no owner reference (there is no Database) and no managed-by label, so
// that the operator's cache does not see them, as it does not see the
// WebApp scenario's raw children. The plain client does not label the
// pods with their roles: that would need watching them.
func (s databaseScenario) Raw(ns string, i int) []client.Object {
	db := s.database(ns, fmt.Sprintf("raw-%05d", i))
	eng, err := engine.Get(string(db.Spec.Engine))
	if err != nil {
		panic(err) // registered by the blank import
	}
	files, err := eng.Render(database.Tuning(db))
	if err != nil {
		panic(err) // constant input
	}
	acs := []runtime.ApplyConfiguration{
		// First: the kind the plain client's readiness is tracked on.
		database.StatefulSet(db, eng, manager.DefaultInstanceImage, db.Spec.StorageSize()),
		database.Secret(db, db.CredentialsName(), database.CredentialsData(db, db.Spec.Owner, password.New())),
		database.Secret(db, db.SuperuserName(), database.SuperuserData(db, password.New(), password.New())),
		database.ConfigMap(db, files),
	}
	for _, svc := range database.Services(db) {
		acs = append(acs, svc)
	}
	if pdb := database.PodDisruptionBudget(db); pdb != nil {
		acs = append(acs, pdb)
	}
	objs := make([]client.Object, 0, len(acs))
	for _, ac := range acs {
		objs = append(objs, rawApplied(ac, db.Name))
	}
	return objs
}

// rawApplied turns an apply configuration into the unstructured object the
// plain client creates, without owner references and with the bench's label
// in place of the managed-by label, in metadata and in every template.
func rawApplied(ac runtime.ApplyConfiguration, name string) *unstructured.Unstructured {
	raw, err := json.Marshal(ac)
	if err != nil {
		panic(err) // an apply configuration always encodes
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		panic(err)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "ownerReferences")
	relabel(u.Object, name)
	return u
}

// relabel replaces the managed-by label of every labels map in m.
func relabel(m map[string]any, name string) {
	for k, v := range m {
		switch t := v.(type) {
		case map[string]any:
			if k == "labels" {
				delete(t, labels.ManagedByKey)
				t[rawLabel] = name
				continue
			}
			relabel(t, name)
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					relabel(em, name)
				}
			}
		}
	}
}

const rawLabel = "bench.steward.dev/raw"

func (databaseScenario) RawConverged(obj client.Object) bool {
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return true
	}
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	s := sts.Status
	return s.ObservedGeneration >= sts.Generation && s.ReadyReplicas == want && s.UpdatedReplicas == want
}

func (databaseScenario) Edit(mark int) []byte {
	return fmt.Appendf(nil, `{"spec":{"version":"%s.%d"}}`, dbMajor, mark)
}

func (databaseScenario) Applied(child client.Object, mark int) bool {
	sts, ok := child.(*appsv1.StatefulSet)
	if !ok {
		return false
	}
	want := fmt.Sprintf("postgres:%s.%d", dbMajor, mark)
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Image == want {
			return true
		}
	}
	return false
}
