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
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// announce emits the events of the transition from the AppConfig's status
// to the plan's: the revisions created, a problem that is new, consumers
// that became blocked, failed or rolled out, and the rollouts the plan
// started.
func (r *Reconciler) announce(ctx context.Context, ac *v1alpha1.AppConfig, p plan) {
	prev, next := &ac.Status, &p.status
	if prev.CurrentRevision != next.CurrentRevision {
		log.FromContext(ctx).Info("Current revision changed", "from", prev.CurrentRevision, "to", next.CurrentRevision)
	}
	for _, rev := range next.Revisions {
		if !hasRevision(prev, rev.Name) {
			r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRevisionCreated, "Render",
				"Rendered revision %s with %d keys", rev.Name, rev.Keys)
		}
	}
	if p.problem != nil {
		c := meta.FindStatusCondition(prev.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != p.problem.Reason || c.Message != p.problem.Message {
			r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, p.problem.Reason, "Render", "%s", p.problem.Message)
		}
	}
	r.announceConsumers(ac, next)
	for _, s := range p.starts {
		r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRollingOut, "RollOut",
			"Rolling out revision %s to %s %s: %s", next.CurrentRevision, s.kind, s.name, s.why)
	}
}

// announceConsumers emits an event for each consumer whose state changed
// to Blocked or Failed, and for each that finished rolling out the
// current revision.
func (r *Reconciler) announceConsumers(ac *v1alpha1.AppConfig, next *v1alpha1.AppConfigStatus) {
	was := map[string]v1alpha1.ConsumerState{}
	for _, c := range ac.Status.Consumers {
		was[c.Kind+"/"+c.Name] = c.State
	}
	for _, c := range next.Consumers {
		before := was[c.Kind+"/"+c.Name]
		switch {
		case c.State == before:
		case c.State == v1alpha1.ConsumerBlocked:
			r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, v1alpha1.ReasonConsumerBlocked, "RollOut",
				"%s %s %s", c.Kind, c.Name, c.Message)
		case c.State == v1alpha1.ConsumerFailed:
			r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, v1alpha1.ReasonRolloutFailed, "RollOut",
				"Rollout of revision %s to %s %s failed: %s", next.CurrentRevision, c.Kind, c.Name, c.Message)
		case c.State == v1alpha1.ConsumerUpToDate && before == v1alpha1.ConsumerRollingOut && c.Revision == next.CurrentRevision:
			r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRolledOut, "RollOut",
				"%s %s runs revision %s", c.Kind, c.Name, next.CurrentRevision)
		}
	}
}
