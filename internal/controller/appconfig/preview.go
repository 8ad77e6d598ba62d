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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/rollout"
)

// What `kubectl steward config diff` previews with the reconciler's own
// functions, so that it says which consumers a change rolls out exactly as
// a reconcile decides it: renderSpec for the values, assess for each
// consumer, rolloutOf for a workload's rollout.

// PreviewConsumer is a consumer as a reconcile finds it.
type PreviewConsumer struct {
	// Kind is WebApp, Deployment or StatefulSet; Name its name.
	Kind, Name string
	// Keys are the keys it uses, sorted; every key when empty.
	Keys []string
	// Hash is the annotation its pod template carries.
	Hash string
	// Healthy and Failed are its rollout's state (WorkloadRollout).
	Healthy bool
	Failed  string
	// Plain is a Deployment or StatefulSet that opted in by annotation.
	Plain bool
	// Absent is a WebApp without a Deployment yet.
	Absent bool
}

// Assess is where the consumer stands once target is the AppConfig's
// current revision, before any rollout starts: the reconciler's assess.
// A ConsumerPending entry is one the change rolls out. prev is its entry
// in the status; revs holds the revisions by name, target and the one it
// runs among them.
func Assess(c PreviewConsumer, prev v1alpha1.ConfigConsumer, revs map[string]appconfig.Revision, target string, now time.Time) v1alpha1.ConfigConsumer {
	found := consumer{kind: c.Kind, name: c.Name, keys: c.Keys, hash: c.Hash, healthy: c.Healthy, failed: c.Failed, absent: c.Absent}
	if c.Plain {
		found.plain = &appsv1.Deployment{}
	}
	return assess(found, prev, revs, target, now)
}

// RenderSpec validates the AppConfig's spec and renders its values as a
// reconcile does; a problem is an invalid spec, with the message of the
// InvalidSpec condition.
func RenderSpec(ac *v1alpha1.AppConfig) (map[string]string, *conditions.Problem, error) {
	return renderSpec(ac)
}

// HashKey is the token key that the AppConfig's hash key Secret holds.
func HashKey(s *corev1.Secret) []byte { return s.Data[hashKeyField] }

// WorkloadRollout is whether a consumer's workload (a Deployment or a
// StatefulSet) has rolled out and is healthy, and why its rollout failed
// when it did.
func WorkloadRollout(w any) (healthy bool, failed string) {
	switch w := w.(type) {
	case *appsv1.Deployment:
		return rolloutOf(rollout.OfDeployment(w))
	case *appsv1.StatefulSet:
		return rolloutOf(rollout.OfStatefulSet(w))
	}
	return false, ""
}
