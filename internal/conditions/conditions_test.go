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

package conditions

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestSetDerivesKstatusConditions checks Reconciling and Stalled, which
// kstatus reads as InProgress and Failed, against Progressing and Degraded.
func TestSetDerivesKstatusConditions(t *testing.T) {
	tests := []struct {
		name                       string
		ready, progressing, degr   Cond
		reconciling, stalled       metav1.ConditionStatus
		reconcilingWhy, stalledWhy string
	}{
		{"ready", True(v1alpha1.ReasonAvailable, "2/2"), False(v1alpha1.ReasonRolloutComplete, ""), False(v1alpha1.ReasonHealthy, ""),
			metav1.ConditionFalse, metav1.ConditionFalse, v1alpha1.ReasonReconciled, v1alpha1.ReasonHealthy},
		{"rolling out", False(v1alpha1.ReasonRollingOut, "1 of 2"), True(v1alpha1.ReasonRollingOut, "1 of 2"), False(v1alpha1.ReasonHealthy, ""),
			metav1.ConditionTrue, metav1.ConditionFalse, v1alpha1.ReasonRollingOut, v1alpha1.ReasonHealthy},
		{"a spec the user must fix", False(v1alpha1.ReasonInvalidSpec, "no"), False(v1alpha1.ReasonInvalidSpec, "no"), True(v1alpha1.ReasonInvalidSpec, "no"),
			metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonReconciled, v1alpha1.ReasonInvalidSpec},
		{"a pod that cannot start", False(v1alpha1.ReasonCrashLooping, "pod"), False(v1alpha1.ReasonCrashLooping, "pod"), True(v1alpha1.ReasonCrashLooping, "pod"),
			metav1.ConditionFalse, metav1.ConditionTrue, v1alpha1.ReasonReconciled, v1alpha1.ReasonCrashLooping},
		{"a request Steward retries", False(v1alpha1.ReasonReconcileError, "timeout"), False(v1alpha1.ReasonReconcileError, "timeout"), True(v1alpha1.ReasonReconcileError, "timeout"),
			metav1.ConditionTrue, metav1.ConditionFalse, v1alpha1.ReasonReconcileError, v1alpha1.ReasonReconcileError},
		{"pods lost after the rollout", False(v1alpha1.ReasonUnavailable, "1 of 2"), False(v1alpha1.ReasonRolloutComplete, ""), True(v1alpha1.ReasonUnavailable, "1 of 2"),
			metav1.ConditionTrue, metav1.ConditionFalse, v1alpha1.ReasonUnavailable, v1alpha1.ReasonUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			Set(&conds, 3, tt.ready, tt.progressing, tt.degr)
			rec := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling)
			st := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled)
			if rec == nil || st == nil || len(conds) != 5 {
				t.Fatalf("conditions %+v: want Ready, Progressing, Degraded, Reconciling and Stalled", conds)
			}
			if rec.Status != tt.reconciling || rec.Reason != tt.reconcilingWhy || st.Status != tt.stalled || st.Reason != tt.stalledWhy {
				t.Errorf("Reconciling %s/%s, Stalled %s/%s; want %s/%s, %s/%s", rec.Status, rec.Reason, st.Status, st.Reason,
					tt.reconciling, tt.reconcilingWhy, tt.stalled, tt.stalledWhy)
			}
			if rec.ObservedGeneration != 3 || st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d and %d, want 3", rec.ObservedGeneration, st.ObservedGeneration)
			}
		})
	}
}
