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
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
)

const mib = 1 << 20

// storageClass creates a StorageClass that allows expansion or not.
func storageClass(t *testing.T, name string, expand bool) {
	t.Helper()
	create(t, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          "example.com/none",
		AllowVolumeExpansion: new(expand),
	})
}

// autoGrowing is a single-instance Database on the class with autoGrow.
func autoGrowing(ns, name, class string, threshold, increment int32, maximum string) *v1alpha1.Database {
	return newDatabase(ns, name, func(db *v1alpha1.Database) {
		db.Spec.Storage.StorageClassName = new(class)
		db.Spec.Storage.AutoGrow = &v1alpha1.DatabaseAutoGrow{
			ThresholdPercent: threshold, IncrementPercent: increment, Maximum: resource.MustParse(maximum)}
	})
}

// reportVolume makes the fake instance report its volume, of capacityMiB
// (what the file system of a claim of that size leaves), used to percent.
func reportVolume(ns, pod string, percent, capacityMiB int64) {
	capacity := capacityMiB * mib
	fakes.set(ns, pod, func(in *fakeInstance) {
		in.report.Role, in.report.Ready = engine.RolePrimary, true
		in.report.Volume = &instance.Volume{UsedBytes: capacity * percent / 100, CapacityBytes: capacity, AvailableBytes: capacity * (100 - percent) / 100}
	})
}

func claimRequest(t *testing.T, ns, name string) resource.Quantity {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := get(t, ns, name, pvc); err != nil {
		t.Fatal(err)
	}
	return pvc.Spec.Resources.Requests[corev1.ResourceStorage]
}

// resized plays the resizer: the claim has what it asks for.
func resized(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := get(t, ns, name, pvc); err != nil {
			return err
		}
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]}
		return k8s.Status().Update(context.Background(), pvc)
	})
}

// collectOrphaned plays the garbage collector on a StatefulSet deleted
// with propagationPolicy Orphan (envtest runs none): it waits for the
// deletion and lets the StatefulSet go.
func collectOrphaned(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		sts := &appsv1.StatefulSet{}
		if err := get(t, ns, name, sts); err != nil {
			return err
		}
		if sts.DeletionTimestamp.IsZero() {
			return fmt.Errorf("StatefulSet %s is not being deleted", name)
		}
		if !strings.Contains(strings.Join(sts.Finalizers, ","), metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("StatefulSet %s is deleted without orphaning its pods: finalizers %v", name, sts.Finalizers)
		}
		sts.Finalizers = nil
		return k8s.Update(context.Background(), sts)
	})
}

