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

package database

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

var (
	// databaseName is a name the Database's children can take: a DNS
	// label of at most 40 characters, the schema's limit.
	databaseName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// sqlName is the schema's pattern of databaseName and owner.
	sqlName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// fuzzDatabase is a Database the schema admits, or nil: named name, with
// databaseName dbName and owner, "KEY=VALUE" parameters, and the settings
// k chooses: engine, version, size, replicas, resources, storage,
// deletion policy, backups, bootstrap and synchronous replicas.
func fuzzDatabase(name, dbName, owner, params string, k fuzzcheck.Knobs) *v1alpha1.Database {
	if len(name) > 40 || !databaseName.MatchString(name) || len(dbName) > 63 || !sqlName.MatchString(dbName) ||
		len(owner) > 32 || !sqlName.MatchString(owner) {
		return nil
	}
	switch owner {
	case "postgres", "root", "replicator", "mysql":
		return nil
	}
	db := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: "uid-database"},
		Spec: v1alpha1.DatabaseSpec{
			Engine:       []v1alpha1.DatabaseEngine{v1alpha1.EnginePostgres, v1alpha1.EngineMySQL, v1alpha1.EngineMariaDB}[k.Next()%3],
			Size:         []v1alpha1.DatabaseSize{"", v1alpha1.SizeSmall, v1alpha1.SizeMedium, v1alpha1.SizeLarge}[k.Next()%4],
			DatabaseName: dbName,
			Owner:        owner,
			Parameters:   map[string]string{},
		},
	}
	for _, line := range strings.Split(params, "\n") {
		if key, value, ok := strings.Cut(line, "="); ok {
			db.Spec.Parameters[key] = value
		}
	}
	eng, err := engine.Get(string(db.Spec.Engine))
	if err != nil {
		panic(err)
	}
	versions := eng.Versions()
	db.Spec.Version = versions[int(k.Next())%len(versions)]
	if b := k.Next(); b%2 == 1 {
		db.Spec.Version += fmt.Sprintf(".%d", b>>1)
	}
	if r := k.Next() % 10; r > 0 {
		db.Spec.Replicas = new(int32(r))
	}
	if b := k.Next(); b%2 == 1 {
		db.Spec.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(int64(b)<<24+1<<24, resource.BinarySI)},
		}
	}
	if b := k.Next(); b%2 == 1 {
		db.Spec.Storage.Size = resource.NewQuantity(int64(b)<<30, resource.BinarySI)
		if b&2 != 0 {
			db.Spec.Storage.StorageClassName = new("fast")
		}
	}
	if k.Next()%2 == 1 {
		db.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	}
	if b := k.Next(); b%2 == 1 {
		db.Spec.Backup = &v1alpha1.DatabaseBackup{Schedule: "0 2 * * *", Destination: v1alpha1.BackupDestination{
			Type: v1alpha1.DestinationS3, Bucket: "backups", Prefix: []string{"", "prod/" + name}[b>>1%2]}}
		if b&4 != 0 {
			db.Spec.Backup.Enabled = new(b&8 != 0)
		}
	}
	if b := k.Next(); b%2 == 1 {
		db.Spec.Bootstrap = &v1alpha1.DatabaseBootstrap{FromBackup: v1alpha1.RestoreSource{
			BackupRef: &corev1.LocalObjectReference{Name: "old-backup"}}}
	}
	if b := k.Next(); b%2 == 1 {
		db.Spec.HighAvailability = &v1alpha1.DatabaseHighAvailability{SynchronousReplicas: int32(b>>1) % 9}
	}
	return db
}

