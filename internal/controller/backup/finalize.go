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

package backup

import (
	"context"
	"fmt"

	"gocloud.dev/gcerrors"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/metrics"
)

// finalize carries out the deletion policy on the stored dumps, then lets
// the Backup go. Retain (the default) keeps them. Delete removes the dumps
// and manifests of this Backup's database under the destination's prefix,
// from the operator, with the destination's credentials; a store the
// operator cannot reach keeps the Backup, with an event saying why, until
// it can or the policy is changed to Retain.
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha1.Backup) error {
	if !controllerutil.ContainsFinalizer(b, v1alpha1.BackupFinalizer) {
		return nil
	}
	if b.Spec.DeletionPolicy == v1alpha1.DeletionDelete {
		n, err := r.deleteDumps(ctx, b)
		if err != nil {
			r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, v1alpha1.ReasonReconcileError, "Delete",
				"Cannot delete the stored dumps as deletionPolicy Delete asks: %v", err)
			return err
		}
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, v1alpha1.EventDumpsDeleted, "Delete",
			"Deleted %d stored dumps, as deletionPolicy Delete asks", n)
	} else {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, v1alpha1.EventDumpsRetained, "Delete",
			"Kept the stored dumps in %s %s, as deletionPolicy Retain asks", b.Spec.Destination.Type, b.Spec.Destination.Bucket)
	}
	metrics.ForgetBackup(b.Namespace, b.Name)
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, v1alpha1.BackupFinalizer)
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer: %w", err)
	}
	return nil
}

// deleteDumps deletes the dumps of the Backup's database under the prefix.
func (r *Reconciler) deleteDumps(ctx context.Context, b *v1alpha1.Backup) (int, error) {
	d := b.Spec.Destination
	if d.Type == v1alpha1.DestinationFile {
		return 0, fmt.Errorf("dumps on volume %s are not reachable from the operator; delete them by hand or set deletionPolicy Retain", volumeName(d))
	}
	creds := map[string][]byte{}
	if ref := d.CredentialsSecretRef; ref != nil {
		s := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ref.Name}, s); err != nil {
			return 0, fmt.Errorf("reading the store's credentials Secret %s: %w", ref.Name, err)
		}
		creds = s.Data
	}
	bucket, err := dump.OpenBucket(ctx, dump.Destination{Type: string(d.Type), Bucket: d.Bucket, Prefix: d.Prefix,
		Endpoint: d.Endpoint, Region: d.Region}, creds)
	if err != nil {
		return 0, fmt.Errorf("opening %s bucket %s: %w", d.Type, d.Bucket, err)
	}
	defer func() { _ = bucket.Close() }()
	entries, err := dump.List(ctx, bucket)
	if err != nil {
		return 0, fmt.Errorf("listing the stored dumps: %w", err)
	}
	name := r.sourceDatabase(ctx, b)
	if name == "" {
		return 0, fmt.Errorf("the dumped database's name is unknown (its Database is gone and no run resolved it), so no dump can be told to be this Backup's; nothing was deleted: set deletionPolicy Retain to let the Backup go")
	}
	db := dump.KeyName(name)
	n := 0
	for _, e := range entries {
		if e.Database != db {
			continue
		}
		for _, key := range []string{e.Key + dump.ManifestSuffix, e.Key} {
			if err := bucket.Delete(ctx, key); err != nil && !notFound(err) {
				return n, fmt.Errorf("deleting %s: %w", key, err)
			}
		}
		n++
	}
	return n, nil
}

// sourceDatabase is the name of the dumped database, or "" when unknown.
func (r *Reconciler) sourceDatabase(ctx context.Context, b *v1alpha1.Backup) string {
	if c := b.Spec.Source.Connection; c != nil {
		return c.Database
	}
	db := &v1alpha1.Database{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Source.DatabaseRef.Name}, db); err == nil {
		return db.Spec.DatabaseName
	}
	return b.Status.SourceDatabase
}

func volumeName(d v1alpha1.BackupDestination) string {
	if d.Volume != nil {
		return d.Volume.Name
	}
	return ""
}

func notFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }
