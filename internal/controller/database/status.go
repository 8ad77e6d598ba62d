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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
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
	// recheck is when to look again: a pod that cannot start reaches that
	// timeout, a role change goes on, a lease needs renewing; or 0.
	recheck time.Duration
	// roles is what the instances reported and the role decisions; nil
	// until the pods were listed.
	roles *roleState
}

// bootstrapState is the restore of spec.bootstrap.fromBackup.
type bootstrapState struct {
	// restore is nil until an instance is ready and the Restore is created.
	restore *v1alpha1.Restore
}

// computeStatus derives a Database's status from its spec, its previous
// status and its children. It is pure.
func computeStatus(db *v1alpha1.Database, obs observed) v1alpha1.DatabaseStatus {
	st := *db.Status.DeepCopy()
	gen := db.Generation
	observedFields(db, obs, &st)

	// The generation was looked at, even when it cannot be used: the
	// conditions say why, for this generation.
	st.ObservedGeneration = gen
	storageGrowthStatus(db, obs.storage, &st)
	if b := obs.blocked; b != nil {
		st.Phase = v1alpha1.DatabaseBlocked
		conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionUpgradeBlocked, conditions.True(b.Reason, b.Message))
		conditions.SetProblem(&st.Conditions, gen, *b)
		return st
	}
	conditions.SetOne(&st.Conditions, gen, v1alpha1.ConditionUpgradeBlocked, conditions.False(v1alpha1.ReasonNoUpgradePending, ""))

	if p := obs.problem; p != nil {
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.SetProblem(&st.Conditions, gen, *p)
		return st
	}

	sts := obs.statefulSet
	if sts == nil {
		st.Phase = v1alpha1.DatabasePending
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonCreating, "Waiting for the StatefulSet to be created"),
			conditions.True(v1alpha1.ReasonCreating, "Creating the StatefulSet"),
			conditions.False(v1alpha1.ReasonHealthy, ""))
		return st
	}
	if done := bootstrapStatus(&st, gen, obs.bootstrap); done {
		rolloutStatus(db, obs, &st)
	}
	return st
}

// observedFields sets the status fields that only report: endpoints, the
// credentials Secret, the volumes' size, instance counts, the primary, the
// running version and the last backup.
func observedFields(db *v1alpha1.Database, obs observed, st *v1alpha1.DatabaseStatus) {
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
	if obs.storage != nil && obs.storage.size.Cmp(storage) > 0 {
		// Grown by storage.autoGrow, or created larger.
		storage = obs.storage.size.DeepCopy()
	}
	st.StorageSize = &storage
	if obs.roles != nil {
		st.Instances = obs.roles.instances
		if obs.roles.primaryServing {
			// Term 1 once a primary served: from then on an empty data
			// directory is lost data, never a first start.
			st.Term = max(st.Term, 1)
		}
	}
	if b := obs.backup; b != nil && b.Status.LastBackup != nil {
		st.LastBackup = b.Status.LastBackup.DeepCopy()
	}
}

// settleDelay holds back the status writes of a new Database during its
// first rollout, which starts with its StatefulSet, the first write
// included (v1alpha1.SettleDelay): most
// Databases get one status write, at Ready. Never held is a change of what
// the status remembers for the operator: the term (after which an empty data
// directory is lost data), a role change, a bootstrap restore.
func settleDelay(db *v1alpha1.Database, sts *appsv1.StatefulSet, next v1alpha1.DatabaseStatus, now time.Time) time.Duration {
	cur := db.Status
	if next.Term != cur.Term || next.BootstrapRestore != cur.BootstrapRestore || !equality.Semantic.DeepEqual(next.RoleChange, cur.RoleChange) {
		return 0
	}
	var stsCreated metav1.Time
	if sts != nil {
		stsCreated = sts.CreationTimestamp
	}
	return v1alpha1.SettleDelay(v1alpha1.FirstRolloutStart(db.CreationTimestamp.Time, stsCreated), v1alpha1.DatabaseFirstRolloutSettle, cur.ObservedGeneration, next.ObservedGeneration,
		cur.Conditions, next.Conditions, now, v1alpha1.ReasonCreating)
}

