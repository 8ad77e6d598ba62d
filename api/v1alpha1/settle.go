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

// FirstRolloutSettle is how long the status writes of a new WebApp or Cache
// may be held back while its first rollout is under way. It is long enough
// for a bulk create of thousands of objects to converge with one status
// write each, and short enough that a slow first rollout shows its progress
// soon.
const FirstRolloutSettle = 30 * time.Second

// DatabaseFirstRolloutSettle is FirstRolloutSettle for a Database. A
// database server's first start takes longer than an app's: pulling a large
// image, initialising the data directory, and, in a bulk create, waiting for
// its volume and its turn on the node. A 30-s hold then mostly adds one
// status write, saying only Creating, shortly before the one that says Ready
// (in a bulk create of 200, 93 % were not Ready at 30 s). A problem is written
// at once either way: the hold only delays the word Creating.
const DatabaseFirstRolloutSettle = 60 * time.Second

// AppStackFirstStatusSettle is how long the first status write of a new
// AppStack may be held back while its components are created in dependency
// order and start. A stack's first rollout holds its databases' first start
// and, after it, its apps' rollouts, so it is a Database's
// (DatabaseFirstRolloutSettle): in a bulk create of 100 stacks on two
// cores, most stacks took 30 to 43 s to be Ready, and a 30-s hold gave each
// of those a status write, and events for the components created after it,
// shortly before the write that said Ready. A problem is written at once
// either way.
const AppStackFirstStatusSettle = DatabaseFirstRolloutSettle

// FirstStatusHold is how long a new object of kind may go without a status
// while Steward is at work on it: the settle of the kinds whose first status
// write is held back (WebApp and Cache, FirstRolloutSettle; Database,
// DatabaseFirstRolloutSettle; AppStack, AppStackFirstStatusSettle), zero for
// the others, whose first reconcile writes it. For a WebApp, a Cache or a
// Database it counts from the start of its first rollout
// (FirstRolloutStart), which comes later than its creation when it waited
// in a bulk create's queue.
func FirstStatusHold(kind string) time.Duration {
	switch kind {
	case "Database":
		return DatabaseFirstRolloutSettle
	case "AppStack":
		return AppStackFirstStatusSettle
	case "WebApp", "Cache":
		return FirstRolloutSettle
	}
	return 0
}

// FirstRolloutStart is when an object's first rollout started: when the
// operator created its workload (a WebApp's Deployment, a Cache's Deployment
// or StatefulSet, a Database's StatefulSet), or the object's creation while
// the workload does not exist (workloadCreated is zero). An object that
// waited in the operator's queue, as in a bulk create of thousands, has its
// whole settle time from the moment its rollout began, not one that ran out
// while nothing was done for it.
func FirstRolloutStart(created time.Time, workloadCreated metav1.Time) time.Time {
	if workloadCreated.After(created) {
		return workloadCreated.Time
	}
	return created
}

// SettleDelay is how long to hold back a status write of an object whose
// first rollout started at start (FirstRolloutStart) and may hold its
// status for settle, from the status it has (currentGen, current) to the
// one just computed (nextGen, next); zero means write now.
//
// inProgress are the reasons of the Ready condition during a first rollout
// (Creating for most kinds). Only a status whose Ready condition is False
// for one of them is held back, and only during the object's first settle
// (FirstRolloutSettle, DatabaseFirstRolloutSettle): a new object's status is
// written when it becomes Ready, runs into a problem, its spec changes, or
// settle has passed since its rollout started, and not at each step of its
// first rollout. That includes the first write: until then the status holds only
// the CRD's default, observedGeneration -1, which kstatus-aware tools (Flux,
// kubectl wait) read as in progress ("latest observed generation is -1"). A
// new object that converges within settle costs one status write.
func SettleDelay(start time.Time, settle time.Duration, currentGen, nextGen int64, current, next []metav1.Condition, now time.Time, inProgress ...string) time.Duration {
	if !notReadyFor(next, inProgress) {
		return 0
	}
	// A status written before: hold only a step within the same
	// generation's first rollout.
	if StatusWritten(currentGen, current) && (currentGen != nextGen || !notReadyFor(current, inProgress)) {
		return 0
	}
	return start.Add(settle).Sub(now)
}

// StatusWritten reports whether a status with observedGeneration and
// conditions was written by Steward: the CRDs' default, observedGeneration
// -1 and no conditions, is not.
func StatusWritten(observedGeneration int64, conditions []metav1.Condition) bool {
	return observedGeneration >= 1 || len(conditions) > 0
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
