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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// shop is the e-commerce platform: a PostgreSQL database and a Redis cache,
// a backend bound to both and exposed at /api, a frontend that depends on
// the backend and is exposed at /, shared configuration, an ingress and
// monitoring.
func shop(ns string, env v1alpha1.StackEnvironment, mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: v1alpha1.AppStackSpec{
			Environment: env,
			Databases:   []v1alpha1.StackDatabase{{Name: "db", Engine: v1alpha1.EnginePostgres, Version: "16"}},
			Caches:      []v1alpha1.StackCache{{Name: "cache", CacheSpec: v1alpha1.CacheSpec{Engine: v1alpha1.EngineRedis}}},
			Apps: []v1alpha1.StackApp{
				{Name: "backend", Expose: &v1alpha1.StackExpose{Path: "/api"}, WebAppSpec: v1alpha1.WebAppSpec{
					Image: "shop/backend:1.4", Database: &v1alpha1.WebAppBinding{Ref: "db"}, Cache: &v1alpha1.WebAppBinding{Ref: "cache"},
				}},
				{Name: "frontend", DependsOn: []string{"backend"}, Expose: &v1alpha1.StackExpose{Path: "/"}, WebAppSpec: v1alpha1.WebAppSpec{
					Image: "shop/frontend:2.0", Replicas: new(int32(1)),
				}},
			},
			Config:     &v1alpha1.StackConfig{Data: map[string]string{"LOG_LEVEL": "info", "API_URL": "https://shop.example.com/api"}},
			Ingress:    &v1alpha1.StackIngress{Host: "shop.example.com"},
			Monitoring: &v1alpha1.StackMonitoring{Enabled: true},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// stackKey is the key of the test's AppStack, named shop.
func stackKey(ns string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: "shop"} }

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func named[T client.Object](obj T, ns, name string) T {
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// waitExists waits for the object to exist.
func waitExists(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, func() error {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	})
}

// component waits until the stack's status has the component matching check.
func component(t *testing.T, ns, name string, check func(v1alpha1.StackComponentStatus) error) {
	t.Helper()
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		for _, c := range s.Status.Components {
			if c.Name == name {
				return check(c)
			}
		}
		return fmt.Errorf("no component %s in %+v", name, s.Status.Components)
	})
}

func blockedBy(want string) func(v1alpha1.StackComponentStatus) error {
	return func(c v1alpha1.StackComponentStatus) error {
		if c.Reason != v1alpha1.ReasonBlocked || !strings.HasPrefix(c.Message, want) {
			return fmt.Errorf("%s: reason %s, message %q; want Blocked, %q", c.Name, c.Reason, c.Message, want)
		}
		return nil
	}
}

// stays asserts the object does not appear for a while.
func stays(t *testing.T, obj client.Object, absent bool) {
	t.Helper()
	time.Sleep(time.Second)
	if exists(t, obj) == absent {
		t.Fatalf("%T %s: exists = %v", obj, obj.GetName(), !absent)
	}
}