// TestAutoGrowGrowsClaimsAndTemplate: an instance reporting its volume
// past the threshold has every claim grow by the increment, the
// StatefulSet deleted with its pods orphaned and created again with the
// larger claim template and the same pod template; the next growth stops
// at the maximum, and past that the StorageGrowthBlocked condition and a
// Warning event say MaximumReached.
func TestAutoGrowGrowsClaimsAndTemplate(t *testing.T) {
	ns := namespace(t)
	storageClass(t, ns+"-grows", true)
	create(t, autoGrowing(ns, "auto", ns+"-grows", 80, 50, "2Gi"))
	reportVolume(ns, "auto-0", 50, 1000)
	fakeInstancePod(t, ns, "auto", "auto-0")
	claim(t, ns, "auto")
	markRolledOut(t, ns, "auto", 1)
	db := waitFor(t, ns, "auto", "Ready with its volume's usage", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionStorageGrowthBlocked)
		return isReady(db) && len(db.Status.Instances) == 1 && db.Status.Instances[0].VolumeUsedBytes != nil &&
			c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonBelowThreshold
	})
	if in := db.Status.Instances[0]; *in.VolumeUsedBytes != 500*mib || *in.VolumeCapacityBytes != 1000*mib {
		t.Errorf("instance status %d of %d bytes used, want %d of %d", *in.VolumeUsedBytes, *in.VolumeCapacityBytes, 500*mib, 1000*mib)
	}
	old := statefulSet(t, ns, "auto")
	pod := &corev1.Pod{}
	if err := get(t, ns, "auto-0", pod); err != nil {
		t.Fatal(err)
	}

	// Past the threshold: 1Gi grows by 50% to 1536Mi.
	reportVolume(ns, "auto-0", 85, 1000)
	eventually(t, func() error {
		if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("1536Mi")) != 0 {
			return fmt.Errorf("the claim requests %s", got.String())
		}
		return nil
	})
	expectEvent(t, ns, "auto", v1alpha1.EventStorageGrowing)
	collectOrphaned(t, ns, "auto")
	var grown *appsv1.StatefulSet
	eventually(t, func() error {
		grown = &appsv1.StatefulSet{}
		if err := get(t, ns, "auto", grown); err != nil {
			return err
		}
		if grown.UID == old.UID {
			return fmt.Errorf("the StatefulSet is still the old one")
		}
		return nil
	})
	if got := grown.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("1536Mi")) != 0 {
		t.Errorf("the new claim template requests %s, want 1536Mi", got.String())
	}
	if !equality.Semantic.DeepEqual(grown.Spec.Template, old.Spec.Template) {
		t.Error("the pod template changed with the claim template: the pods would restart")
	}
	after := &corev1.Pod{}
	if err := get(t, ns, "auto-0", after); err != nil || after.UID != pod.UID || !after.DeletionTimestamp.IsZero() {
		t.Errorf("the pod was deleted or replaced (%v)", err)
	}
	markRolledOut(t, ns, "auto", 1)
	db = waitFor(t, ns, "auto", "the pending resize reported", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionProgressing)
		return db.Status.StorageSize != nil && db.Status.StorageSize.Cmp(resource.MustParse("1536Mi")) == 0 &&
			c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonExpandingStorage
	})
	if msg := condition(db, v1alpha1.ConditionProgressing).Message; !strings.Contains(msg, "1536Mi") {
		t.Errorf("progress message %q does not name the size", msg)
	}
	// No second growth while the first is pending, usage as high as it is.
	if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("1536Mi")) != 0 {
		t.Errorf("grew again before the resize was done: %s", got.String())
	}

	// Resized, but the instance's last report, 85% of 1000 MiB, was read
	// before the file system grew: it grows nothing, and the status says
	// what the decision waits for.
	pvc := &corev1.PersistentVolumeClaim{}
	if err := get(t, ns, "data-auto-0", pvc); err != nil {
		t.Fatal(err)
	}
	if got, want := pvc.Annotations[v1alpha1.AnnotationGrownFromCapacity], fmt.Sprint(1000*mib); got != want {
		t.Errorf("the grown claim's %s = %q, want %s, the capacity reported before it grew", v1alpha1.AnnotationGrownFromCapacity, got, want)
	}
	resized(t, ns, "data-auto-0")
	waitFor(t, ns, "auto", "waiting for a report of the grown volume", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionStorageGrowthBlocked)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonNoUsageReported &&
			strings.Contains(c.Message, "auto-0 has not reported its volume since it grew to 1536Mi")
	})
	if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("1536Mi")) != 0 {
		t.Fatalf("grew again on a report read before the last growth: %s", got.String())
	}

	// The grown file system reported, and still past the threshold: capped
	// at the maximum, 2Gi.
	reportVolume(ns, "auto-0", 85, 1500)
	eventually(t, func() error {
		if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("2Gi")) != 0 {
			return fmt.Errorf("the claim requests %s", got.String())
		}
		return nil
	})
	collectOrphaned(t, ns, "auto")
	eventually(t, func() error {
		sts := &appsv1.StatefulSet{}
		if err := get(t, ns, "auto", sts); err != nil {
			return err
		}
		if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
			return fmt.Errorf("the claim template requests %s", got.String())
		}
		return nil
	})
	markRolledOut(t, ns, "auto", 1)
	resized(t, ns, "data-auto-0")
	reportVolume(ns, "auto-0", 85, 2000)

	// At the maximum: refused, with a reason and a Warning event.
	db = waitFor(t, ns, "auto", "MaximumReached", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionStorageGrowthBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonMaximumReached
	})
	expectEvent(t, ns, "auto", v1alpha1.EventStorageGrowthBlocked)
	if db.Status.StorageSize.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("status.storageSize = %s, want 2Gi", db.Status.StorageSize.String())
	}
	if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("grew past the maximum: %s", got.String())
	}
	waitFor(t, ns, "auto", "Ready again", isReady)

	// A higher maximum lifts the refusal and the volumes grow again.
	update(t, ns, "auto", func(db *v1alpha1.Database) { db.Spec.Storage.AutoGrow.Maximum = resource.MustParse("4Gi") })
	eventually(t, func() error {
		if got := claimRequest(t, ns, "data-auto-0"); got.Cmp(resource.MustParse("3Gi")) != 0 {
			return fmt.Errorf("the claim requests %s", got.String())
		}
		return nil
	})
	waitFor(t, ns, "auto", "growing, not blocked", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionStorageGrowthBlocked)
		return c != nil && c.Status == metav1.ConditionFalse
	})
}

// TestAutoGrowRefusedWhenTheClassCannotExpand: past the threshold on a
// class without allowVolumeExpansion, nothing is patched; the
// StorageGrowthBlocked condition and a Warning event say why, and the
// Database stays Ready (it serves still).
func TestAutoGrowRefusedWhenTheClassCannotExpand(t *testing.T) {
	ns := namespace(t)
	storageClass(t, ns+"-fixed", false)
	create(t, autoGrowing(ns, "fixed", ns+"-fixed", 80, 20, "2Gi"))
	reportVolume(ns, "fixed-0", 90, 1000)
	fakeInstancePod(t, ns, "fixed", "fixed-0")
	claim(t, ns, "fixed")
	markRolledOut(t, ns, "fixed", 1)
	db := waitFor(t, ns, "fixed", "StorageClassCannotExpand", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionStorageGrowthBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonStorageClassCannotExpand
	})
	expectEvent(t, ns, "fixed", v1alpha1.EventStorageGrowthBlocked)
	if msg := condition(db, v1alpha1.ConditionStorageGrowthBlocked).Message; !strings.Contains(msg, "fixed-0") || !strings.Contains(msg, "90%") {
		t.Errorf("message %q does not name the instance and its usage", msg)
	}
	waitFor(t, ns, "fixed", "Ready", isReady)
	if got := claimRequest(t, ns, "data-fixed-0"); got.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("the claim was patched to %s", got.String())
	}
	sts := statefulSet(t, ns, "fixed")
	if !sts.DeletionTimestamp.IsZero() {
		t.Error("the StatefulSet is being deleted")
	}

	// autoGrow removed: so is the condition.
	update(t, ns, "fixed", func(db *v1alpha1.Database) { db.Spec.Storage.AutoGrow = nil })
	waitFor(t, ns, "fixed", "no StorageGrowthBlocked", func(db *v1alpha1.Database) bool {
		return condition(db, v1alpha1.ConditionStorageGrowthBlocked) == nil && db.Status.ObservedGeneration == db.Generation
	})
}
