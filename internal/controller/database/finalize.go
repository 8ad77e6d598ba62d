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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
)

// finalize carries out the deletion policy, then lets the Database go.
// Retain releases the credentials Secrets (removes their owner reference,
// so the garbage collector keeps them) and leaves the volumes, which the
// StatefulSet never owns; a Database created again with the same name
// adopts both. Delete removes the volumes and the Secrets. The Secret a
// user named in spec.credentialsSecretRef is never touched.
func (r *Reconciler) finalize(ctx context.Context, db *v1alpha1.Database) error {
	metrics.ForgetDatabase(db.Namespace, db.Name)
	r.forgetRenewal(db.UID)
	r.memories.Delete(db.UID)
	if !controllerutil.ContainsFinalizer(db, v1alpha1.DatabaseFinalizer) {
		return nil
	}
	claims, err := r.instanceClaims(ctx, db)
	if err != nil {
		return err
	}
	secrets := []string{db.CredentialsName(), db.SuperuserName()}
	if db.Spec.DeletionPolicy == v1alpha1.DeletionDelete {
		for i := range claims {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &claims[i])); err != nil {
				return fmt.Errorf("deleting volume claim %s: %w", claims[i].Name, err)
			}
		}
		for _, name := range secrets {
			s := &corev1.Secret{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, s); err != nil {
				if client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("reading Secret %s: %w", name, err)
				}
				continue
			}
			if !isControlledBy(s, db) {
				continue
			}
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, s)); err != nil {
				return fmt.Errorf("deleting Secret %s: %w", name, err)
			}
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventDataDeleted, "Delete",
			"Deleted %d volumes and the credentials Secrets, as deletionPolicy Delete asks", len(claims))
	} else {
		for _, name := range secrets {
			if err := r.release(ctx, db, &corev1.Secret{}, name); err != nil {
				return err
			}
		}
		for i := range claims {
			if err := r.release(ctx, db, &claims[i], claims[i].Name); err != nil {
				return err
			}
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventDataRetained, "Delete",
			"Kept %d volumes and Secrets %s and %s, as deletionPolicy Retain asks; a Database named %s will adopt them",
			len(claims), secrets[0], secrets[1], db.Name)
	}
	orig := db.DeepCopy()
	controllerutil.RemoveFinalizer(db, v1alpha1.DatabaseFinalizer)
	if err := r.Client.Patch(ctx, db, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}

// instanceClaims lists the Database's data volumes from the API server: the
// cache may lag, and a volume missed here would be lost or leaked.
func (r *Reconciler) instanceClaims(ctx context.Context, db *v1alpha1.Database) ([]corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(db.Namespace), client.MatchingLabels(SelectorLabels(db))); err != nil {
		return nil, fmt.Errorf("listing volume claims: %w", err)
	}
	var claims []corev1.PersistentVolumeClaim
	for _, c := range list.Items {
		if isInstanceClaim(db, c.Name) {
			claims = append(claims, c)
		}
	}
	return claims, nil
}

// release removes every owner reference to the Database, or to anything
// the garbage collector would delete with it, from obj, so that obj
// outlives the Database.
func (r *Reconciler) release(ctx context.Context, db *v1alpha1.Database, obj client.Object, name string) error {
	if obj.GetUID() == "" {
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool {
		return ref.UID == db.UID || ref.Kind == "StatefulSet" || ref.Kind == "Pod"
	})
	if len(kept) == len(refs) {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	obj.SetOwnerReferences(kept)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("releasing %s from the Database: %w", name, err)
	}
	return nil
}
