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

package database_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/controller/database"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

func newDatabase(ns, name string, mutate ...func(*v1alpha1.Database)) *v1alpha1.Database {
	db := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.DatabaseSpec{
			Engine:  v1alpha1.EnginePostgres,
			Version: "16",
			Storage: v1alpha1.DatabaseStorage{Size: new(resource.MustParse("1Gi"))},
		},
	}
	for _, m := range mutate {
		m(db)
	}
	return db
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

func get(t *testing.T, ns, name string, obj client.Object) error {
	t.Helper()
	return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

// update re-reads the Database and applies change, retrying on conflicts.
func update(t *testing.T, ns, name string, change func(*v1alpha1.Database)) {
	t.Helper()
	eventually(t, func() error {
		db := &v1alpha1.Database{}
		if err := get(t, ns, name, db); err != nil {
			return err
		}
		change(db)
		return k8s.Update(context.Background(), db)
	})
}

// statefulSet waits for the Database's StatefulSet.
func statefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	eventually(t, func() error { return get(t, ns, name, sts) })
	return sts
}

// markRolledOut sets the StatefulSet's status as its controller would once
// every instance runs the current template and is ready: envtest has no
// StatefulSet controller.
func markRolledOut(t *testing.T, ns, name string, ready int32) {
	t.Helper()
	apitest.RollOutStatefulSet(t, k8s, timeout, client.ObjectKey{Namespace: ns, Name: name}, ready)
}

// waitFor waits until the Database's status satisfies ok.
func waitFor(t *testing.T, ns, name string, what string, ok func(*v1alpha1.Database) bool) *v1alpha1.Database {
	t.Helper()
	db := &v1alpha1.Database{}
	eventually(t, func() error {
		if err := get(t, ns, name, db); err != nil {
			return err
		}
		if !ok(db) {
			return fmt.Errorf("waiting for %s; status: %+v", what, db.Status)
		}
		return nil
	})
	return db
}

func condition(db *v1alpha1.Database, t string) *metav1.Condition {
	return meta.FindStatusCondition(db.Status.Conditions, t)
}

