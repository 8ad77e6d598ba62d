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
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// observed is what a reconcile saw of a Database's children.
type observed struct {
	// statefulSet is nil when it does not exist yet.
	statefulSet *appsv1.StatefulSet
	// storage is the state of volume expansion, nil when nothing grows.
	storage *storageState
	// blocked is set when a version change is refused.
	blocked *conditions.Problem
	// problem is something the user must fix, or a failing request.
	problem *conditions.Problem
	// bootstrap is the bootstrap restore, nil when none is pending.
	bootstrap *bootstrapState
	// backup is the Backup that spec.backup asks for, nil when none exists.
	backup *v1alpha1.Backup
	// stuck is an instance's pod that has been unable to start for the
	// stuck pod timeout, or nil.
	stuck *stuckpods.Problem
	// recheck is when a pod that cannot start reaches that timeout, or 0.
	recheck time.Duration
}

// bootstrapState is the restore of spec.bootstrap.fromBackup.
type bootstrapState struct {
	// restore is nil until an instance is ready and the Restore is created.
	restore *v1alpha1.Restore
}

// storageState counts volumes that are smaller than spec.storage.size.
type storageState struct {
	// growing volumes have been asked to grow and have not yet.
	growing int
	problem *conditions.Problem
}

// validate checks what admission cannot: the engine's own rules, of which
// the CRD's validation covers the common cases.
func validate(db *v1alpha1.Database, eng engine.Engine) *conditions.Problem {
	var controlled []string
	for k := range db.Spec.Parameters {
		if eng.Controlled(k) {
			controlled = append(controlled, k)
		}
	}
	if len(controlled) > 0 {
		return &conditions.Problem{Reason: v1alpha1.ReasonInvalidParameters,
			Message: fmt.Sprintf("parameters %s are set by Steward and cannot be overridden", strings.Join(slices.Sorted(slices.Values(controlled)), ", "))}
	}
	major := Major(db.Spec.Engine, db.Spec.Version)
	for _, v := range eng.Versions() {
		if Major(db.Spec.Engine, v) == major {
			return nil
		}
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonInvalidSpec,
		Message: fmt.Sprintf("%s version %s is not supported; supported: %s", db.Spec.Engine, db.Spec.Version, strings.Join(eng.Versions(), ", "))}
}

// upgradeBlocked refuses a change of major version: the data files of one
// major cannot be opened by the next. The running version is the one the
// StatefulSet was last applied with.
func upgradeBlocked(db *v1alpha1.Database, sts *appsv1.StatefulSet) *conditions.Problem {
	if sts == nil {
		return nil
	}
	running := sts.Annotations[v1alpha1.AnnotationVersion]
	if running == "" || Major(db.Spec.Engine, running) == Major(db.Spec.Engine, db.Spec.Version) {
		return nil
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonUpgradeBlocked, Message: fmt.Sprintf(
		"Version %s runs; %s is a new major version, which cannot be upgraded in place. "+
			"Take a backup, create a new Database with version %s and spec.bootstrap.fromBackup naming it, "+
			"then move the applications over; or set spec.version back to %s. Nothing was changed.",
		running, db.Spec.Version, db.Spec.Version, running)}
}