// rolloutStatus sets the phase and conditions of a Database whose
// StatefulSet exists, from its rollout, its pods and its volumes.
func rolloutStatus(db *v1alpha1.Database, obs observed, st *v1alpha1.DatabaseStatus) {
	gen, want, sts := db.Generation, Replicas(db), obs.statefulSet
	s := rollout.OfStatefulSet(sts)
	rolledOut := s.RolledOut && s.Want == want
	growing := obs.storage != nil && obs.storage.growing > 0
	scaling := db.Status.Phase != v1alpha1.DatabaseDegraded && rollout.ScalingUp(db.Status.ReadyReplicas, s.Ready, want)
	roles := obs.roles
	if roles == nil {
		roles = &roleState{}
	}
	switch {
	case roles.blocked != nil:
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.SetProblem(&st.Conditions, gen, *roles.blocked)
	case st.RoleChange != nil || roles.waiting != "":
		reason, msg := v1alpha1.ReasonFailingOver, roles.waiting
		if c := st.RoleChange; c != nil {
			if c.Type == v1alpha1.RoleChangeSwitchover {
				reason = v1alpha1.ReasonSwitchingOver
			}
			msg = fmt.Sprintf("%s from %s to %s (term %d): %s", c.Type, c.From, c.To, c.Term, c.Reason)
			if roles.waiting != "" {
				msg += "; " + roles.waiting
			}
		}
		st.Phase = v1alpha1.DatabaseUpdating
		conditions.Set(&st.Conditions, gen,
			conditions.False(reason, msg),
			conditions.True(reason, msg),
			conditions.False(v1alpha1.ReasonHealthy, ""))
	case rolledOut && s.Healthy && !growing:
		st.Phase = v1alpha1.DatabaseRunning
		st.Version = db.Spec.Version
		degraded := conditions.False(v1alpha1.ReasonHealthy, "")
		if roles.refused != "" {
			// It serves; the next start reads the refused values too.
			st.Phase = v1alpha1.DatabaseDegraded
			degraded = conditions.True(v1alpha1.ReasonParameterRefused,
				"The servers could not apply settings of spec.parameters when they reloaded them; "+
					"a restart may fail on them: fix or remove them: "+roles.refused)
		}
		conditions.Set(&st.Conditions, gen,
			conditions.True(v1alpha1.ReasonAvailable, fmt.Sprintf("%d/%d instances ready", s.Ready, want)),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			degraded)
	case obs.stuck != nil:
		// A pod that cannot start says more than "0 of 1 ready".
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.SetProblem(&st.Conditions, gen, *obs.stuck)
	case rolledOut && s.Ready < want && everReady(db) && !scaling:
		// Every instance runs the current spec, yet some are not ready:
		// they crashed or fail their probes.
		msg := fmt.Sprintf("%d of %d instances ready", s.Ready, want)
		st.Phase = v1alpha1.DatabaseDegraded
		conditions.Set(&st.Conditions, gen,
			conditions.False(v1alpha1.ReasonUnavailable, msg),
			conditions.False(v1alpha1.ReasonRolloutComplete, ""),
			conditions.True(v1alpha1.ReasonUnavailable, msg))
	default:
		reason, progress := v1alpha1.ReasonCreating, fmt.Sprintf("%d of %d instances updated, %d ready", s.Updated, want, s.Ready)
		st.Phase = v1alpha1.DatabaseCreating
		if everReady(db) {
			st.Phase = v1alpha1.DatabaseUpdating
			switch {
			case rolledOut && growing:
				reason = v1alpha1.ReasonExpandingStorage
				progress = fmt.Sprintf("%d volumes growing to %s", obs.storage.growing, obs.storage.size.String())
				if n := obs.storage.fileSystemPending; n > 0 {
					progress += fmt.Sprintf("; %d wait for their file system to be resized, which their driver does when the pod starts again", n)
				}
			case scaling || s.Replicas != want || s.Want != s.Replicas:
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

// storageGrowthStatus sets the StorageGrowthBlocked condition of a
// Database with spec.storage.autoGrow, and removes it without.
func storageGrowthStatus(db *v1alpha1.Database, s *storageState, st *v1alpha1.DatabaseStatus) {
	if db.Spec.Storage.AutoGrow == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStorageGrowthBlocked)
		return
	}
	if s == nil || s.growth == nil || s.growth.Reason == "" {
		// Not decided this time: growth is pending, or no volume is bound
		// yet (then the condition stays as it was).
		if s != nil && s.growing > 0 {
			conditions.SetOne(&st.Conditions, db.Generation, v1alpha1.ConditionStorageGrowthBlocked,
				conditions.False(v1alpha1.ReasonGrowing, fmt.Sprintf("%d volumes are growing to %s", s.growing, s.size.String())))
		}
		return
	}
	g := s.growth
	c := conditions.False(g.Reason, g.Message)
	if g.Blocked {
		c = conditions.True(g.Reason, g.Message)
	}
	conditions.SetOne(&st.Conditions, db.Generation, v1alpha1.ConditionStorageGrowthBlocked, c)
}