// FuzzChildren checks the children of any Database the schema admits, and
// the credentials of any user name and password: the same every time,
// named after the Database with valid names and labels, owned by it; a
// StatefulSet whose pods carry what its selector selects and no two
// variables, volumes or mount paths alike; a disruption budget exactly with
// several instances; and a connection URI that reads back as its parts.
func FuzzChildren(f *testing.F) {
	f.Add("orders", "app", "app", "", "s3cret", []byte{})
	f.Add("ledger", "ledger", "ledger", "work_mem=8MB\nlog_min_duration_statement=500\nshared_preload_libraries=pg_stat_statements",
		"p@ss:word/?#[]", []byte{0, 3, 1, 9, 0, 0, 41, 0, 1, 0, 5, 3})
	f.Add("catalog", "catalog", "catalog", "long_query_time=2\nslow_query_log=ON", "x", []byte{1, 2, 1, 0, 0, 1, 1, 0, 0, 0, 0})
	f.Add("wiki", "wiki", "wiki", "", "%25%%", []byte{2, 1, 0, 0, 0, 0, 0, 1, 13, 1, 3})
	f.Add("a-database-name-of-exactly-forty-chars-x", "_", "_", "max-connections=10\nmax_connections=20", "", []byte{2, 3, 1, 255, 4, 255, 255, 1, 255, 255, 255})
	f.Fuzz(func(t *testing.T, name, dbName, owner, params, password string, settings []byte) {
		db := fuzzDatabase(name, dbName, owner, params, fuzzcheck.Knobs(settings))
		if db == nil {
			t.Skip("refused by the schema")
		}
		eng, err := engine.Get(string(db.Spec.Engine))
		if err != nil {
			t.Fatal(err)
		}
		files, renderErr := eng.Render(Tuning(db))
		build := func() []any {
			return []any{ConfigMap(db, files), Services(db), StatefulSet(db, eng, "steward:test", db.Spec.StorageSize()),
				PodDisruptionBudget(db), Backup(db), BootstrapRestore(db), CredentialsData(db, db.Spec.Owner, password),
				SuperuserData(db, password, password), RestartHash(db, eng), Endpoint(db), ReadEndpoint(db)}
		}
		first := build()
		if again := build(); !equality.Semantic.DeepEqual(first, again) {
			t.Fatal("the children differ from one build to the next")
		}
		if again, againErr := eng.Render(Tuning(db)); fmt.Sprint(renderErr) != fmt.Sprint(againErr) || !equality.Semantic.DeepEqual(files, again) {
			t.Fatalf("the configuration differs from one rendering to the next: %v, %v", renderErr, againErr)
		}

		cm := ConfigMap(db, files)
		checkMeta(t, db, *cm.Name, *cm.Namespace, cm.Labels, cm.OwnerReferences)
		for key := range files {
			if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
				t.Fatalf("ConfigMap key %q: %v", key, errs)
			}
		}
		for _, svc := range Services(db) {
			checkMeta(t, db, *svc.Name, *svc.Namespace, svc.Labels, svc.OwnerReferences)
			if svc.Spec.Selector[v1alpha1.LabelDatabase] != db.Name {
				t.Fatalf("Service %s selects %v", *svc.Name, svc.Spec.Selector)
			}
		}
		checkStatefulSet(t, db, eng)
		if pdb := PodDisruptionBudget(db); (pdb != nil) != (Replicas(db) > 1) {
			t.Fatalf("PodDisruptionBudget %v for %d instances", pdb, Replicas(db))
		} else if pdb != nil {
			checkMeta(t, db, *pdb.Name, *pdb.Namespace, pdb.Labels, pdb.OwnerReferences)
		}
		checkOwned(t, db)
		checkCredentials(t, db, password)
	})
}

func checkStatefulSet(t *testing.T, db *v1alpha1.Database, eng engine.Engine) {
	t.Helper()
	size := db.Spec.StorageSize()
	sts := StatefulSet(db, eng, "steward:test", size)
	checkMeta(t, db, *sts.Name, *sts.Namespace, sts.Labels, sts.OwnerReferences)
	if *sts.Spec.Replicas != Replicas(db) || *sts.Spec.Replicas < 1 {
		t.Fatalf("StatefulSet replicas %d, want %d", *sts.Spec.Replicas, Replicas(db))
	}
	if sts.Annotations[v1alpha1.AnnotationVersion] != db.Spec.Version {
		t.Fatalf("StatefulSet version annotation %q", sts.Annotations[v1alpha1.AnnotationVersion])
	}
	for i := range *sts.Spec.Replicas {
		if errs := validation.IsDNS1123Label(fmt.Sprintf("%s-%s-%d", dataVolume, db.Name, i)); len(errs) > 0 {
			t.Fatalf("claim of instance %d: %v", i, errs)
		}
	}
	claims := sts.Spec.VolumeClaimTemplates
	if len(claims) != 1 {
		t.Fatalf("%d claim templates", len(claims))
	}
	if got := (*claims[0].Spec.Resources.Requests)[corev1.ResourceStorage]; got.Cmp(size) != 0 {
		t.Fatalf("claim of %v, want %v", got, size)
	}
	tmpl := sts.Spec.Template
	if err := fuzzcheck.Labels(tmpl.Labels); err != nil {
		t.Fatalf("pod labels: %v", err)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if tmpl.Labels[k] != v {
			t.Fatalf("selector %v does not select the pods' labels %v", sts.Spec.Selector.MatchLabels, tmpl.Labels)
		}
	}
	volumes := map[string]bool{*claims[0].Name: true}
	for _, v := range tmpl.Spec.Volumes {
		if volumes[*v.Name] {
			t.Fatalf("two volumes %s", *v.Name)
		}
		volumes[*v.Name] = true
	}
	for _, c := range append(tmpl.Spec.InitContainers, tmpl.Spec.Containers...) {
		env := map[string]bool{}
		for _, e := range c.Env {
			if env[*e.Name] {
				t.Fatalf("container %s has two variables %s", *c.Name, *e.Name)
			}
			env[*e.Name] = true
		}
		paths := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !volumes[*m.Name] || paths[*m.MountPath] {
				t.Fatalf("container %s mounts %s at %s: no such volume, or the path is taken", *c.Name, *m.Name, *m.MountPath)
			}
			paths[*m.MountPath] = true
		}
	}
}

