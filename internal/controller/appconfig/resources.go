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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/labels"
)

// hashKeyField is the key of the hash-key Secret's data that holds the key.
const hashKeyField = "key"

// Labels are the labels of every object an AppConfig renders: Steward's
// common labels and the AppConfig's name.
func Labels(ac *v1alpha1.AppConfig) map[string]string {
	l := labels.Common(ac.Spec.Application, "appconfig")
	l[v1alpha1.LabelAppConfig] = ac.Name
	return l
}

// RevisionLabels are Labels and the revision the object holds.
func RevisionLabels(ac *v1alpha1.AppConfig, revision string) map[string]string {
	l := Labels(ac)
	l[v1alpha1.LabelRevision] = revision
	return l
}

// Tokens gives each secret key its token: an HMAC of the key and value
// under the AppConfig's hash key, so that equal values always get equal
// tokens, whatever the cache has seen, and the value cannot be guessed from
// the token without the key.
func Tokens(key []byte, secrets map[string][]byte) map[string]string {
	tokens := make(map[string]string, len(secrets))
	for k, v := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(k))
		mac.Write([]byte{0})
		mac.Write(v)
		tokens[k] = hex.EncodeToString(mac.Sum(nil))[:32]
	}
	return tokens
}

// RevisionNameOf is the name of the revision rev: the start of its hash
// over every key.
func RevisionNameOf(rev appconfig.Revision) string { return rev.Hash(nil)[:10] }

// RevisionConfigMap is the immutable ConfigMap of one revision: the
// rendered values, and the tokens of its secret keys in an annotation.
func RevisionConfigMap(ac *v1alpha1.AppConfig, revision string, values, tokens map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	cm := corev1ac.ConfigMap(ac.RevisionName(revision), ac.Namespace).
		WithLabels(RevisionLabels(ac, revision)).
		WithOwnerReferences(ownerReference(ac)).
		WithData(values).
		WithImmutable(true)
	if len(tokens) > 0 {
		raw, err := json.Marshal(tokens)
		if err != nil {
			panic(fmt.Sprintf("encoding secret tokens: %v", err)) // a map of strings always encodes
		}
		cm.WithAnnotations(map[string]string{v1alpha1.AnnotationSecretTokens: string(raw)})
	}
	return cm
}

// RevisionSecret is the immutable Secret of one revision: the values of
// its secret keys.
func RevisionSecret(ac *v1alpha1.AppConfig, revision string, secrets map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(ac.RevisionName(revision), ac.Namespace).
		WithLabels(RevisionLabels(ac, revision)).
		WithOwnerReferences(ownerReference(ac)).
		WithType(corev1.SecretTypeOpaque).
		WithData(secrets).
		WithImmutable(true)
}

// ConfigMap is "<application>-config", which holds the current revision's
// values for the consumers that read it by name.
func ConfigMap(ac *v1alpha1.AppConfig, revision string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(ac.ConfigName(), ac.Namespace).
		WithLabels(RevisionLabels(ac, revision)).
		WithOwnerReferences(ownerReference(ac)).
		WithData(data)
}

// ConfigSecret is the Secret "<application>-config", which holds the
// current revision's secret values when it has any.
func ConfigSecret(ac *v1alpha1.AppConfig, revision string, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(ac.ConfigName(), ac.Namespace).
		WithLabels(RevisionLabels(ac, revision)).
		WithOwnerReferences(ownerReference(ac)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// HashKeySecret is the immutable Secret that holds the AppConfig's key for
// the tokens of its secret values. It is created once, never applied: the
// key must not change.
func HashKeySecret(ac *v1alpha1.AppConfig, key []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: ac.HashKeyName(), Namespace: ac.Namespace, Labels: Labels(ac),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "AppConfig", Name: ac.Name, UID: ac.UID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Type:      corev1.SecretTypeOpaque,
		Data:      map[string][]byte{hashKeyField: key},
		Immutable: new(true),
	}
}

// RestartPatch is the merge patch that sets the hash of the keys a plain
// Deployment or StatefulSet uses on its pod template, which rolls it out.
func RestartPatch(ac *v1alpha1.AppConfig, hash string) []byte {
	return fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, v1alpha1.AppConfigAnnotation(ac.Name), hash)
}

// ownerReference makes the AppConfig the controller of an object it renders.
func ownerReference(ac *v1alpha1.AppConfig) *metav1ac.OwnerReferenceApplyConfiguration {
	return apply.ControllerReference(v1alpha1.GroupVersion.WithKind("AppConfig"), ac)
}
