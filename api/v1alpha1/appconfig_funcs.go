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

// What consumers and the AppConfig controller agree on: the names of the
// rendered objects, the annotations and labels, and the revision each
// consumer runs.
const (
	// AnnotationAppConfigPrefix starts the pod template annotation that
	// carries the hash of the keys a consumer uses:
	// appconfig.steward.dev/<AppConfig>.
	AnnotationAppConfigPrefix = "appconfig.steward.dev/"
	// AnnotationAppConfigConsumer opts a plain Deployment or StatefulSet
	// in: its value names the AppConfigs it uses, separated by commas.
	AnnotationAppConfigConsumer = "steward.dev/appconfig"
	// AnnotationAppConfigKeys lists the keys a plain Deployment or
	// StatefulSet uses, separated by commas; every key when absent.
	AnnotationAppConfigKeys = "steward.dev/appconfig-keys"
	// AnnotationSecretTokens, on a revision's ConfigMap, maps each secret
	// key to an opaque token that changes whenever the key's value changes,
	// so that hashes cover secret values without ever hashing them.
	AnnotationSecretTokens = "steward.dev/secret-tokens"
	// LabelAppConfig names the AppConfig a revision belongs to.
	LabelAppConfig = "steward.dev/appconfig"
	// LabelRevision is the revision of a revision's ConfigMap and Secret.
	LabelRevision = "steward.dev/revision"
)

// Kinds of an AppConfig's consumers, as status.consumers names them.
const (
	ConsumerKindWebApp      = "WebApp"
	ConsumerKindDeployment  = "Deployment"
	ConsumerKindStatefulSet = "StatefulSet"
)

// ConfigName is the ConfigMap (and Secret, when there is secret data) that
// holds the current revision's values: "<application>-config".
func (ac *AppConfig) ConfigName() string { return ac.Spec.Application + "-config" }

// RevisionName is the immutable ConfigMap (and Secret) of one revision.
func (ac *AppConfig) RevisionName(revision string) string {
	return ac.ConfigName() + "-" + revision
}

// HashKeyName is the Secret that holds the AppConfig's key for the tokens
// of its secret values.
func (ac *AppConfig) HashKeyName() string { return ac.ConfigName() + "-hash-key" }

// AssignedRevision is the revision the named consumer should run: the one
// the status assigns it, or the current one for a consumer the AppConfig
// has not seen yet. Empty when the AppConfig has no revision.
func (ac *AppConfig) AssignedRevision(kind, name string) string {
	for _, c := range ac.Status.Consumers {
		if c.Kind == kind && c.Name == name && c.Revision != "" {
			return c.Revision
		}
	}
	return ac.Status.CurrentRevision
}

// AppConfigAnnotation is the pod template annotation that carries the hash
// of the keys a consumer of the named AppConfig uses.
func AppConfigAnnotation(appConfig string) string { return AnnotationAppConfigPrefix + appConfig }