func isReady(db *v1alpha1.Database) bool {
	c := condition(db, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && db.Status.ObservedGeneration == db.Generation
}

func secretData(t *testing.T, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	eventually(t, func() error { return get(t, ns, name, s) })
	return s.Data
}

func TestCreatesItsChildrenAndBecomesReady(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "orders"))

	sts := statefulSet(t, ns, "orders")
	if *sts.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1 (size small)", *sts.Spec.Replicas)
	}
	pod := sts.Spec.Template.Spec
	if got := pod.Containers[0].Image; got != "postgres:16" {
		t.Errorf("image = %q, want postgres:16", got)
	}
	if got := pod.InitContainers[0].Image; got != "steward:test" {
		t.Errorf("init container image = %q, want the operator's image", got)
	}
	if mem := pod.Containers[0].Resources.Limits[corev1.ResourceMemory]; mem.String() != "512Mi" {
		t.Errorf("memory limit = %s, want 512Mi", mem.String())
	}
	if sc := pod.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
		t.Errorf("pod security context is not restricted: %+v", sc)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("volume claim templates = %+v", sts.Spec.VolumeClaimTemplates)
	}
	for _, name := range []string{"orders", "orders-ro", "orders-headless"} {
		if err := get(t, ns, name, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	rw := &corev1.Service{}
	_ = get(t, ns, "orders", rw)
	if rw.Spec.Selector[v1alpha1.LabelRole] != "primary" {
		t.Errorf("read-write Service selects %v, want the primary", rw.Spec.Selector)
	}
	cm := &corev1.ConfigMap{}
	if err := get(t, ns, "orders-config", cm); err != nil || !strings.Contains(cm.Data["postgresql.conf"], "shared_buffers") {
		t.Errorf("ConfigMap: %v, data keys %v", err, slices.Collect(mapsKeys(cm.Data)))
	}
	creds := secretData(t, ns, "orders-credentials")
	for _, k := range []string{"username", "password", "host", "port", "database", "uri"} {
		if len(creds[k]) == 0 {
			t.Errorf("credentials Secret lacks %q", k)
		}
	}
	if string(creds["host"]) != "orders."+ns+".svc" || string(creds["port"]) != "5432" || string(creds["username"]) != "app" {
		t.Errorf("credentials: host %s port %s user %s", creds["host"], creds["port"], creds["username"])
	}
	if len(creds["password"]) < 32 {
		t.Errorf("password has %d characters, want at least 32", len(creds["password"]))
	}
	super := secretData(t, ns, "orders-superuser")
	if string(super["username"]) != "postgres" || len(super["replication-password"]) < 32 {
		t.Errorf("superuser Secret: user %s, replication password of %d characters", super["username"], len(super["replication-password"]))
	}
	if err := get(t, ns, "orders", &policyv1.PodDisruptionBudget{}); !apierrors.IsNotFound(err) {
		t.Errorf("a single instance got a PodDisruptionBudget (err %v)", err)
	}
	creating := waitFor(t, ns, "orders", "the finalizer", func(db *v1alpha1.Database) bool {
		return slices.Contains(db.Finalizers, v1alpha1.DatabaseFinalizer)
	})
	// The first status is held back until Ready (v1alpha1.SettleDelay):
	// meanwhile the CRD's default says "not observed yet" to kstatus.
	if age := time.Since(creating.CreationTimestamp.Time); age < v1alpha1.DatabaseFirstRolloutSettle-5*time.Second &&
		(creating.Status.ObservedGeneration != -1 || len(creating.Status.Conditions) > 0) {
		t.Errorf("creating, %v old: status %+v, want the CRD's default (observedGeneration -1) until Ready", age, creating.Status)
	}

	markRolledOut(t, ns, "orders", 1)
	db := waitFor(t, ns, "orders", "Ready", isReady)
	if db.Status.Phase != v1alpha1.DatabaseRunning || db.Status.Version != "16" || db.Status.Primary != "orders-0" ||
		db.Status.Endpoint != "orders."+ns+".svc:5432" || db.Status.ReadEndpoint != "" || db.Status.CredentialsSecret != "orders-credentials" {
		t.Errorf("status = %+v", db.Status)
	}
	if c := condition(db, v1alpha1.ConditionUpgradeBlocked); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("UpgradeBlocked = %+v, want False", c)
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestLiveChildrenContainTheirDesiredState checks that what the API server
// keeps of each child contains what Steward applies: otherwise the child is
// never up to date and every reconcile applies it again.
func TestLiveChildrenContainTheirDesiredState(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "steady"))
	sts := statefulSet(t, ns, "steady")
	db := &v1alpha1.Database{}
	if err := get(t, ns, "steady", db); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Get(string(db.Spec.Engine))
	if err != nil {
		t.Fatal(err)
	}
	files, err := eng.Render(database.Tuning(db))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	eventually(t, func() error { return get(t, ns, db.ConfigMapName(), cm) })
	pairs := []struct {
		live    client.Object
		desired any
	}{
		{sts, database.StatefulSet(db, eng, "steward:test", db.Spec.StorageSize())},
		{cm, database.ConfigMap(db, files)},
	}
	for _, svc := range database.Services(db) {
		live := &corev1.Service{}
		eventually(t, func() error { return get(t, ns, *svc.Name, live) })
		pairs = append(pairs, struct {
			live    client.Object
			desired any
		}{live, svc})
	}
	for _, p := range pairs {
		live, want := asMap(t, p.live), asMap(t, p.desired)
		// A typed read carries no apiVersion and kind; Steward's
		// comparison leaves them out too.
		live["apiVersion"], live["kind"] = want["apiVersion"], want["kind"]
		if !apply.Contains(live, want) {
			t.Errorf("live %s %s does not contain its desired state: it would be applied on every reconcile", want["kind"], p.live.GetName())
		}
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestScalingAddsReplicasAndLabelsRoles(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db"))
	statefulSet(t, ns, "db")
	markRolledOut(t, ns, "db", 1)
	waitFor(t, ns, "db", "Ready", isReady)

	update(t, ns, "db", func(db *v1alpha1.Database) { db.Spec.Replicas = new(int32(3)) })
	eventually(t, func() error {
		sts := &appsv1.StatefulSet{}
		if err := get(t, ns, "db", sts); err != nil {
			return err
		}
		if *sts.Spec.Replicas != 3 {
			return fmt.Errorf("StatefulSet replicas = %d", *sts.Spec.Replicas)
		}
		return get(t, ns, "db", &policyv1.PodDisruptionBudget{})
	})
	waitFor(t, ns, "db", "Updating/Scaling", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionProgressing)
		return db.Status.Phase == v1alpha1.DatabaseUpdating && c != nil && c.Reason == v1alpha1.ReasonScaling
	})

	// The StatefulSet controller would create the pods: envtest has none.
	sts := statefulSet(t, ns, "db")
	for i := range 3 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", i), Namespace: ns, Labels: sts.Spec.Template.Labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}}},
		}
		create(t, pod)
	}
	eventually(t, func() error {
		for i, want := range []string{"primary", "replica", "replica"} {
			pod := &corev1.Pod{}
			if err := get(t, ns, fmt.Sprintf("db-%d", i), pod); err != nil {
				return err
			}
			if got := pod.Labels[v1alpha1.LabelRole]; got != want {
				return fmt.Errorf("pod db-%d has role %q, want %q", i, got, want)
			}
		}
		return nil
	})
	markRolledOut(t, ns, "db", 3)
	db := waitFor(t, ns, "db", "Ready with 3", func(db *v1alpha1.Database) bool { return isReady(db) && db.Status.ReadyReplicas == 3 })
	if db.Status.ReadEndpoint != "db-ro."+ns+".svc:5432" {
		t.Errorf("readEndpoint = %q", db.Status.ReadEndpoint)
	}
}

