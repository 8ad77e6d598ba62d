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

package appconfig

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
)

// problemStatus is st with a problem that stops the AppConfig before a
// rollout. An invalid spec is Pending, anything else Degraded. The status
// is for the current generation: it says what stops it.
func problemStatus(ac *v1alpha1.AppConfig, st v1alpha1.AppConfigStatus, problem conditions.Problem) v1alpha1.AppConfigStatus {
	next := *st.DeepCopy()
	next.ObservedGeneration = ac.Generation
	next.Phase = v1alpha1.AppConfigDegraded
	if problem.Reason == v1alpha1.ReasonInvalidSpec {
		next.Phase = v1alpha1.AppConfigPending
	}
	conditions.Set(&next.Conditions, ac.Generation,
		conditions.False(problem.Reason, problem.Message),
		conditions.False(problem.Reason, "Nothing is rolled out until this is fixed"),
		conditions.True(problem.Reason, problem.Message))
	return next
}

// setRolloutStatus sets the phase and conditions from the consumers' states.
func setRolloutStatus(ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, latest string, debouncing bool) {
	counts := map[v1alpha1.ConsumerState]int{}
	var failed, blocked []string
	for _, c := range st.Consumers {
		counts[c.State]++
		switch c.State {
		case v1alpha1.ConsumerFailed:
			failed = append(failed, fmt.Sprintf("%s %s: %s", c.Kind, c.Name, c.Message))
		case v1alpha1.ConsumerBlocked:
			blocked = append(blocked, fmt.Sprintf("%s %s: %s", c.Kind, c.Name, c.Message))
		}
	}
	moving := counts[v1alpha1.ConsumerPending] + counts[v1alpha1.ConsumerRollingOut]
	total := len(st.Consumers)
	upToDate := counts[v1alpha1.ConsumerUpToDate]

	degraded := conditions.False(v1alpha1.ReasonHealthy, "No consumer's rollout failed")
	switch {
	case len(failed) > 0:
		degraded = conditions.True(v1alpha1.ReasonRolloutFailed, "Rollout failed: "+strings.Join(failed, "; "))
	case len(blocked) > 0:
		degraded = conditions.True(v1alpha1.ReasonConsumerBlocked, strings.Join(blocked, "; "))
	}
	progressing := conditions.False(v1alpha1.ReasonRolledOut, fmt.Sprintf("%d of %d consumers run revision %s or one equal in the keys they use", upToDate, total, st.CurrentRevision))
	switch {
	case moving > 0:
		progressing = conditions.True(v1alpha1.ReasonRollingOut, fmt.Sprintf("Rolling out revision %s: %d of %d consumers up to date, %d rolling out, %d waiting",
			st.CurrentRevision, upToDate, total, counts[v1alpha1.ConsumerRollingOut], counts[v1alpha1.ConsumerPending]))
	case debouncing:
		progressing = conditions.True(v1alpha1.ReasonDebouncing, fmt.Sprintf("Revision %s rolls out when the configuration has been unchanged for %s", latest, debounce(ac)))
	}
	ready := conditions.True(v1alpha1.ReasonRolledOut, fmt.Sprintf("Revision %s is rolled out to %d consumers", st.CurrentRevision, total))
	switch {
	case degraded.Status == metav1.ConditionTrue:
		ready = conditions.False(degraded.Reason, degraded.Message)
	case progressing.Status == metav1.ConditionTrue:
		ready = conditions.False(progressing.Reason, progressing.Message)
	case ac.Spec.Revision != "" && ac.Spec.Revision != latest:
		ready = conditions.True(v1alpha1.ReasonPinned, fmt.Sprintf("Pinned to revision %s, rolled out to %d consumers; the spec renders revision %s", st.CurrentRevision, total, latest))
	}
	conditions.Set(&st.Conditions, ac.Generation, ready, progressing, degraded)
	st.Phase = rolloutPhase(degraded, moving > 0, debouncing)
}

// rolloutPhase summarizes the rollout: Degraded when a consumer's rollout
// failed or is blocked, RollingOut while consumers move, Pending while the
// latest revision waits for its debounce window, Ready otherwise.
func rolloutPhase(degraded conditions.Cond, moving, debouncing bool) v1alpha1.AppConfigPhase {
	switch {
	case degraded.Status == metav1.ConditionTrue:
		return v1alpha1.AppConfigDegraded
	case moving:
		return v1alpha1.AppConfigRollingOut
	case debouncing:
		return v1alpha1.AppConfigPending
	default:
		return v1alpha1.AppConfigReady
	}
}