// computeStatus derives a Database's status from its spec, its previous
// status and its children. It is pure.
func computeStatus(db *v1alpha1.Database, obs observed) v1alpha1.DatabaseStatus {
	st := *db.Status.DeepCopy()
	gen := db.Generation
	want := Replicas(db)
	st.Endpoint = Endpoint(db)
	st.ReadEndpoint = ReadEndpoint(db)
	st.CredentialsSecret = db.CredentialsName()
	storage := db.Spec.StorageSize()
	if sts := obs.statefulSet; sts != nil {
		// Volumes never shrink: a preset changed to a smaller one, or a
		// size set below the preset's, leaves them as they are.
		if created := templateClaimSize(sts, storage); created.Cmp(storage) > 0 {
			storage = created
		}
		st.Replicas = sts.Status.Replicas
		st.ReadyReplicas = sts.Status.ReadyReplicas
		st.Primary = db.PrimaryPod()
		if st.Version == "" {
			st.Version = sts.Annotations[v1alpha1.AnnotationVersion]
		}
	}

	st.StorageSize = &storage
	if b := obs.backup; b != nil && b.Status.LastBackup != nil {
		st.LastBackup = b.Status.LastBackup.DeepCopy()
	}

	if b := obs.blocked; b != nil {
		st.ObservedGeneration = gen
		st.Phase = v1alpha1.DatabaseBlocked
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionUpgradeBlocked, conditions.True(b.Reason, b.Message))
		conditions.Set(&st.Conditions, gen,
			conditions.False(b.Reason, b.Message),
			conditions.False(b.Reason, b.Message),
			conditions.True(b.Reason, b.Message))
		return st
	}
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionUpgradeBlocked, conditions.False(v1alpha1.ReasonNoUpgradePending, ""))

	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(p.Reason, p.Message),
			conditions.False(p.Reason, p.Message),
			conditions.True(p.Reason, p.Message))
		return st
	}
	st.ObservedGeneration = gen

	sts := obs.statefulSet
	if sts == nil {
		st.Phase = v1alpha1.DatabasePending
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonCreating, "Waiting for the StatefulSet to be created"),
			conditions.True(v1alpha1.ReasonCreating, "Creating the StatefulSet"),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}

	if done := bootstrapStatus(&st, gen, obs.bootstrap); !done {
		return st
	}

	s := rollout.OfStatefulSet(sts)
	rolledOut := s.RolledOut && s.Want == want
	growing := obs.storage != nil && obs.storage.growing > 0
	progress := fmt.Sprintf("%d of %d instances updated, %d ready", s.Updated, want, s.Ready)
	switch {
	case rolledOut && s.Healthy && !growing:
		st.Phase = v1alpha1.DatabaseRunning
		st.Version = db.Spec.Version
		conditions.Set(&st.Conditions, gen,
			conditions.True(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d instances ready", s.Ready, want)),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.False(v1alpha1.ReasonHealthy, ""))
	case obs.stuck != nil:
		// A pod that cannot start says more than "0 of 1 ready".
		p := obs.stuck
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(p.Reason, p.Message),
			conditions.False(p.Reason, p.Message),
			conditions.True(p.Reason, p.Message))
	case rolledOut && s.Ready < want && everReady(db):
		// Every instance runs the current spec, yet some are not ready:
		// they crashed or fail their probes.
		msg := fmt.Sprintf("%d of %d instances ready", s.Ready, want)
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonUnavailable, msg),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.True(v1alpha1.ReasonUnavailable, msg))
	default:
		reason := v1alpha1.ReasonCreating
		st.Phase = v1alpha1.DatabaseCreating
		if everReady(db) {
			st.Phase = v1alpha1.DatabaseUpdating
			switch {
			case rolledOut && growing:
				reason = v1alpha1.ReasonExpandingStorage
				size := db.Spec.StorageSize()
				progress = fmt.Sprintf("%d volumes growing to %s", obs.storage.growing, size.String())
			case s.Replicas != want || (sts.Spec.Replicas != nil && *sts.Spec.Replicas != s.Replicas):
				reason = v1alpha1.ReasonScaling
			default:
				reason = v1alpha1.ReasonRollingOut
			}
		}
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, progress),
			conditions.True(reason, progress),
			conditions.False(v1alpha1.ReasonHealthy, ""))
	}
	return st
}

