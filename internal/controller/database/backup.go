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
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
)

// controllerRef is the owner reference of a Database's child.
func controllerRef(db *v1alpha1.Database) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Database", Name: db.Name, UID: db.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

// Backup is the Backup that spec.backup asks for, or nil when it asks for
// none.
func Backup(db *v1alpha1.Database) *v1alpha1.Backup {
	b := db.Spec.Backup
	if b == nil || (b.Enabled != nil && !*b.Enabled) {
		return nil
	}
	dest := b.Destination.DeepCopy()
	if dest.Prefix == "" {
		// Each Database's dumps in their own folder: retention and
		// "latest" work per folder, and every Database's database is
		// "app" by default.
		dest.Prefix = db.Namespace + "/" + db.Name
	}
	return &v1alpha1.Backup{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Backup"},
		ObjectMeta: metav1.ObjectMeta{
			Name: db.BackupName(), Namespace: db.Namespace,
			Labels: Labels(db), OwnerReferences: []metav1.OwnerReference{controllerRef(db)},
		},
		Spec: v1alpha1.BackupSpec{
			Source: v1alpha1.BackupSource{
				Type:        db.SourceType(),
				DatabaseRef: &corev1.LocalObjectReference{Name: db.Name},
			},
			Destination: *dest,
			Schedule:    b.Schedule,
			TimeZone:    b.TimeZone,
			Retention:   b.Retention.DeepCopy(),
		},
	}
}

// BootstrapRestore is the Restore that loads spec.bootstrap.fromBackup into
// the Database, or nil without one. It never overwrites: the new Database
// is empty.
func BootstrapRestore(db *v1alpha1.Database) *v1alpha1.Restore {
	if db.Spec.Bootstrap == nil {
		return nil
	}
	l := Labels(db)
	l[v1alpha1.LabelBootstrapFor] = db.Name
	return &v1alpha1.Restore{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Restore"},
		ObjectMeta: metav1.ObjectMeta{
			Name: db.BootstrapRestoreName(), Namespace: db.Namespace,
			Labels: l, OwnerReferences: []metav1.OwnerReference{controllerRef(db)},
		},
		Spec: v1alpha1.RestoreSpec{
			Source: *db.Spec.Bootstrap.FromBackup.DeepCopy(),
			Target: v1alpha1.RestoreTarget{
				Type:        db.SourceType(),
				DatabaseRef: &corev1.LocalObjectReference{Name: db.Name},
			},
		},
	}
}

// reconcileBootstrap creates the bootstrap Restore once an instance is
// ready, and reads it until it succeeded. It returns nil when there is no
// bootstrap to wait for: none asked, or done.
func (r *Reconciler) reconcileBootstrap(ctx context.Context, db *v1alpha1.Database, applier apply.Applier,
	sts *appsv1.StatefulSet) (*bootstrapState, *conditions.Problem, error) {
	desired := BootstrapRestore(db)
	if desired == nil || bootstrapped(db) {
		return nil, nil, nil
	}
	state := &bootstrapState{}
	if db.Status.BootstrapRestore == "" && sts.Status.ReadyReplicas < 1 {
		// The restore needs a running server to connect to.
		return state, nil, nil
	}
	rs := &v1alpha1.Restore{}
	if p, err := conditions.Split(r.applyChild(ctx, db, applier, child{apply.Typed{Object: desired}, rs})); p != nil || err != nil {
		return state, p, err
	}
	state.restore = rs
	return state, nil, nil
}

// reconcileBackup applies the Backup that spec.backup asks for, once the
// Database has been Ready (an earlier Backup would dump an empty or
// half-restored database), and deletes it when spec.backup no longer asks
// for it. It returns the live Backup, or nil.
func (r *Reconciler) reconcileBackup(ctx context.Context, db *v1alpha1.Database, applier apply.Applier) (*v1alpha1.Backup, *conditions.Problem, error) {
	live := &v1alpha1.Backup{}
	if err := r.get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.BackupName()}, live); err != nil {
		return nil, nil, err
	}
	desired := Backup(db)
	if desired == nil {
		return nil, nil, applier.Delete(ctx, live, db.UID)
	}
	if live.UID == "" && !isReady(db) {
		return nil, nil, nil
	}
	if p, err := conditions.Split(r.applyChild(ctx, db, applier, child{apply.Typed{Object: desired}, live})); p != nil || err != nil {
		return nil, p, err
	}
	return live, nil, nil
}

// isReady reports whether the Database's Ready condition holds.
func isReady(db *v1alpha1.Database) bool {
	return meta.IsStatusConditionTrue(db.Status.Conditions, v1alpha1.ConditionReady)
}

// bootstrapped reports whether the bootstrap restore succeeded. It is read
// from the status, so that the Restore may be deleted afterwards.
func bootstrapped(db *v1alpha1.Database) bool {
	return meta.IsStatusConditionTrue(db.Status.Conditions, v1alpha1.ConditionBootstrapped)
}