func TestTheShopConvergesInDependencyOrder(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackProduction))
	db := named(&v1alpha1.Database{}, ns, "shop-db")
	cache := named(&v1alpha1.Cache{}, ns, "shop-cache")
	config := named(&v1alpha1.AppConfig{}, ns, "shop-config")
	backend := named(&v1alpha1.WebApp{}, ns, "shop-backend")
	frontend := named(&v1alpha1.WebApp{}, ns, "shop-frontend")
	ingress := named(&networkingv1.Ingress{}, ns, "shop")

	// What depends on nothing comes first.
	waitExists(t, db)
	waitExists(t, cache)
	waitExists(t, config)
	setReady(t, config, true, "RolledOut")
	component(t, ns, "backend", blockedBy("waiting for database db: Pending"))
	setReady(t, db, false, "NotReady")
	component(t, ns, "backend", blockedBy("waiting for database db: NotReady"))
	component(t, ns, "frontend", blockedBy("waiting for webapp backend: Blocked"))
	stays(t, backend, true)

	setReady(t, db, true, "Available")
	component(t, ns, "backend", blockedBy("waiting for cache cache: Pending"))
	setReady(t, cache, false, "NotReady")
	component(t, ns, "backend", blockedBy("waiting for cache cache: NotReady"))
	setReady(t, cache, true, "Available")
	waitExists(t, backend)
	stays(t, frontend, true)
	if exists(t, ingress) {
		t.Fatal("the ingress came before the apps were Ready")
	}

	setReady(t, backend, true, "Available")
	waitExists(t, frontend)
	setReady(t, frontend, true, "Available")
	waitExists(t, ingress)

	// The bindings and configuration name the stack's objects, and the
	// production profile applies where the spec is silent.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(backend), backend); err != nil {
		t.Fatal(err)
	}
	if backend.Spec.Database.Ref != "shop-db" || backend.Spec.Cache.Ref != "shop-cache" {
		t.Errorf("backend binds %s and %s, want shop-db and shop-cache", backend.Spec.Database.Ref, backend.Spec.Cache.Ref)
	}
	if len(backend.Spec.Config) != 1 || backend.Spec.Config[0].AppConfig != "shop-config" {
		t.Errorf("backend config = %+v, want shop-config", backend.Spec.Config)
	}
	if backend.Spec.Replicas == nil || *backend.Spec.Replicas != 2 {
		t.Errorf("backend replicas = %v, want the production profile's 2", backend.Spec.Replicas)
	}
	if backend.Spec.PodAnnotations["prometheus.io/scrape"] != "true" || backend.Spec.PodAnnotations["prometheus.io/port"] != "8080" {
		t.Errorf("backend pod annotations = %v, want prometheus.io scrape annotations", backend.Spec.PodAnnotations)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(frontend), frontend); err != nil {
		t.Fatal(err)
	}
	if *frontend.Spec.Replicas != 1 {
		t.Errorf("frontend replicas = %d, want the explicit 1", *frontend.Spec.Replicas)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(db), db); err != nil {
		t.Fatal(err)
	}
	if *db.Spec.Replicas != 3 || db.Spec.Storage.Size.Cmp(resource.MustParse("100Gi")) != 0 || db.Spec.Backup != nil {
		t.Errorf("database replicas %d storage %s backup %v; want 3, 100Gi, none without spec.backup", *db.Spec.Replicas, db.Spec.Storage.Size.String(), db.Spec.Backup)
	}
	paths := map[string]string{}
	for _, p := range ingress.Spec.Rules[0].HTTP.Paths {
		paths[p.Path] = p.Backend.Service.Name
	}
	if ingress.Spec.Rules[0].Host != "shop.example.com" || paths["/api"] != "shop-backend" || paths["/"] != "shop-frontend" {
		t.Errorf("ingress routes %s %v", ingress.Spec.Rules[0].Host, paths)
	}

	s := &v1alpha1.AppStack{}
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || s.Status.Phase != v1alpha1.AppStackReady {
			return fmt.Errorf("phase %s, Ready %+v", s.Status.Phase, c)
		}
		return nil
	})
	var order []string
	for _, c := range s.Status.Components {
		order = append(order, c.Name)
	}
	if want := []string{"db", "cache", "config", "backend", "frontend", "ingress"}; !slices.Equal(order, want) {
		t.Errorf("components in order %v, want %v", order, want)
	}
	effective := map[string]string{}
	for _, e := range s.Status.Effective {
		for _, set := range e.Settings {
			effective[e.Component+"."+set.Name] = set.Value + " from " + set.Source
		}
	}
	for k, want := range map[string]string{
		"db.replicas":       "3 from profile",
		"db.storageSize":    "100Gi from profile",
		"db.backups":        "off: spec.backup has no destination from profile",
		"backend.replicas":  "2 from profile",
		"frontend.replicas": "1 from spec",
	} {
		if effective[k] != want {
			t.Errorf("effective %s = %q, want %q", k, effective[k], want)
		}
	}

	// The events tell the order too.
	created := createdEvents(t, ns)
	if want := []string{"shop-backend", "shop-frontend", "shop"}; !slices.Equal(created[len(created)-3:], want) {
		t.Errorf("created in order %v; want the apps, backend before frontend, then the Ingress", created)
	}
}

// createdEvents lists the objects the stack created, in the order of its events.
func createdEvents(t *testing.T, ns string) []string {
	t.Helper()
	return events(t, ns, v1alpha1.EventComponentCreated)
}

func events(t *testing.T, ns, reason string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Related != nil {
			out = append(out, e.Related.Name)
		}
	}
	return out
}