// checkOwned checks the Backup and the bootstrap Restore a Database asks
// for: exactly when it asks, named within their kinds' limits, owned by it.
func checkOwned(t *testing.T, db *v1alpha1.Database) {
	t.Helper()
	b := Backup(db)
	if want := db.Spec.Backup != nil && (db.Spec.Backup.Enabled == nil || *db.Spec.Backup.Enabled); (b != nil) != want {
		t.Fatalf("Backup %v for spec.backup %+v", b, db.Spec.Backup)
	}
	if b != nil {
		if len(b.Name) > 50 || b.Spec.Destination.Prefix == "" || b.Spec.Source.DatabaseRef.Name != db.Name {
			t.Fatalf("Backup %s of %s, prefix %q", b.Name, b.Spec.Source.DatabaseRef.Name, b.Spec.Destination.Prefix)
		}
		checkObjectMeta(t, db, b.ObjectMeta)
	}
	r := BootstrapRestore(db)
	if (r != nil) != (db.Spec.Bootstrap != nil) {
		t.Fatalf("bootstrap Restore %v for spec.bootstrap %+v", r, db.Spec.Bootstrap)
	}
	if r != nil {
		if len(r.Name) > 55 || !metav1.IsControlledBy(r, db) || r.Labels[v1alpha1.LabelBootstrapFor] != db.Name {
			t.Fatalf("bootstrap Restore %s is not the Database's", r.Name)
		}
		checkObjectMeta(t, db, r.ObjectMeta)
	}
}

// checkCredentials checks that the owner's connection URI reads back as
// the user name, password, endpoint and database it is made of.
func checkCredentials(t *testing.T, db *v1alpha1.Database, password string) {
	t.Helper()
	data := CredentialsData(db, db.Spec.Owner, password)
	for _, k := range []string{"username", "password", "host", "port", "database", "uri"} {
		if _, ok := data[k]; !ok {
			t.Fatalf("credentials lack %s", k)
		}
	}
	u, err := url.Parse(string(data["uri"]))
	if err != nil {
		t.Fatalf("uri %q: %v", data["uri"], err)
	}
	got, _ := u.User.Password()
	if u.User.Username() != db.Spec.Owner || got != password || u.Host != Endpoint(db) || u.Path != "/"+db.Spec.DatabaseName {
		t.Fatalf("uri %q reads as user %q password %q host %q path %q", data["uri"], u.User.Username(), got, u.Host, u.Path)
	}
	if string(data["password"]) != password || string(data["username"]) != db.Spec.Owner {
		t.Fatal("credentials differ from the user's")
	}
}

// checkMeta checks a child's name, namespace, labels and controller.
func checkMeta(t *testing.T, db *v1alpha1.Database, name, namespace string, labels map[string]string, refs []metav1ac.OwnerReferenceApplyConfiguration) {
	t.Helper()
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 || !strings.HasPrefix(name, db.Name) || namespace != db.Namespace {
		t.Fatalf("child %s/%s of Database %s/%s: %v", namespace, name, db.Namespace, db.Name, errs)
	}
	if err := fuzzcheck.Labels(labels); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(refs) != 1 || *refs[0].UID != db.UID || !*refs[0].Controller || *refs[0].Kind != "Database" {
		t.Fatalf("%s: owner references %+v", name, refs)
	}
}

// checkObjectMeta is checkMeta for a typed object.
func checkObjectMeta(t *testing.T, db *v1alpha1.Database, om metav1.ObjectMeta) {
	t.Helper()
	if errs := validation.IsDNS1123Subdomain(om.Name); len(errs) > 0 || om.Namespace != db.Namespace {
		t.Fatalf("%s/%s: %v", om.Namespace, om.Name, errs)
	}
	if err := fuzzcheck.Labels(om.Labels); err != nil {
		t.Fatalf("%s: %v", om.Name, err)
	}
	refs := om.OwnerReferences
	if len(refs) != 1 || refs[0].UID != db.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Fatalf("%s: owner references %+v", om.Name, refs)
	}
}