// claim creates a volume claim as the StatefulSet controller would.
func claim(t *testing.T, ns, db string) {
	const size = "1Gi"
	const ordinal = 0
	t.Helper()
	sts := statefulSet(t, ns, db)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("data-%s-%d", db, ordinal), Namespace: ns,
			Labels: sts.Spec.VolumeClaimTemplates[0].Labels,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(size),
			}},
		},
	}
	create(t, pvc)
	// Bound, as a provisioner would make it: only bound claims can grow.
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: pvc.Spec.AccessModes,
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
	}
	if err := k8s.Status().Update(context.Background(), pvc); err != nil {
		t.Fatalf("binding %s: %v", pvc.Name, err)
	}
}

func TestRetainKeepsVolumesAndCredentialsAndRecreationAdoptsThem(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "keep"))
	password := string(secretData(t, ns, "keep-credentials")["password"])
	superPassword := string(secretData(t, ns, "keep-superuser")["password"])
	claim(t, ns, "keep")

	db := &v1alpha1.Database{}
	_ = get(t, ns, "keep", db)
	if err := k8s.Delete(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := get(t, ns, "keep", &v1alpha1.Database{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Database still exists (%w)", err)
		}
		return nil
	})
	for _, name := range []string{"keep-credentials", "keep-superuser"} {
		s := &corev1.Secret{}
		if err := get(t, ns, name, s); err != nil {
			t.Fatalf("Secret %s was not kept: %v", name, err)
		}
		if len(s.OwnerReferences) != 0 {
			t.Errorf("Secret %s still has owner references %v: the garbage collector would delete it", name, s.OwnerReferences)
		}
	}
	if err := get(t, ns, "data-keep-0", &corev1.PersistentVolumeClaim{}); err != nil {
		t.Fatalf("volume claim was not kept: %v", err)
	}
	expectEvent(t, ns, "keep", v1alpha1.EventDataRetained)

	create(t, newDatabase(ns, "keep"))
	eventually(t, func() error {
		s := &corev1.Secret{}
		if err := get(t, ns, "keep-credentials", s); err != nil {
			return err
		}
		if metav1.GetControllerOf(s) == nil {
			return fmt.Errorf("credentials Secret not adopted yet")
		}
		return nil
	})
	if got := string(secretData(t, ns, "keep-credentials")["password"]); got != password {
		t.Error("the re-created Database changed the adopted password")
	}
	if got := string(secretData(t, ns, "keep-superuser")["password"]); got != superPassword {
		t.Error("the re-created Database changed the adopted superuser password")
	}
	expectEvent(t, ns, "keep", v1alpha1.EventAdopted)
}

func TestDeletePolicyRemovesVolumesAndCredentials(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "gone", func(db *v1alpha1.Database) { db.Spec.DeletionPolicy = v1alpha1.DeletionDelete }))
	secretData(t, ns, "gone-credentials")
	claim(t, ns, "gone")
	// A claim of another Database whose name starts the same must survive.
	create(t, newDatabase(ns, "gone-too"))
	claim(t, ns, "gone-too")

	db := &v1alpha1.Database{}
	_ = get(t, ns, "gone", db)
	if err := k8s.Delete(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := get(t, ns, "gone", &v1alpha1.Database{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Database still exists (%w)", err)
		}
		return nil
	})
	for _, name := range []string{"gone-credentials", "gone-superuser"} {
		if err := get(t, ns, name, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s was not deleted (%v)", name, err)
		}
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := get(t, ns, "data-gone-0", pvc); err == nil && pvc.DeletionTimestamp.IsZero() {
		t.Error("volume claim was not deleted")
	}
	if err := get(t, ns, "data-gone-too-0", pvc); err != nil || !pvc.DeletionTimestamp.IsZero() {
		t.Errorf("another Database's volume claim was deleted (%v)", err)
	}
}