// converge plays every component's controller until the stack is Ready.
func converge(t *testing.T, ns string) {
	t.Helper()
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		for _, c := range s.Status.Components {
			if c.Ready || c.Kind == "Ingress" || c.Reason == v1alpha1.ReasonBlocked {
				continue
			}
			var obj client.Object
			switch c.Kind {
			case "Database":
				obj = &v1alpha1.Database{}
			case "Cache":
				obj = &v1alpha1.Cache{}
			case "WebApp":
				obj = &v1alpha1.WebApp{}
			default:
				obj = &v1alpha1.AppConfig{}
			}
			setReady(t, named(obj, ns, c.Object), true, "Available")
		}
		if s.Status.Phase != v1alpha1.AppStackReady || s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("phase %s", s.Status.Phase)
		}
		return nil
	})
}

func TestABrokenDatabaseHoldsItsDependentsUntilFixed(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
		s.Spec.DependencyTimeout = &metav1.Duration{Duration: 3 * time.Second}
	}))
	db := named(&v1alpha1.Database{}, ns, "shop-db")
	waitExists(t, db)
	setReady(t, db, false, "UpgradeBlocked")
	setReady(t, named(&v1alpha1.Cache{}, ns, "shop-cache"), true, "Available")
	setReady(t, named(&v1alpha1.AppConfig{}, ns, "shop-config"), true, "RolledOut")
	component(t, ns, "backend", blockedBy("waiting for database db: UpgradeBlocked"))
	component(t, ns, "frontend", blockedBy("waiting for webapp backend: Blocked"))

	// A long wait becomes Degraded, and says why.
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonDependencyTimeout ||
			!strings.Contains(c.Message, "waiting for database db: UpgradeBlocked") {
			return fmt.Errorf("Degraded = %+v", c)
		}
		return nil
	})

	// Fixed: the rest proceeds with no user action.
	setReady(t, db, true, "Available")
	waitExists(t, named(&v1alpha1.WebApp{}, ns, "shop-backend"))
	converge(t, ns)
	waitExists(t, named(&v1alpha1.WebApp{}, ns, "shop-frontend"))
}

func TestACycleIsReportedAndNothingWaitsOnIt(t *testing.T) {
	ns := namespace(t)
	// Without the webhook, a cycle reaches the controller.
	create(t, shop(ns, v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
		s.Spec.Apps[0].DependsOn = []string{"frontend"}
	}))
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonInvalidSpec || c.Message != "dependency cycle: backend -> frontend -> backend" {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	if exists(t, named(&v1alpha1.Database{}, ns, "shop-db")) {
		t.Error("a stack with a cycle created components")
	}
}

func TestProfilesAndExplicitValues(t *testing.T) {
	for _, tc := range []struct {
		env                 v1alpha1.StackEnvironment
		replicas            int32
		storage             string
		backups, appReplica bool
	}{
		{v1alpha1.StackProduction, 3, "100Gi", true, true},
		{v1alpha1.StackStaging, 2, "50Gi", true, false},
		{v1alpha1.StackDevelopment, 1, "10Gi", false, false},
	} {
		t.Run(string(tc.env), func(t *testing.T) {
			ns := namespace(t)
			create(t, shop(ns, tc.env, func(s *v1alpha1.AppStack) {
				s.Spec.Backup = &v1alpha1.StackBackup{Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups"}}
				s.Spec.Databases = append(s.Spec.Databases, v1alpha1.StackDatabase{
					Name: "explicit", Replicas: new(int32(5)), StorageSize: new(resource.MustParse("7Gi")),
					Backups: &v1alpha1.StackDatabaseBackups{Enabled: new(!tc.backups)},
				})
			}))
			for name, want := range map[string]struct {
				replicas int32
				storage  string
				backups  bool
			}{"db": {tc.replicas, tc.storage, tc.backups}, "explicit": {5, "7Gi", !tc.backups}} {
				db := named(&v1alpha1.Database{}, ns, "shop-"+name)
				waitExists(t, db)
				if *db.Spec.Replicas != want.replicas || db.Spec.Storage.Size.Cmp(resource.MustParse(want.storage)) != 0 || (db.Spec.Backup != nil) != want.backups {
					t.Errorf("%s: replicas %d storage %s backup %v; want %d %s backups %v", name, *db.Spec.Replicas, db.Spec.Storage.Size.String(), db.Spec.Backup != nil, want.replicas, want.storage, want.backups)
				}
				if db.Spec.Backup != nil && tc.env == v1alpha1.StackProduction && *db.Spec.Backup.Retention.KeepDaily != 30 {
					t.Errorf("%s: production retention keepDaily %d, want 30", name, *db.Spec.Backup.Retention.KeepDaily)
				}
			}
			converge(t, ns)
			backend := named(&v1alpha1.WebApp{}, ns, "shop-backend")
			waitExists(t, backend)
			if got := backend.Spec.Replicas != nil && *backend.Spec.Replicas == 2; got != tc.appReplica {
				t.Errorf("backend replicas %v; want 2 only in production", backend.Spec.Replicas)
			}
		})
	}
}

func TestComponentsRemovedAndAdded(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment))
	converge(t, ns)
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		s.Spec.Apps = slices.DeleteFunc(s.Spec.Apps, func(a v1alpha1.StackApp) bool { return a.Name == "frontend" })
		s.Spec.Apps = append(s.Spec.Apps, v1alpha1.StackApp{Name: "admin", DependsOn: []string{"backend"}, WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/admin:1"}})
		return k8s.Update(context.Background(), s)
	})
	eventually(t, func() error {
		if exists(t, named(&v1alpha1.WebApp{}, ns, "shop-frontend")) {
			return fmt.Errorf("shop-frontend is still there")
		}
		return nil
	})
	waitExists(t, named(&v1alpha1.WebApp{}, ns, "shop-admin"))
	converge(t, ns)
	ingress := named(&networkingv1.Ingress{}, ns, "shop")
	waitExists(t, ingress)
	if len(ingress.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Errorf("ingress paths %+v, want only /api after the frontend went", ingress.Spec.Rules[0].HTTP.Paths)
	}
}

