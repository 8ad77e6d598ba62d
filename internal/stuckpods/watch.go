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
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// StatusChanged passes the creation and deletion of a pod, and the updates
// that change what Find could say of it: its phase, readiness, scheduling
// and its containers' states. Updates that only renew a heartbeat or
// change metadata do not wake the pod's owner.
func StatusChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			pod, okNew := e.ObjectNew.(*corev1.Pod)
			if !okOld || !okNew {
				return true
			}
			return summary(old) != summary(pod)
		},
	}
}

// summary is what of a pod's status Find looks at, as a string.
func summary(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%t|", pod.Status.Phase, pod.DeletionTimestamp != nil)
	for _, c := range pod.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s|", c.Type, c.Status, c.Reason)
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			fmt.Fprintf(&b, "%s:%t:%s|", cs.Name, cs.Ready, state(cs.State))
		}
	}
	return b.String()
}

// state names a container state by its kind and reason.
func state(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting/" + s.Waiting.Reason
	case s.Terminated != nil:
		return fmt.Sprintf("terminated/%d", s.Terminated.ExitCode)
	case s.Running != nil:
		return "running"
	}
	return ""
}
