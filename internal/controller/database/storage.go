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
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/metrics"
)

// storagePollInterval is how often the instances' volume usage is read
// at least, with spec.storage.autoGrow: a volume filling at 10 MiB/s
// gains 100 MiB in between, which the threshold must leave room for.
const storagePollInterval = 10 * time.Second

// storageState is what a reconcile saw and did of the volumes.
type storageState struct {
	// size is the size every volume asks for: spec.storage.size (or the
	// preset's), or more when the volumes were created or grown larger.
	size resource.Quantity
	// growing volumes have been asked to grow and have not yet.
	growing int
	// fileSystemPending of them wait for their file system to be resized,
	// which some drivers do only when the pod starts again.
	fileSystemPending int
	// growth is the decision of spec.storage.autoGrow; nil without it or
	// while earlier growth is still pending.
	growth *v1alpha1.StorageGrowth
	// problem is something the user must fix.
	problem *conditions.Problem
}

// volumeUsage records an instance's report of its data volume in its
// status (whole MiB, so that the status does not change at every write)
// and in the steward_database_volume_used_ratio metric.
func volumeUsage(db *v1alpha1.Database, in *v1alpha1.DatabaseInstance, v *instance.Volume) {
	if v == nil || v.CapacityBytes <= 0 {
		return
	}
	const mib = 1 << 20
	used, capacity := v.UsedBytes/mib*mib, v.CapacityBytes/mib*mib
	in.VolumeUsedBytes, in.VolumeCapacityBytes = &used, &capacity
	metrics.VolumeUsedRatio.WithLabelValues(db.Namespace, db.Name, in.Name).Set(float64(v.UsedBytes) / float64(v.CapacityBytes))
}

// usages are the volume usages the instances reported.
func usages(instances []v1alpha1.DatabaseInstance) []v1alpha1.VolumeUsage {
	var out []v1alpha1.VolumeUsage
	for _, in := range instances {
		if in.VolumeUsedBytes != nil && in.VolumeCapacityBytes != nil {
			out = append(out, v1alpha1.VolumeUsage{Instance: in.Name, UsedBytes: *in.VolumeUsedBytes, CapacityBytes: *in.VolumeCapacityBytes})
		}
	}
	return out
}

// overThreshold reports whether any reported volume is used to the
// autoGrow threshold or more.
func overThreshold(a *v1alpha1.DatabaseAutoGrow, volumes []v1alpha1.VolumeUsage) bool {
	for _, v := range volumes {
		if v.UsedPercent() >= float64(a.Threshold()) {
			return true
		}
	}
	return false
}

// reportedCapacity is the capacity the instance of a data volume claim
// reported, 0 when it reported none.
func reportedCapacity(claim string, volumes []v1alpha1.VolumeUsage) int64 {
	for _, v := range volumes {
		if claimName(v.Instance) == claim {
			return v.CapacityBytes
		}
	}
	return 0
}

// predatesGrowth returns an instance whose report of its volume was read
// before its claim last grew (v1alpha1.ReportPredatesGrowth), or "".
func predatesGrowth(claims []corev1.PersistentVolumeClaim, volumes []v1alpha1.VolumeUsage) string {
	for _, v := range volumes {
		for i := range claims {
			if claims[i].Name == claimName(v.Instance) &&
				v1alpha1.ReportPredatesGrowth(v.CapacityBytes, claims[i].Annotations[v1alpha1.AnnotationGrownFromCapacity]) {
				return v.Instance
			}
		}
	}
	return ""
}

// claimName is the data volume claim of an instance's pod.
func claimName(pod string) string {
	return dataVolume + "-" + pod
}

// volumeClaims lists the data volume claims of the Database's instances,
// from the cache, leaving out those being deleted.
func (r *Reconciler) volumeClaims(ctx context.Context, db *v1alpha1.Database) ([]corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(db.Namespace), client.MatchingLabels(SelectorLabels(db))); err != nil {
		return nil, fmt.Errorf("listing volume claims: %w", err)
	}
	claims := list.Items[:0]
	for _, pvc := range list.Items {
		if isInstanceClaim(db, pvc.Name) && pvc.DeletionTimestamp.IsZero() {
			claims = append(claims, pvc)
		}
	}
	return claims, nil
}