func TestDeletionRunsInReverseOrder(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment))
	converge(t, ns)
	s := named(&v1alpha1.AppStack{}, ns, "shop")
	if err := k8s.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if exists(t, named(&v1alpha1.AppStack{}, ns, "shop")) {
			return fmt.Errorf("the stack is still there")
		}
		return nil
	})
	deleted := events(t, ns, v1alpha1.EventComponentDeleted)
	pos := map[string]int{}
	for i, name := range deleted {
		pos[name] = i
	}
	if len(deleted) != 5 {
		t.Fatalf("deleted %v, want the five components", deleted)
	}
	for _, before := range [][2]string{
		{"shop-frontend", "shop-backend"}, {"shop-backend", "shop-db"}, {"shop-backend", "shop-cache"}, {"shop-backend", "shop-config"},
	} {
		if pos[before[0]] > pos[before[1]] {
			t.Errorf("%s was deleted after %s: %v", before[0], before[1], deleted)
		}
	}
}

func TestProductionDatabaseFinalBackup(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackProduction, func(s *v1alpha1.AppStack) {
		s.Spec.Backup = &v1alpha1.StackBackup{Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups"}}
	}))
	converge(t, ns)
	db := named(&v1alpha1.Database{}, ns, "shop-db")
	waitExists(t, db)
	// The Database controller would create its Backup once Ready.
	backup := &v1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-db-backup", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Database", Name: db.Name, UID: db.UID, Controller: new(true),
		}}},
		Spec: v1alpha1.BackupSpec{
			Source:      v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: db.Name}},
			Destination: db.Spec.Backup.Destination, Schedule: db.Spec.Backup.Schedule,
		},
	}
	create(t, backup)

	s := named(&v1alpha1.AppStack{}, ns, "shop")
	waitExists(t, s)
	if err := k8s.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// The apps go; the database waits for its final backup, which fails.
	token := runFinalBackup(t, backup, false)
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Reason != v1alpha1.ReasonFinalBackupFailed || !strings.Contains(c.Message, "final backup of Database shop-db failed") {
			return fmt.Errorf("Degraded = %+v", c)
		}
		return nil
	})
	time.Sleep(time.Second)
	if !exists(t, db) || !db.DeletionTimestamp.IsZero() {
		t.Fatal("the database was deleted although its final backup failed")
	}
	if exists(t, named(&v1alpha1.WebApp{}, ns, "shop-backend")) {
		t.Error("the backend is still there: deletion should have gone as far as the database")
	}

	// Asked to retry, a successful final backup lets the database go.
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		s.Annotations = map[string]string{v1alpha1.AnnotationRetryFinalBackup: "1"}
		return k8s.Update(context.Background(), s)
	})
	if again := runFinalBackup(t, backup, true); again == token {
		t.Fatal("the retry asked for the same run")
	}
	eventually(t, func() error {
		if exists(t, named(&v1alpha1.Database{}, ns, "shop-db")) {
			return fmt.Errorf("the database is still there")
		}
		return nil
	})
}

