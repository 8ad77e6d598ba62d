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

// Package rollout reads the state of a Deployment's or a StatefulSet's
// rollout from its spec and status, with one set of rules for every kind
// that owns or restarts workloads.
package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// deploymentNewRSAvailable is the Progressing reason a Deployment reports
// once its newest ReplicaSet finished rolling out.
const deploymentNewRSAvailable = "NewReplicaSetAvailable"

// State is where a workload's rollout stands.
type State struct {
	// Kind and Name name the workload: "Deployment" or "StatefulSet".
	Kind, Name string
	// Want is the desired number of pods: spec.replicas, 1 when unset.
	Want int32
	// Replicas, Updated, Ready and Available are the status' counts.
	Replicas, Updated, Ready, Available int32
	// RolledOut is true when the workload's controller has seen the latest
	// spec, every pod runs the latest template and no other pod is left
	// (for a StatefulSet, its current revision is also its update
	// revision).
	RolledOut bool
	// Healthy is true when the workload is rolled out and Want pods are
	// ready and available.
	Healthy bool
	// Complete is true when a Deployment itself says its latest rollout
	// finished: its newest ReplicaSet is available. A StatefulSet says no
	// such thing (its revisions agree from its creation on), so it is
	// always false for one.
	Complete bool
	// FailureReason and Failure are the workload's own report of a rollout
	// that failed: its progress deadline passed, or it cannot create pods.
	// Both are empty otherwise.
	FailureReason, Failure string
}

// Failed reports whether the workload says its rollout failed.
func (s State) Failed() bool { return s.FailureReason != "" }

// OfDeployment reads a Deployment's rollout.
func OfDeployment(d *appsv1.Deployment) State {
	st := d.Status
	s := State{
		Kind: "Deployment", Name: d.Name, Want: want(d.Spec.Replicas),
		Replicas: st.Replicas, Updated: st.UpdatedReplicas, Ready: st.ReadyReplicas, Available: st.AvailableReplicas,
	}
	s.RolledOut = st.ObservedGeneration >= d.Generation && s.Updated == s.Want && s.Replicas == s.Want
	s.Healthy = s.RolledOut && s.Available >= s.Want && s.Ready >= s.Want
	for _, c := range st.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse,
			c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			if s.FailureReason == "" {
				s.FailureReason, s.Failure = c.Reason, c.Message
			}
		case c.Type == appsv1.DeploymentProgressing && c.Reason == deploymentNewRSAvailable:
			s.Complete = true
		}
	}
	return s
}

// OfStatefulSet reads a StatefulSet's rollout. A StatefulSet reports no
// failure of its own: a pod that cannot start is found by looking at the
// pods.
func OfStatefulSet(sts *appsv1.StatefulSet) State {
	st := sts.Status
	s := State{
		Kind: "StatefulSet", Name: sts.Name, Want: want(sts.Spec.Replicas),
		Replicas: st.Replicas, Updated: st.UpdatedReplicas, Ready: st.ReadyReplicas, Available: st.AvailableReplicas,
	}
	// With OnDelete the StatefulSet controller never moves currentRevision:
	// every pod at the update revision is the whole of the rollout.
	onDelete := sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	s.RolledOut = st.ObservedGeneration >= sts.Generation && s.Replicas == s.Want && s.Updated == s.Want &&
		(st.UpdateRevision == "" || st.CurrentRevision == st.UpdateRevision || onDelete)
	s.Healthy = s.RolledOut && s.Ready >= s.Want
	return s
}

func want(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

// Progress says how far the rollout of a workload of pods called noun
// ("pods", "nodes") has come: updated and ready, and, while some ready ones
// are not yet available (minReadySeconds), how many are.
func (s State) Progress(noun string) string {
	p := fmt.Sprintf("%d of %d %s updated, %d ready", s.Updated, s.Want, noun, s.Ready)
	if s.Available < s.Ready {
		p += fmt.Sprintf(", %d available", s.Available)
	}
	return p
}

// ScalingUp reports whether a workload lacks ready pods only because more
// were asked for: fewer than wanted are ready, but no fewer than were ready
// before the change. A scale-up is progress, not a loss of pods; a new pod
// that never starts is found by looking at the pods.
func ScalingUp(wasReady, ready, want int32) bool {
	return wasReady < want && ready >= wasReady
}
