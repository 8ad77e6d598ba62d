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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func revision(data map[string]string, tokens string) Revision {
	cm := &corev1.ConfigMap{Data: data}
	if tokens != "" {
		cm.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationSecretTokens: tokens}}
	}
	return ReadRevision(cm)
}

func TestRevisionHashAndChanges(t *testing.T) {
	r1 := revision(map[string]string{"A": "1", "B": "2"}, `{"PASS":"t1"}`)
	r2 := revision(map[string]string{"A": "1", "B": "3"}, `{"PASS":"t1"}`)
	r3 := revision(map[string]string{"A": "1", "B": "3"}, `{"PASS":"t2"}`)

	if !r1.Has("PASS") || !r1.IsSecret("PASS") || r1.IsSecret("A") || r1.Has("C") {
		t.Error("Has/IsSecret disagree with the revision's keys")
	}
	if r1.Hash([]string{"A"}) != r2.Hash([]string{"A"}) {
		t.Error("A is equal in both revisions but hashes differ")
	}
	if r1.Hash([]string{"B"}) == r2.Hash([]string{"B"}) {
		t.Error("B changed but its hash did not")
	}
	if r2.Hash([]string{"PASS"}) == r3.Hash([]string{"PASS"}) {
		t.Error("a new token for a secret key did not change its hash")
	}
	if r1.Hash(nil) == r2.Hash(nil) {
		t.Error("the hash of every key missed a change")
	}
	if got := r1.Changed(r3, nil); !slices.Equal(got, []string{"B", "PASS"}) {
		t.Errorf("Changed(every key) = %v, want [B PASS]", got)
	}
	if got := r1.Changed(r2, []string{"A", "PASS"}); len(got) != 0 {
		t.Errorf("Changed([A PASS]) = %v, want none", got)
	}
	// A used key that disappears is a change.
	r4 := revision(map[string]string{"A": "1"}, "")
	if got := r1.Changed(r4, []string{"B"}); !slices.Equal(got, []string{"B"}) {
		t.Errorf("Changed after B was removed = %v, want [B]", got)
	}
	// A secret value never appears in what is hashed, only its token.
	for k, v := range r1.hashValues() {
		if k == "PASS" && v != "\x00secret:t1" {
			t.Errorf("hash value of PASS = %q", v)
		}
	}
}