// storageSize is the size every volume asks for: spec.storage.size (or
// the preset's), or the StatefulSet's claim template or the largest claim
// when larger, as volumes never shrink.
func storageSize(db *v1alpha1.Database, sts *appsv1.StatefulSet, claims []corev1.PersistentVolumeClaim) resource.Quantity {
	size := db.Spec.StorageSize()
	if sts != nil {
		if t := templateClaimSize(sts, size); t.Cmp(size) > 0 {
			size = t
		}
	}
	for _, pvc := range claims {
		if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(size) > 0 {
			size = q
		}
	}
	return size
}

// resizePending reports whether a claim asked for more than it has, and
// whether its file system waits to be resized.
func resizePending(pvc *corev1.PersistentVolumeClaim) (pending, fileSystem bool) {
	for _, c := range pvc.Status.Conditions {
		if c.Type == corev1.PersistentVolumeClaimFileSystemResizePending && c.Status == corev1.ConditionTrue {
			return true, true
		}
	}
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	return ok && capacity.Cmp(requested) < 0, false
}

// growVolumes makes every bound volume of the Database ask for the
// storage size: spec.storage.size, or with spec.storage.autoGrow the next
// size once a volume is used past the threshold. Each claim is patched;
// the StatefulSet's claim template, which cannot change, is brought up to
// the size by deleting the StatefulSet with its pods orphaned and creating
// it again (recreateForTemplate).
func (r *Reconciler) growVolumes(ctx context.Context, db *v1alpha1.Database, sts *appsv1.StatefulSet, claims []corev1.PersistentVolumeClaim, reported []v1alpha1.DatabaseInstance) (*storageState, error) {
	state := &storageState{size: storageSize(db, sts, claims)}
	bound := claims[:0:0]
	for _, pvc := range claims {
		// Only a bound claim can grow; a pending one is looked at again
		// when it binds.
		if pvc.Status.Phase == corev1.ClaimBound {
			bound = append(bound, pvc)
		}
	}
	class := db.Spec.Storage.StorageClassName
	if len(bound) > 0 {
		class = bound[0].Spec.StorageClassName
	}
	expandable := func() (bool, error) {
		if class == nil {
			return false, nil
		}
		return r.expansionAllowed(ctx, *class)
	}

	pending := false
	for i := range bound {
		if p, _ := resizePending(&bound[i]); p {
			pending = true
		}
	}
	volumes := usages(reported)
	if auto := db.Spec.Storage.AutoGrow; auto != nil && len(bound) > 0 && !pending {
		// Growth still pending reports the old usage: decided again once
		// done, and once every instance has reported the grown volume.
		if stale := predatesGrowth(bound, volumes); stale != "" {
			state.growth = &v1alpha1.StorageGrowth{Next: state.size.DeepCopy(), Reason: v1alpha1.ReasonNoUsageReported,
				Message: fmt.Sprintf("%s has not reported its volume since it grew to %s; the next decision waits for that report", stale, state.size.String())}
		} else if err := r.decideGrowth(db, state, volumes, expandable); err != nil {
			return nil, err
		}
	}

	allowed := map[string]bool{}
	for i := range bound {
		pvc := &bound[i]
		requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if requested.Cmp(state.size) >= 0 {
			if p, fs := resizePending(pvc); p {
				state.growing++
				if fs {
					state.fileSystemPending++
				}
			}
			continue
		}
		name := ""
		if pvc.Spec.StorageClassName != nil {
			name = *pvc.Spec.StorageClassName
		}
		ok, known := allowed[name]
		if !known {
			var err error
			if ok, err = r.expansionAllowed(ctx, name); err != nil {
				return nil, err
			}
			allowed[name] = ok
		}
		if !ok {
			state.problem = &conditions.Problem{Reason: v1alpha1.ReasonExpansionNotSupported, Message: fmt.Sprintf(
				"volume %s cannot grow from %s to %s: storage class %q does not allow volume expansion",
				pvc.Name, requested.String(), state.size.String(), name)}
			return state, nil
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}},"spec":{"resources":{"requests":{"storage":%q}}}}`,
			v1alpha1.AnnotationGrownFromCapacity, strconv.FormatInt(reportedCapacity(pvc.Name, volumes), 10), state.size.String())
		if err := r.Client.Patch(ctx, pvc, client.RawPatch(client.Merge.Type(), patch)); err != nil {
			return nil, fmt.Errorf("growing volume %s to %s: %w", pvc.Name, state.size.String(), err)
		}
		state.growing++
	}
	if err := r.recreateForTemplate(ctx, sts, state.size); err != nil {
		return nil, err
	}
	return state, nil
}

// decideGrowth makes spec.storage.autoGrow's decision on the reported
// volumes into state, and announces a growth once.
func (r *Reconciler) decideGrowth(db *v1alpha1.Database, state *storageState, volumes []v1alpha1.VolumeUsage, expandable func() (bool, error)) error {
	ok := true
	if overThreshold(db.Spec.Storage.AutoGrow, volumes) {
		var err error
		if ok, err = expandable(); err != nil {
			return err
		}
	}
	d := db.Spec.Storage.GrowDecision(state.size, volumes, ok)
	state.growth = &d
	if d.Grow {
		state.size = d.Next
		mem := r.memoryOf(db.UID)
		mem.mu.Lock()
		announce := mem.grownTo != d.Next.String()
		mem.grownTo = d.Next.String()
		mem.mu.Unlock()
		if announce {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventStorageGrowing, "Grow", "%s", d.Message)
		}
	}
	return nil
}

// recreateForTemplate brings the StatefulSet's claim template up to size,
// for the instances it creates later: the template cannot change, so the
// StatefulSet is deleted with its pods, claims and revisions orphaned, and
// the next reconcile creates it again with the same pod template and the
// new claim template. The new StatefulSet adopts the pods; as their
// template, and so their revision, is the same, none restarts. It waits
// for the StatefulSet to have rolled out its current revision: a rollout
// under way is left to finish first.
func (r *Reconciler) recreateForTemplate(ctx context.Context, sts *appsv1.StatefulSet, size resource.Quantity) error {
	if sts == nil || sts.UID == "" || !sts.DeletionTimestamp.IsZero() {
		return nil
	}
	if t := templateClaimSize(sts, size); t.Cmp(size) >= 0 {
		return nil
	}
	s := sts.Status
	if s.ObservedGeneration < sts.Generation || s.UpdateRevision == "" || s.CurrentRevision != s.UpdateRevision {
		return nil // a rollout is under way; its end brings another reconcile
	}
	uid := sts.UID
	err := r.Client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &uid})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting StatefulSet %s, its pods orphaned, to grow its claim template to %s: %w", sts.Name, size.String(), err)
	}
	from := templateClaimSize(sts, size)
	ctrl.LoggerFrom(ctx).Info("Deleted the StatefulSet with its pods orphaned, to create it again with the larger claim template",
		"statefulSet", sts.Name, "from", from.String(), "to", size.String())
	return nil
}

// isInstanceClaim reports whether a claim is the data volume of one of the
// Database's instances: data-<name>-<ordinal>.
func isInstanceClaim(db *v1alpha1.Database, claim string) bool {
	pod, ok := strings.CutPrefix(claim, dataVolume+"-")
	return ok && isInstancePod(db, pod)
}

// expansionAllowed reads the storage class; classes are read rarely, only
// when a volume must grow, so they are not cached.
func (r *Reconciler) expansionAllowed(ctx context.Context, class string) (bool, error) {
	if class == "" {
		return false, nil
	}
	sc := &storagev1.StorageClass{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: class}, sc)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading storage class %s: %w", class, err)
	}
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, nil
}
