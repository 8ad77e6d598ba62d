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

package v1alpha1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirstRolloutSettle is how long the status writes of a new object may be
// held back while its first rollout is under way. It is long enough for a
// bulk create of thousands of objects to converge with two status writes
// each, and short enough that a slow first rollout shows its progress soon.
const FirstRolloutSettle = 30 * time.Second

// SettleDelay is how long to hold back a status write of an object created
// at created, from the status it has (currentGen, current) to the one just
// computed (nextGen, next); zero means write now.
//
// inProgress are the reasons of the Ready condition during a first rollout
// (Creating for most kinds). The first status is written at once, so that
// kstatus-aware tools read the object as in progress from its first
// reconcile (without a status they would read it as done). The next is written when the object becomes Ready,
// runs into a problem, its spec changes, or FirstRolloutSettle has passed
// since its creation: two status writes instead of one per step of the
// first rollout. Only a change between two statuses whose Ready condition
// is False with one of the inProgress reasons is held back.
func SettleDelay(created time.Time, currentGen, nextGen int64, current, next []metav1.Condition, now time.Time, inProgress ...string) time.Duration {
	if currentGen != nextGen {
		return 0
	}
	for _, conds := range [][]metav1.Condition{current, next} {
		if !notReadyFor(conds, inProgress) {
			return 0
		}
	}
	return created.Add(FirstRolloutSettle).Sub(now)
}

// notReadyFor reports whether conds hold a Ready condition that is False
// for one of reasons.
func notReadyFor(conds []metav1.Condition, reasons []string) bool {
	for _, c := range conds {
		if c.Type == ConditionReady {
			return c.Status == metav1.ConditionFalse && slices.Contains(reasons, c.Reason)
		}
	}
	return false
}