func TestMajorUpgradeIsBlockedAndMinorRollsOut(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "up"))
	statefulSet(t, ns, "up")
	markRolledOut(t, ns, "up", 1)
	waitFor(t, ns, "up", "Ready", isReady)
	before := statefulSet(t, ns, "up")

	update(t, ns, "up", func(db *v1alpha1.Database) { db.Spec.Version = "17" })
	db := waitFor(t, ns, "up", "UpgradeBlocked", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionUpgradeBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && db.Status.ObservedGeneration == db.Generation
	})
	msg := condition(db, v1alpha1.ConditionUpgradeBlocked).Message
	if !strings.Contains(msg, "bootstrap.fromBackup") || db.Status.Phase != v1alpha1.DatabaseBlocked {
		t.Errorf("phase %s, message %q: want Blocked and the way to upgrade", db.Status.Phase, msg)
	}
	if c := condition(db, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonUpgradeBlocked {
		t.Errorf("Ready = %+v", c)
	}
	after := statefulSet(t, ns, "up")
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the StatefulSet changed while the upgrade was blocked: image %s", after.Spec.Template.Spec.Containers[0].Image)
	}
	expectEvent(t, ns, "up", v1alpha1.ReasonUpgradeBlocked)

	update(t, ns, "up", func(db *v1alpha1.Database) { db.Spec.Version = "16.4" })
	eventually(t, func() error {
		sts := statefulSet(t, ns, "up")
		if img := sts.Spec.Template.Spec.Containers[0].Image; img != "postgres:16.4" {
			return fmt.Errorf("image = %s", img)
		}
		return nil
	})
	db = waitFor(t, ns, "up", "unblocked", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionUpgradeBlocked)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	if db.Status.Version != "16" {
		t.Errorf("status.version = %s before the rollout finished, want 16", db.Status.Version)
	}
	markRolledOut(t, ns, "up", 1)
	waitFor(t, ns, "up", "running 16.4", func(db *v1alpha1.Database) bool { return isReady(db) && db.Status.Version == "16.4" })
}

func TestInvalidSpecsAreRejected(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "valid"))
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.Database)
		want   string
	}{
		{"postgres 12", func(db *v1alpha1.Database) { db.Spec.Version = "12" }, "PostgreSQL versions 13 to 17"},
		{"postgres 18", func(db *v1alpha1.Database) { db.Spec.Version = "18" }, "PostgreSQL versions 13 to 17"},
		{"mysql 5.7", func(db *v1alpha1.Database) { db.Spec.Engine, db.Spec.Version = "mysql", "5.7" }, "MySQL 8.0 and 8.4"},
		{"controlled parameter", func(db *v1alpha1.Database) { db.Spec.Parameters = map[string]string{"work_mem": "4MB", "Port": "1"} },
			"parameters: Port is set by Steward"},
		{"controlled mysql parameter", func(db *v1alpha1.Database) {
			db.Spec.Engine, db.Spec.Version = "mysql", "8.4"
			db.Spec.Parameters = map[string]string{"server-id": "7"}
		}, "parameters: server-id is set by Steward"},
		{"reserved owner", func(db *v1alpha1.Database) { db.Spec.Owner = "postgres" }, "owner must not be"},
		{"unknown size", func(db *v1alpha1.Database) { db.Spec.Size = "huge" }, "supported values"},
		{"empty volume", func(db *v1alpha1.Database) { db.Spec.Storage.Size = new(resource.MustParse("0")) }, "storage.size must be more than 0"},
		{"long name", func(db *v1alpha1.Database) { db.Name = strings.Repeat("d", 41) }, "at most 40 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(ctx, newDatabase(ns, "bad", tc.mutate))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.Database)
		want   string
	}{
		{"engine change", func(db *v1alpha1.Database) { db.Spec.Engine, db.Spec.Version = "mysql", "8.4" }, "engine cannot be changed"},
		{"storage shrink", func(db *v1alpha1.Database) { db.Spec.Storage.Size = new(resource.MustParse("512Mi")) }, "storage.size cannot shrink"},
		{"storage size removed", func(db *v1alpha1.Database) { db.Spec.Storage.Size = nil }, "storage.size cannot shrink or be removed"},
		{"database rename", func(db *v1alpha1.Database) { db.Spec.DatabaseName = "other" }, "databaseName cannot be changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The operator writes the Database's status meanwhile, so
			// an update may meet a conflict: that is not the refusal
			// looked for, and the update is tried again.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				db := &v1alpha1.Database{}
				if err := get(t, ns, "valid", db); err != nil {
					t.Fatal(err)
				}
				tc.change(db)
				return k8s.Update(ctx, db)
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Growing is allowed.
	update(t, ns, "valid", func(db *v1alpha1.Database) { db.Spec.Storage.Size = new(resource.MustParse("2Gi")) })
}

// TestShortestDatabase creates a Database with only an engine, a version
// and a size, as the shortest examples do: its volumes get the size
// preset's storage, which status shows, and grow when the preset grows.
func TestShortestDatabase(t *testing.T) {
	ns := namespace(t)
	create(t, &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "short", Namespace: ns},
		Spec:       v1alpha1.DatabaseSpec{Engine: v1alpha1.EnginePostgres, Version: "16", Size: v1alpha1.SizeMedium},
	})
	sts := statefulSet(t, ns, "short")
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "10Gi" {
		t.Errorf("the claim template asks for %s, want the medium preset's 10Gi", got.String())
	}
	markRolledOut(t, ns, "short", -1) // a new Database's first status is written at Ready
	eventually(t, func() error {
		db := &v1alpha1.Database{}
		if err := get(t, ns, "short", db); err != nil {
			return err
		}
		if db.Spec.Storage.Size != nil {
			return fmt.Errorf("spec.storage.size was set to %s", db.Spec.Storage.Size.String())
		}
		if db.Status.StorageSize == nil || db.Status.StorageSize.String() != "10Gi" {
			return fmt.Errorf("status.storageSize = %v, want 10Gi; status %+v", db.Status.StorageSize, db.Status)
		}
		return nil
	})
	// The large preset asks for more, and the volumes follow (envtest runs
	// no StatefulSet controller, so there are no claims to grow here;
	// TestStorageGrowsWhenTheClassAllowsIt grows them).
	update(t, ns, "short", func(db *v1alpha1.Database) { db.Spec.Size = v1alpha1.SizeLarge })
	eventually(t, func() error {
		db := &v1alpha1.Database{}
		if err := get(t, ns, "short", db); err != nil {
			return err
		}
		if db.Status.StorageSize == nil || db.Status.StorageSize.String() != "50Gi" {
			return fmt.Errorf("status.storageSize = %v, want 50Gi", db.Status.StorageSize)
		}
		return nil
	})
	// A smaller preset never shrinks the volumes.
	update(t, ns, "short", func(db *v1alpha1.Database) { db.Spec.Size = v1alpha1.SizeSmall })
	eventually(t, func() error {
		db := &v1alpha1.Database{}
		if err := get(t, ns, "short", db); err != nil {
			return err
		}
		if db.Status.ObservedGeneration != db.Generation || db.Status.StorageSize == nil || db.Status.StorageSize.String() != "10Gi" {
			return fmt.Errorf("generation %d observed %d, status.storageSize = %v, want 10Gi, the size the volumes were created with",
				db.Generation, db.Status.ObservedGeneration, db.Status.StorageSize)
		}
		return nil
	})
}