// runFinalBackup waits for the stack to ask the Backup for a run, then
// plays the Backup controller: the run finishes, successfully or not. It
// returns the run's annotation value.
func runFinalBackup(t *testing.T, backup *v1alpha1.Backup, succeed bool) string {
	t.Helper()
	var token string
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(backup), backup); err != nil {
			return err
		}
		v := backup.Annotations[v1alpha1.AnnotationBackupNow]
		if v == "" || v == backup.Status.LastManualRun {
			return fmt.Errorf("no new run asked for")
		}
		token = v
		now := metav1.Now()
		run := v1alpha1.BackupRun{Job: backup.ManualJobName(v), StartTime: &now, CompletionTime: &now, Succeeded: succeed}
		if !succeed {
			run.Message = "pg_dump: connection refused"
		}
		backup.Status.LastManualRun = v
		backup.Status.History = append([]v1alpha1.BackupRun{run}, backup.Status.History...)
		return k8s.Status().Update(context.Background(), backup)
	})
	return token
}

func TestServiceMonitorsWhenThePrometheusOperatorIsInstalled(t *testing.T) {
	installServiceMonitorCRD(t)
	serviceMonitors.Store(true)
	t.Cleanup(func() { serviceMonitors.Store(false) })
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment))
	converge(t, ns)
	for _, app := range []string{"shop-backend", "shop-frontend"} {
		sm := &unstructured.Unstructured{}
		sm.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
		eventually(t, func() error { return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: app}, sm) })
		sel, _, _ := unstructured.NestedString(sm.Object, "spec", "selector", "matchLabels", "steward.dev/webapp")
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if sel != app || len(eps) != 1 || eps[0].(map[string]any)["path"] != "/metrics" {
			t.Errorf("ServiceMonitor %s: selector %q endpoints %v", app, sel, eps)
		}
		w := named(&v1alpha1.WebApp{}, ns, app)
		waitExists(t, w)
		if _, ok := w.Spec.PodAnnotations["prometheus.io/scrape"]; ok {
			t.Errorf("%s has scrape annotations although ServiceMonitors are in use", app)
		}
	}
}

// installServiceMonitorCRD serves a minimal ServiceMonitor kind, as the
// Prometheus Operator's CRDs would.
func installServiceMonitorCRD(t *testing.T) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true),
				}},
			}},
		},
	}
	// The tests' scheme has no apiextensions kinds: send it unstructured.
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := k8s.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitorList"})
		return k8s.List(context.Background(), list)
	})
}

func TestAConfigRolloutHoldsNoAppAndABrokenAppDegradesTheStack(t *testing.T) {
	ns := namespace(t)
	create(t, shop(ns, v1alpha1.StackDevelopment))
	setReady(t, named(&v1alpha1.Database{}, ns, "shop-db"), true, "Available")
	setReady(t, named(&v1alpha1.Cache{}, ns, "shop-cache"), true, "Available")
	// The configuration is rendered and rolling out to its consumers: that
	// is their business, and holds no app back.
	config := named(&v1alpha1.AppConfig{}, ns, "shop-config")
	setReady(t, config, true, "RolledOut")
	setReady(t, config, false, "RollingOut")
	backend := named(&v1alpha1.WebApp{}, ns, "shop-backend")
	waitExists(t, backend)

	// A component that reports itself Degraded degrades the stack.
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(backend), backend); err != nil {
			return err
		}
		backend.Status.ObservedGeneration = backend.Generation
		meta.SetStatusCondition(&backend.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "the rollout is stuck"})
		meta.SetStatusCondition(&backend.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "ProgressDeadlineExceeded", Message: "the rollout is stuck"})
		return k8s.Status().Update(context.Background(), backend)
	})
	eventually(t, func() error {
		s := &v1alpha1.AppStack{}
		if err := k8s.Get(context.Background(), stackKey(ns), s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionDegraded)
		if s.Status.Phase != v1alpha1.AppStackDegraded || c == nil || c.Reason != v1alpha1.ReasonComponentDegraded || !strings.Contains(c.Message, "WebApp backend: the rollout is stuck") {
			return fmt.Errorf("phase %s, Degraded %+v", s.Status.Phase, c)
		}
		return nil
	})
}
