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
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AppStackFinalizer holds a deleted AppStack until its components are
	// removed in reverse dependency order.
	AppStackFinalizer = "steward.dev/appstack-teardown"
	// LabelAppStack names the AppStack a component belongs to.
	LabelAppStack = "steward.dev/appstack"
	// AnnotationRetryFinalBackup runs a failed final backup again when it is
	// set on the AppStack to a new value.
	AnnotationRetryFinalBackup = "steward.dev/retry-final-backup"
)

// configTrouble are the AppConfig reasons that are its own trouble, not a
// consumer's rollout.
var configTrouble = []string{
	ReasonInvalidSpec, ReasonSecretNotFound, ReasonRevisionNotFound, ReasonNameConflict, ReasonApplyFailed,
}

// StackComponentReadiness is how an AppStack judges one of its components
// that exists, obj (a Database, Cache, WebApp or AppConfig): whether it is
// Ready for its current generation, its Ready reason and message, and
// whether its Degraded condition is True. The stack's AppConfig counts as
// Ready once it has rendered a revision for its spec and has no trouble of
// its own: a rollout to the apps is theirs to report, and must not hold
// the apps not created yet.
func StackComponentReadiness(obj metav1.Object) (ready bool, reason, message string, degraded bool) {
	var kind string
	var conds []metav1.Condition
	var observed int64
	switch o := obj.(type) {
	case *Database:
		kind, conds, observed = "Database", o.Status.Conditions, o.Status.ObservedGeneration
	case *Cache:
		kind, conds, observed = "Cache", o.Status.Conditions, o.Status.ObservedGeneration
	case *WebApp:
		kind, conds, observed = "WebApp", o.Status.Conditions, o.Status.ObservedGeneration
	case *AppConfig:
		kind, conds, observed = "AppConfig", o.Status.Conditions, o.Status.ObservedGeneration
	}
	cond := meta.FindStatusCondition(conds, ConditionReady)
	switch {
	case cond == nil:
		return false, "Pending", fmt.Sprintf("%s %s has no status yet", kind, obj.GetName()), false
	case observed != obj.GetGeneration():
		return false, cond.Reason, fmt.Sprintf("%s %s has not caught up with its spec yet", kind, obj.GetName()), false
	}
	degraded = meta.IsStatusConditionTrue(conds, ConditionDegraded)
	if ac, ok := obj.(*AppConfig); ok {
		if ac.Status.CurrentRevision != "" && !slices.Contains(configTrouble, cond.Reason) {
			return true, cond.Reason, fmt.Sprintf("revision %s rendered: %s", ac.Status.CurrentRevision, cond.Message), false
		}
		return false, cond.Reason, cond.Message, slices.Contains(configTrouble, cond.Reason)
	}
	return cond.Status == metav1.ConditionTrue, cond.Reason, cond.Message, degraded
}
