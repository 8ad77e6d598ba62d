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

package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deployment(want int32, gen int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: new(want)},
		Status:     st,
	}
}

func TestOfDeployment(t *testing.T) {
	progressing := func(status corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: reason + " message"}
	}
	tests := []struct {
		name                         string
		dep                          *appsv1.Deployment
		rolledOut, healthy, complete bool
		failure                      string
	}{
		{"not observed yet", deployment(2, 3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
			false, false, false, ""},
		{"rolled out and available", deployment(2, 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionTrue, deploymentNewRSAvailable)}}),
			true, true, true, ""},
		{"an old pod is still there", deployment(2, 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3}),
			false, false, false, ""},
		{"rolled out, one pod not ready", deployment(2, 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1}),
			true, false, false, ""},
		{"progress deadline passed", deployment(2, 3, appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{progressing(corev1.ConditionFalse, "ProgressDeadlineExceeded")}}),
			false, false, false, "ProgressDeadlineExceeded"},
		{"pods cannot be created", deployment(1, 1, appsv1.DeploymentStatus{ObservedGeneration: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}}),
			false, false, false, "FailedCreate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := OfDeployment(tt.dep)
			if s.RolledOut != tt.rolledOut || s.Healthy != tt.healthy || s.Complete != tt.complete || s.FailureReason != tt.failure || s.Failed() != (tt.failure != "") {
				t.Errorf("got rolledOut %t healthy %t complete %t failure %q; want %t %t %t %q",
					s.RolledOut, s.Healthy, s.Complete, s.FailureReason, tt.rolledOut, tt.healthy, tt.complete, tt.failure)
			}
		})
	}
	if s := OfDeployment(&appsv1.Deployment{}); s.Want != 1 {
		t.Errorf("a Deployment without spec.replicas wants %d pods, want 1", s.Want)
	}
}

func onDelete(sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	sts.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	return sts
}

func TestOfStatefulSet(t *testing.T) {
	sts := func(replicas, updated, ready int32, current, update string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: new(int32(3))},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: ready, CurrentRevision: current, UpdateRevision: update},
		}
	}
	tests := []struct {
		name               string
		sts                *appsv1.StatefulSet
		rolledOut, healthy bool
	}{
		{"rolled out and ready", sts(3, 3, 3, "r2", "r2"), true, true},
		{"no revisions reported", sts(3, 3, 3, "", ""), true, true},
		{"every pod updated, the revision not yet current", sts(3, 3, 2, "r1", "r2"), false, false},
		{"rolled out, a pod lost", sts(3, 3, 2, "r2", "r2"), true, false},
		{"scaling", sts(2, 2, 2, "r2", "r2"), false, false},
		{"on delete: every pod updated, the revision never current", onDelete(sts(3, 3, 3, "r1", "r2")), true, true},
		{"on delete: a pod not yet updated", onDelete(sts(3, 2, 3, "r1", "r2")), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := OfStatefulSet(tt.sts)
			if s.RolledOut != tt.rolledOut || s.Healthy != tt.healthy || s.Complete || s.Failed() {
				t.Errorf("got rolledOut %t healthy %t complete %t failed %t; want %t %t false false",
					s.RolledOut, s.Healthy, s.Complete, s.Failed(), tt.rolledOut, tt.healthy)
			}
		})
	}
}

// TestProgress: the available count is said only while some ready pods are
// not yet available.
func TestProgress(t *testing.T) {
	for _, c := range []struct {
		s    State
		want string
	}{
		{State{Want: 3, Updated: 2, Ready: 1, Available: 1}, "2 of 3 pods updated, 1 ready"},
		{State{Want: 3, Updated: 3, Ready: 3, Available: 2}, "3 of 3 pods updated, 3 ready, 2 available"},
	} {
		if got := c.s.Progress("pods"); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}
