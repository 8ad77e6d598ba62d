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

package workloadpolicy

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// announced remembers, per policy, the violators already announced: those
// of the last check. A violator the policy's status lists counts as
// announced too, so that a restart does not announce the first hundred
// again.
type announced struct {
	mu     sync.Mutex
	byName map[string]map[v1alpha1.PolicyViolator]bool
}

// announce emits a Warning event on each object newly found breaking p,
// or breaking another of its rules than before.
func (r *Reconciler) announce(p *v1alpha1.WorkloadPolicy, found []violator) {
	r.announced.mu.Lock()
	defer r.announced.mu.Unlock()
	if r.announced.byName == nil {
		r.announced.byName = map[string]map[v1alpha1.PolicyViolator]bool{}
	}
	before := r.announced.byName[p.Name]
	now := make(map[v1alpha1.PolicyViolator]bool, len(found))
	listed := map[v1alpha1.PolicyViolator]bool{}
	for _, v := range p.Status.Violators {
		listed[v] = true
	}
	for _, v := range found {
		now[v.PolicyViolator] = true
		if before[v.PolicyViolator] || (before == nil && listed[v.PolicyViolator]) {
			continue
		}
		r.Recorder.Eventf(v.obj, p, corev1.EventTypeWarning, v1alpha1.EventPolicyViolation, "Check",
			"Breaks WorkloadPolicy %s, made after it or after its namespace's label: %s", p.Name, v.Message)
	}
	r.announced.byName[p.Name] = now
}

// forget drops what was announced for a policy that no longer exists.
func (r *Reconciler) forget(name string) {
	r.announced.mu.Lock()
	defer r.announced.mu.Unlock()
	delete(r.announced.byName, name)
}