// TestEveryListedVersionIsAdmitted keeps the CRD's version rules and the
// engines' version lists in agreement.
func TestEveryListedVersionIsAdmitted(t *testing.T) {
	ns := namespace(t)
	for _, name := range engine.Names() {
		eng, _ := engine.Get(name)
		for i, v := range eng.Versions() {
			db := newDatabase(ns, fmt.Sprintf("%s-%d", name, i), func(db *v1alpha1.Database) {
				db.Spec.Engine, db.Spec.Version = v1alpha1.DatabaseEngine(name), v
			})
			if err := k8s.Create(context.Background(), db); err != nil {
				t.Errorf("%s %s is listed by the engine but refused: %v", name, v, err)
			}
		}
	}
}

func TestPasswordIsStableAcrossReconcilesAndOperatorRestarts(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "stable"))
	password := string(secretData(t, ns, "stable-credentials")["password"])
	statefulSet(t, ns, "stable")

	// Reconciles triggered by spec changes and by a deleted child.
	update(t, ns, "stable", func(db *v1alpha1.Database) { db.Spec.Parameters = map[string]string{"work_mem": "8MB"} })
	cm := &corev1.ConfigMap{}
	eventually(t, func() error {
		if err := get(t, ns, "stable-config", cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["postgresql.conf"], "8MB") {
			return fmt.Errorf("configuration not updated yet")
		}
		return nil
	})
	operator.restart(t)
	update(t, ns, "stable", func(db *v1alpha1.Database) { db.Spec.Parameters = map[string]string{"work_mem": "16MB"} })
	eventually(t, func() error {
		if err := get(t, ns, "stable-config", cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["postgresql.conf"], "16MB") {
			return fmt.Errorf("configuration not updated after the restart")
		}
		return nil
	})
	if got := string(secretData(t, ns, "stable-credentials")["password"]); got != password {
		t.Error("the password changed across reconciles and an operator restart")
	}
}

