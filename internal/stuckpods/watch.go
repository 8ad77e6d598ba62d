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

package stuckpods

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DiagnosisChanged passes the events of a pod that change what Find could
// say of it: a pod that cannot start being created or deleted, and an
// update that makes a pod unable to start, able again, or changes why or
// since when it cannot. The steps of a normal start (created, scheduled,
// running, ready) and a normal deletion wake nobody: the owner's
// Deployment reports them in its status, which its owner watches.
func DiagnosisChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return cannotStart(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return cannotStart(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			pod, okNew := e.ObjectNew.(*corev1.Pod)
			if !okOld || !okNew {
				return true
			}
			return diagnosisKey(old) != diagnosisKey(pod)
		},
	}
}

// cannotStart reports whether obj is a pod that cannot start; an object
// that is not a pod passes.
func cannotStart(obj any) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return true
	}
	_, ok = diagnose(pod)
	return ok
}

// diagnosisKey is what Find could say of a pod, as a string: nothing, or
// why it cannot start and since when. The message is left out, as a
// scheduler's renewed attempts change it without changing the problem.
func diagnosisKey(pod *corev1.Pod) string {
	d, ok := diagnose(pod)
	if !ok {
		return ""
	}
	return d.reason + "|" + d.since.UTC().Format(time.RFC3339Nano)
}