// bootstrapStatus sets the Bootstrapped condition, and the phase and
// conditions of a Database that waits for its bootstrap restore. It reports
// whether the rest of the status can be computed as usual: no restore is
// pending, or the StatefulSet is still starting its first instance.
func bootstrapStatus(st *v1alpha1.DatabaseStatus, gen int64, b *bootstrapState) bool {
	if b == nil {
		return true
	}
	rs := b.restore
	if rs == nil {
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBootstrapped,
			conditions.False(v1alpha1.ReasonWaitingForInstance, "Waiting for an instance to be ready to restore spec.bootstrap.fromBackup into"))
		return true
	}
	st.BootstrapRestore = rs.Name
	switch rs.Status.Phase {
	case v1alpha1.RestoreSucceeded:
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBootstrapped,
			conditions.True(v1alpha1.ReasonRestored, fmt.Sprintf("Restore %s restored %s", rs.Name, rs.Status.Object)))
		return true
	case v1alpha1.RestoreFailed:
		msg := fmt.Sprintf("Restore %s of spec.bootstrap.fromBackup failed: %s", rs.Name, rs.Status.Message)
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBootstrapped, conditions.False(v1alpha1.ReasonBootstrapFailed, msg))
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonBootstrapFailed, msg),
			conditions.False(v1alpha1.ReasonBootstrapFailed, msg),
			conditions.True(v1alpha1.ReasonBootstrapFailed, msg))
		return false
	}
	phase := rs.Status.Phase
	if phase == "" {
		phase = v1alpha1.RestorePending
	}
	msg := fmt.Sprintf("Restoring spec.bootstrap.fromBackup with Restore %s (%s); the Database is Ready after it", rs.Name, phase)
	st.Phase = v1alpha1.DatabaseCreating
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionBootstrapped, conditions.False(v1alpha1.ReasonRestoring, msg))
	conditions.Set(&st.Conditions, gen,
		conditions.False(v1alpha1.ReasonCreating, msg),
		conditions.True(v1alpha1.ReasonRestoring, msg),
		conditions.False(v1alpha1.ReasonHealthy, ""))
	return false
}

// everReady reports whether the Database has been Ready once. A Database
// whose bootstrap restore failed never was.
func everReady(db *v1alpha1.Database) bool {
	c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	return conditions.EverTrue(db.Status.Conditions, v1alpha1.ConditionReady, v1alpha1.ReasonCreating) &&
		(c.Status == metav1.ConditionTrue || c.Reason != v1alpha1.ReasonBootstrapFailed)
}

// announce emits events and metrics for the transition from the current
// status to next.
func (r *Reconciler) announce(db *v1alpha1.Database, next *v1alpha1.DatabaseStatus) {
	prev := &db.Status
	if prev.Phase == next.Phase {
		if next.Phase == v1alpha1.DatabaseDegraded {
			r.announceStuckPods(db, next)
		}
		return
	}
	ready := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady)
	switch next.Phase {
	case v1alpha1.DatabaseRunning:
		if !everReady(db) {
			metrics.ObserveFirstReady("Database", db.CreationTimestamp.Time)
		}
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, v1alpha1.EventAvailable, "Deploy",
			"Database %s %s is available at %s: %s", db.Spec.Engine, next.Version, next.Endpoint, ready.Message)
	case v1alpha1.DatabaseDegraded, v1alpha1.DatabaseBlocked:
		degraded := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
		r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, degraded.Reason, "Deploy", "%s", degraded.Message)
	case v1alpha1.DatabaseUpdating:
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, ready.Reason, "Deploy", "%s", ready.Message)
	}
}

// announceStuckPods emits a Warning event when a Database that is Degraded
// already is found to have a pod that cannot start, or a different such
// cause: the phase does not change, the reason does.
func (r *Reconciler) announceStuckPods(db *v1alpha1.Database, next *v1alpha1.DatabaseStatus) {
	prev := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionDegraded)
	degraded := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionDegraded)
	if degraded == nil || !stuckpods.IsReason(degraded.Reason) || (prev != nil && prev.Reason == degraded.Reason) {
		return
	}
	r.Recorder.Eventf(db, nil, corev1.EventTypeWarning, degraded.Reason, "Deploy", "%s", degraded.Message)
}