func TestRestartOnlySettingsRollThePods(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "conf"))
	hash := func() string {
		return statefulSet(t, ns, "conf").Spec.Template.Annotations[v1alpha1.AnnotationRestartHash]
	}
	before := hash()
	update(t, ns, "conf", func(db *v1alpha1.Database) { db.Spec.Parameters = map[string]string{"work_mem": "8MB"} })
	eventually(t, func() error {
		cm := &corev1.ConfigMap{}
		if err := get(t, ns, "conf-config", cm); err != nil || !strings.Contains(cm.Data["postgresql.conf"], "8MB") {
			return fmt.Errorf("configuration not updated yet (%w)", err)
		}
		return nil
	})
	if hash() != before {
		t.Error("a reloadable setting (work_mem) changed the pod template: it would restart the database")
	}
	update(t, ns, "conf", func(db *v1alpha1.Database) {
		db.Spec.Parameters = map[string]string{"work_mem": "8MB", "max_connections": "300"}
	})
	eventually(t, func() error {
		if hash() == before {
			return fmt.Errorf("max_connections needs a restart but the pod template did not change")
		}
		return nil
	})
}

func TestUserCredentialsSecret(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "mine", func(db *v1alpha1.Database) {
		db.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "my-login"}
	}))
	db := waitFor(t, ns, "mine", "CredentialsNotFound", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonCredentialsNotFound
	})
	if !strings.Contains(condition(db, v1alpha1.ConditionReady).Message, "my-login") {
		t.Errorf("message does not name the Secret: %q", condition(db, v1alpha1.ConditionReady).Message)
	}
	// A username other than spec.owner would rename the owner behind the
	// admission rules' back: refused.
	login := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-login", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("postgres"), "password": []byte("s3cret-given-by-user")},
	}
	create(t, login)
	// The operator does not watch Secrets it does not own: it looks again
	// after a delay, or at the next change.
	update(t, ns, "mine", func(db *v1alpha1.Database) { db.Labels = map[string]string{"touched": "1"} })
	waitFor(t, ns, "mine", "username refused", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonCredentialsNotFound && strings.Contains(c.Message, "spec.owner")
	})
	login.Data["username"] = []byte("app")
	if err := k8s.Update(context.Background(), login); err != nil {
		t.Fatal(err)
	}
	update(t, ns, "mine", func(db *v1alpha1.Database) { db.Labels = map[string]string{"touched": "2"} })
	eventually(t, func() error {
		s := &corev1.Secret{}
		if err := get(t, ns, "mine-credentials", s); err != nil {
			return err
		}
		if string(s.Data["username"]) != "app" || string(s.Data["password"]) != "s3cret-given-by-user" {
			return fmt.Errorf("credentials Secret does not carry the user's credentials")
		}
		return nil
	})
}

func TestNeverTakesOverAForeignSecret(t *testing.T) {
	ns := namespace(t)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "taken-credentials", Namespace: ns},
		Data:       map[string][]byte{"password": []byte("not-stewards-password")},
	})
	create(t, newDatabase(ns, "taken"))
	db := waitFor(t, ns, "taken", "NameConflict", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonNameConflict
	})
	if db.Status.Phase != v1alpha1.DatabaseDegraded {
		t.Errorf("phase = %s", db.Status.Phase)
	}
	s := &corev1.Secret{}
	_ = get(t, ns, "taken-credentials", s)
	if string(s.Data["password"]) != "not-stewards-password" || len(s.OwnerReferences) != 0 {
		t.Error("the foreign Secret was modified")
	}
}

func TestStorageGrowsWhenTheClassAllowsIt(t *testing.T) {
	ns := namespace(t)
	for name, allow := range map[string]bool{ns + "-grows": true, ns + "-fixed": false} {
		create(t, &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name},
			Provisioner:          "example.com/none",
			AllowVolumeExpansion: new(allow),
		})
	}
	create(t, newDatabase(ns, "grow", func(db *v1alpha1.Database) { db.Spec.Storage.StorageClassName = new(ns + "-grows") }))
	create(t, newDatabase(ns, "fixed", func(db *v1alpha1.Database) { db.Spec.Storage.StorageClassName = new(ns + "-fixed") }))
	claim(t, ns, "grow")
	claim(t, ns, "fixed")
	markRolledOut(t, ns, "grow", 1)
	waitFor(t, ns, "grow", "Ready", isReady)

	update(t, ns, "grow", func(db *v1alpha1.Database) { db.Spec.Storage.Size = new(resource.MustParse("5Gi")) })
	update(t, ns, "fixed", func(db *v1alpha1.Database) { db.Spec.Storage.Size = new(resource.MustParse("5Gi")) })
	eventually(t, func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := get(t, ns, "data-grow-0", pvc); err != nil {
			return err
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "5Gi" {
			return fmt.Errorf("claim requests %s", got.String())
		}
		return nil
	})
	// The claim template cannot change: the StatefulSet is deleted with
	// its pods orphaned and created again with the new size.
	collectOrphaned(t, ns, "grow")
	eventually(t, func() error {
		sts := &appsv1.StatefulSet{}
		if err := get(t, ns, "grow", sts); err != nil {
			return err
		}
		if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "5Gi" {
			return fmt.Errorf("the claim template requests %s", got.String())
		}
		return nil
	})
	markRolledOut(t, ns, "grow", 1)
	waitFor(t, ns, "grow", "ExpandingStorage", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionProgressing)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonExpandingStorage
	})
	db := waitFor(t, ns, "fixed", "ExpansionNotSupported", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.Reason == v1alpha1.ReasonExpansionNotSupported
	})
	if msg := condition(db, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "data-fixed-0") {
		t.Errorf("message does not name the volume: %q", msg)
	}
}

