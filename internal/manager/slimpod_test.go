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

package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestSlimPod keeps what Steward reads of a cached pod (metadata, status,
// node) and drops its containers, volumes and managed fields.
func TestSlimPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ledger-0", Labels: map[string]string{"steward.dev/role": "primary"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			NodeName:   "node-1",
			Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}},
			Volumes:    []corev1.Volume{{Name: "data"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", RestartCount: 2}}},
	}
	out, err := slimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.Labels["steward.dev/role"] != "primary" || got.Status.PodIP != "10.0.0.7" ||
		got.Status.ContainerStatuses[0].RestartCount != 2 || got.Spec.NodeName != "node-1" {
		t.Errorf("slim pod lost what Steward reads: %+v", got)
	}
	if got.Spec.Containers != nil || got.Spec.Volumes != nil || got.ManagedFields != nil {
		t.Errorf("slim pod kept its containers, volumes or managed fields: %+v", got)
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "shop/ledger-0", Obj: pod}
	if _, err := slimPod(tomb); err != nil {
		t.Errorf("a deletion tombstone: %v", err)
	}
}
