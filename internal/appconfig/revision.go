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
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Revision is what a consumer reads from a revision's ConfigMap.
type Revision struct {
	// Data are the rendered values that are not secret.
	Data map[string]string
	// SecretKeys are the keys whose values are in the revision's Secret.
	SecretKeys []string
	// tokens maps each secret key to its token.
	tokens map[string]string
}

// ReadRevision reads a revision's ConfigMap.
func ReadRevision(cm *corev1.ConfigMap) Revision {
	r := Revision{Data: cm.Data, tokens: map[string]string{}}
	if s := cm.Annotations[v1alpha1.AnnotationSecretTokens]; s != "" {
		// Written by Steward; a damaged annotation reads as no secret keys,
		// and the AppConfig controller re-creates nothing: revisions are
		// immutable. The hash then differs, which rolls consumers out.
		_ = json.Unmarshal([]byte(s), &r.tokens)
	}
	r.SecretKeys = slices.Sorted(maps.Keys(r.tokens))
	return r
}

// Has reports whether the revision has the key, secret or not.
func (r Revision) Has(key string) bool {
	if _, ok := r.Data[key]; ok {
		return true
	}
	_, ok := r.tokens[key]
	return ok
}

// IsSecret reports whether the key's value is in the revision's Secret.
func (r Revision) IsSecret(key string) bool {
	_, ok := r.tokens[key]
	return ok
}

// hashValues are the values hashes are computed over: the data, and a
// token in place of each secret value.
func (r Revision) hashValues() map[string]string {
	v := make(map[string]string, len(r.Data)+len(r.tokens))
	maps.Copy(v, r.Data)
	for k, t := range r.tokens {
		v[k] = "\x00secret:" + t
	}
	return v
}

// Hash is the hash of the keys a consumer uses (every key when keys is
// empty), for its pod template annotation.
func (r Revision) Hash(keys []string) string {
	return Hash(r.hashValues(), keys)
}

// Changed lists the keys among keys (every key of either revision when keys
// is empty) whose values differ between r and next, sorted.
func (r Revision) Changed(next Revision, keys []string) []string {
	before, after := r.hashValues(), next.hashValues()
	if len(keys) == 0 {
		keys = slices.Sorted(maps.Keys(before))
		for k := range after {
			if _, ok := before[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	var changed []string
	for _, k := range keys {
		if Changed(before, after, []string{k}) {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// NewRevision is a revision of the rendered values that are not secret and
// a token for each secret key.
func NewRevision(data, tokens map[string]string) Revision {
	return Revision{Data: data, SecretKeys: slices.Sorted(maps.Keys(tokens)), tokens: tokens}
}
