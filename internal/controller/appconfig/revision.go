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
	"github.com/steward-dev/steward/internal/appconfig"
)

// What consumers and the AppConfig controller agree on: the names of the
// rendered objects, the pod template annotation, and the revision each
// consumer runs.

const (
	// AnnotationPrefix starts the pod template annotation that carries the
	// hash of the keys a consumer uses: appconfig.steward.dev/<AppConfig>.
	AnnotationPrefix = "appconfig.steward.dev/"

	// ConsumerAnnotation opts a plain Deployment or StatefulSet in: its
	// value names the AppConfigs it uses, separated by commas.
	ConsumerAnnotation = "steward.dev/appconfig"
	// KeysAnnotation lists the keys a plain Deployment or StatefulSet uses,
	// separated by commas; every key when absent.
	KeysAnnotation = "steward.dev/appconfig-keys"

	// tokensAnnotation, on a revision's ConfigMap, maps each secret key to
	// an opaque token that changes whenever the key's value changes, so that
	// hashes cover secret values without ever hashing them.
	tokensAnnotation = "steward.dev/secret-tokens"
	// appConfigLabel names the AppConfig a revision belongs to.
	appConfigLabel = "steward.dev/appconfig"
	// revisionLabel is the revision of a revision's ConfigMap and Secret.
	revisionLabel = "steward.dev/revision"
)

// Kinds of consumers.
const (
	KindWebApp      = "WebApp"
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// Name is the ConfigMap (and Secret, when there is secret data) that holds
// the current revision's values: "<application>-config".
func Name(ac *v1alpha1.AppConfig) string { return ac.Spec.Application + "-config" }

// RevisionName is the immutable ConfigMap (and Secret) of one revision.
func RevisionName(ac *v1alpha1.AppConfig, revision string) string {
	return Name(ac) + "-" + revision
}

// Annotation is the pod template annotation that carries the hash of the
// keys a consumer of the named AppConfig uses.
func Annotation(appConfig string) string { return AnnotationPrefix + appConfig }

// Assigned is the revision the named consumer should run: the one the
// AppConfig's status assigns it, or the current one for a consumer the
// AppConfig has not seen yet. Empty when the AppConfig has no revision.
func Assigned(ac *v1alpha1.AppConfig, kind, name string) string {
	for _, c := range ac.Status.Consumers {
		if c.Kind == kind && c.Name == name && c.Revision != "" {
			return c.Revision
		}
	}
	return ac.Status.CurrentRevision
}

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
	if s := cm.Annotations[tokensAnnotation]; s != "" {
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
	return appconfig.Hash(r.hashValues(), keys)
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
		if appconfig.Changed(before, after, []string{k}) {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}
