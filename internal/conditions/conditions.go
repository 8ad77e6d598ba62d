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

// Package conditions sets the kstatus condition triple every Steward kind
// reports: Ready summarizes, Progressing and Degraded explain.
package conditions

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Cond is the status, reason and message of one condition.
type Cond struct {
	Status          metav1.ConditionStatus
	Reason, Message string
}

// True is a condition that holds.
func True(reason, msg string) Cond { return Cond{metav1.ConditionTrue, reason, msg} }

// False is a condition that does not hold.
func False(reason, msg string) Cond { return Cond{metav1.ConditionFalse, reason, msg} }

// Set sets Ready, Progressing and Degraded in one go, so no code path can
// forget one of them, and Reconciling and Stalled from them, for kstatus:
//   - Stalled is Degraded when Degraded holds for a reason the user must
//     act on (an invalid spec, a missing reference, a pod that cannot
//     start, a final failure);
//   - Reconciling is Progressing when that holds, or Degraded when Degraded
//     holds for a reason Steward gets over by itself (a failed request it
//     retries, pods that became unavailable).
//
// Conditions keep their transition time when their status does not change.
func Set(conds *[]metav1.Condition, gen int64, ready, progressing, degraded Cond) {
	SetOne(conds, gen, v1alpha1.ConditionReady, ready)
	SetOne(conds, gen, v1alpha1.ConditionProgressing, progressing)
	SetOne(conds, gen, v1alpha1.ConditionDegraded, degraded)
	transient := degraded.Status == metav1.ConditionTrue && transientReasons[degraded.Reason]
	reconciling, stalled := False(v1alpha1.ReasonReconciled, ""), False(v1alpha1.ReasonHealthy, "")
	switch {
	case progressing.Status == metav1.ConditionTrue:
		reconciling = progressing
	case transient:
		reconciling = degraded
	case degraded.Status == metav1.ConditionTrue:
		stalled = degraded
	}
	if transient {
		stalled = False(degraded.Reason, "Steward retries by itself")
	}
	SetOne(conds, gen, v1alpha1.ConditionReconciling, reconciling)
	SetOne(conds, gen, v1alpha1.ConditionStalled, stalled)
}

// transientReasons are the Degraded reasons that need no user: Steward
// retries the request, or the pods come back.
var transientReasons = map[string]bool{
	v1alpha1.ReasonReconcileError: true,
	v1alpha1.ReasonUnavailable:    true,
}

// SetOne sets one condition of type t.
func SetOne(conds *[]metav1.Condition, gen int64, t string, c Cond) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: t, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: gen,
	})
}

// EverTrue reports whether the condition of type t has been True: it is
// True now, or False for another reason than neverReason.
func EverTrue(conds []metav1.Condition, t, neverReason string) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason != neverReason)
}

// Problem is why an object cannot reach its desired state: a condition
// reason and a message, for something the user must fix or a request that
// failed.
type Problem struct {
	Reason, Message string
}

// SetProblem sets Ready False, Progressing False and Degraded True, all
// with the problem's reason and message: the object cannot move on until
// the problem is gone.
func SetProblem(conds *[]metav1.Condition, gen int64, p Problem) {
	Set(conds, gen, False(p.Reason, p.Message), False(p.Reason, p.Message), True(p.Reason, p.Message))
}

// TrueFor is how long the condition of type t has been True in conds at
// now, or zero when it is not True.
func TrueFor(conds []metav1.Condition, t string, now time.Time) time.Duration {
	if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionTrue {
		return now.Sub(c.LastTransitionTime.Time)
	}
	return 0
}

// ProblemError carries a Problem through an error return, for work that
// runs in steps returning only errors (apply.Together).
type ProblemError struct{ Problem }

// Error is the problem's message.
func (e *ProblemError) Error() string { return e.Message }

// Split returns the problem err carries, or err itself when it carries none.
func Split(err error) (*Problem, error) {
	var pe *ProblemError
	if errors.As(err, &pe) {
		return &pe.Problem, nil
	}
	return nil, err
}