// expectEvent waits for an event with the reason about the named Database.
func expectEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event for %s among %d events", reason, name, len(list.Items))
	})
}

func withBackup(db *v1alpha1.Database) {
	db.Spec.Backup = &v1alpha1.DatabaseBackup{
		Enabled:     new(true),
		Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "dumps", Prefix: db.Name + "/"},
	}
}

func withBootstrap(db *v1alpha1.Database) {
	db.Spec.Bootstrap = &v1alpha1.DatabaseBootstrap{FromBackup: v1alpha1.RestoreSource{
		BackupRef: &corev1.LocalObjectReference{Name: "old"},
	}}
}

// oldBackup is the Backup of the Database being replaced, which a
// bootstrap restore reads.
func oldBackup(ns string) *v1alpha1.Backup {
	return &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns},
		Spec: v1alpha1.BackupSpec{
			Source:      v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "old"}},
			Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "dumps", Prefix: "old/"},
			Schedule:    "@daily",
		},
	}
}

func TestBackupIsCreatedOnceReadyAndRemovedWhenDisabled(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db", withBackup))
	statefulSet(t, ns, "db")
	if err := get(t, ns, "db-backup", &v1alpha1.Backup{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Backup exists before the Database is Ready (%v)", err)
	}

	markRolledOut(t, ns, "db", 1)
	waitFor(t, ns, "db", "Ready", isReady)
	b := &v1alpha1.Backup{}
	eventually(t, func() error { return get(t, ns, "db-backup", b) })
	if owner := metav1.GetControllerOf(b); owner == nil || owner.Kind != "Database" || owner.Name != "db" {
		t.Errorf("Backup controller = %+v, want the Database", owner)
	}
	src := b.Spec.Source
	if src.Type != v1alpha1.SourcePostgreSQL || src.DatabaseRef == nil || src.DatabaseRef.Name != "db" || src.Connection != nil {
		t.Errorf("source = %+v, want postgresql from Database db", src)
	}
	if d := b.Spec.Destination; d.Type != v1alpha1.DestinationS3 || d.Bucket != "dumps" || d.Prefix != "db/" {
		t.Errorf("destination = %+v", d)
	}
	if b.Spec.Schedule != "0 2 * * *" || b.Labels["app.kubernetes.io/managed-by"] != "steward" {
		t.Errorf("schedule %q (want the default), labels %v", b.Spec.Schedule, b.Labels)
	}

	// The Backup controller reports a run; the Database shows it.
	// The Backup controller writes the Backup too (its finalizer, its
	// status): on a conflict, read it again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := get(t, ns, "db-backup", b); err != nil {
			return err
		}
		b.Status.LastBackup = &v1alpha1.BackupRun{Job: "db-backup-1", Succeeded: true, Object: "db/20260301T020000Z.dump", Size: 42}
		return k8s.Status().Update(context.Background(), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "db", "status.lastBackup", func(db *v1alpha1.Database) bool {
		return db.Status.LastBackup != nil && db.Status.LastBackup.Object == "db/20260301T020000Z.dump" && db.Status.LastBackup.Size == 42
	})

	// enabled: false, as kubectl would send it (a Go client omits false).
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"backup":{"enabled":false}}}`))
	if err := k8s.Patch(context.Background(), newDatabase(ns, "db"), patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := get(t, ns, "db-backup", &v1alpha1.Backup{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Backup still exists after backups were disabled (%w)", err)
		}
		return nil
	})
}

// finishRestore ends the bootstrap Restore's run with res, as its pod
// would: envtest runs no Job controller and no kubelet.
func finishRestore(t *testing.T, ns, restore string, res dumpcmd.Result) {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, func() error { return get(t, ns, restore+"-restore", job) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x1", Namespace: ns, Labels: job.Spec.Template.Labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: jobs.Container, Image: job.Spec.Template.Spec.Containers[0].Image}}},
	}
	create(t, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: jobs.Container, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(res.Marshal())}},
	}}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatalf("ending pod %s: %v", pod.Name, err)
	}
}

func TestBootstrapFromBackupRestoresBeforeReady(t *testing.T) {
	ns := namespace(t)
	create(t, oldBackup(ns))
	create(t, newDatabase(ns, "db", withBootstrap, withBackup))
	// Creating, the status is held back until DatabaseFirstRolloutSettle has passed.
	db := &v1alpha1.Database{}
	apitest.Eventually(t, v1alpha1.DatabaseFirstRolloutSettle+timeout, func() error {
		if err := get(t, ns, "db", db); err != nil {
			return err
		}
		if c := condition(db, v1alpha1.ConditionBootstrapped); c == nil || c.Reason != v1alpha1.ReasonWaitingForInstance {
			return fmt.Errorf("waiting for an instance; status: %+v", db.Status)
		}
		return nil
	})
	if db.Status.BootstrapRestore != "" {
		t.Errorf("bootstrapRestore = %q before any instance is ready", db.Status.BootstrapRestore)
	}
	if err := get(t, ns, "db-bootstrap", &v1alpha1.Restore{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Restore exists before an instance is ready (%v)", err)
	}

	markRolledOut(t, ns, "db", 1)
	db = waitFor(t, ns, "db", "Restoring", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionProgressing)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonRestoring
	})
	if db.Status.Phase != v1alpha1.DatabaseCreating || isReady(db) || db.Status.BootstrapRestore != "db-bootstrap" ||
		!strings.Contains(condition(db, v1alpha1.ConditionProgressing).Message, "db-bootstrap") {
		t.Errorf("status = %+v, want Creating, not Ready, naming the Restore", db.Status)
	}
	rs := &v1alpha1.Restore{}
	if err := get(t, ns, "db-bootstrap", rs); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(rs); owner == nil || owner.Kind != "Database" || owner.Name != "db" {
		t.Errorf("Restore controller = %+v, want the Database", owner)
	}
	if s := rs.Spec; s.Source.BackupRef == nil || s.Source.BackupRef.Name != "old" || s.Overwrite ||
		s.Target.Type != v1alpha1.SourcePostgreSQL || s.Target.DatabaseRef == nil || s.Target.DatabaseRef.Name != "db" {
		t.Errorf("Restore spec = %+v", s)
	}

	// The Restore runs although the Database is not Ready: it is the
	// Database's own bootstrap restore.
	finishRestore(t, ns, "db-bootstrap", dumpcmd.Result{Succeeded: true, Key: "old/20260301T020000Z.dump"})
	if err := get(t, ns, "db-backup", &v1alpha1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Backup exists before the bootstrap restore succeeded (%v)", err)
	}
	db = waitFor(t, ns, "db", "Ready", isReady)
	if c := condition(db, v1alpha1.ConditionBootstrapped); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "old/20260301T020000Z.dump") {
		t.Errorf("Bootstrapped = %+v", c)
	}
	eventually(t, func() error { return get(t, ns, "db-backup", &v1alpha1.Backup{}) })

	// Done once: deleting the finished Restore does not start another.
	if err := k8s.Delete(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	update(t, ns, "db", func(db *v1alpha1.Database) { db.Labels = map[string]string{"touched": "1"} })
	waitFor(t, ns, "db", "Ready after the Restore is gone", func(db *v1alpha1.Database) bool {
		return isReady(db) && db.Labels["touched"] == "1"
	})
	if err := get(t, ns, "db-bootstrap", &v1alpha1.Restore{}); !apierrors.IsNotFound(err) {
		t.Errorf("the bootstrap Restore was created again (%v)", err)
	}
}

func TestAFailedBootstrapRestoreDegradesTheDatabase(t *testing.T) {
	ns := namespace(t)
	create(t, oldBackup(ns))
	create(t, newDatabase(ns, "db", withBootstrap))
	markRolledOut(t, ns, "db", 1)
	const why = "checksum mismatch: the dump is damaged"
	finishRestore(t, ns, "db-bootstrap", dumpcmd.Result{Succeeded: false, Key: "old/1.dump", Error: why})
	db := waitFor(t, ns, "db", "BootstrapFailed", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonBootstrapFailed
	})
	if db.Status.Phase != v1alpha1.DatabaseDegraded || isReady(db) || !strings.Contains(condition(db, v1alpha1.ConditionDegraded).Message, why) {
		t.Errorf("status = %+v, want Degraded with the Restore's message", db.Status)
	}
	expectEvent(t, ns, "db", v1alpha1.ReasonBootstrapFailed)
}
