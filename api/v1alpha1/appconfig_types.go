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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppConfigSpec is the configuration of one application in one environment.
// +kubebuilder:validation:XValidation:rule="!has(self.secretData) || !has(self.data) || self.secretData.all(k, !(k in self.data))",message="a key cannot be in both data and secretData"
// +kubebuilder:validation:XValidation:rule="!has(self.secretData) || !has(self.overrides) || self.overrides.all(e, self.secretData.all(k, !(k in self.overrides[e])))",message="a key cannot be in both an override and secretData"
type AppConfigSpec struct {
	// Application names the application. The rendered ConfigMap is
	// "<application>-config", and each revision is
	// "<application>-config-<revision>". Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="application is immutable: create a new AppConfig instead"
	Application string `json:"application"`

	// Environment is the environment rendered: dev, staging or prod.
	// +required
	// +kubebuilder:validation:Enum=dev;staging;prod
	Environment string `json:"environment"`

	// Data maps keys to values. A key is used as an environment variable
	// name and as a file name, so it must match ^[A-Za-z_][A-Za-z0-9_]*$.
	// A value may refer to another key, or to ${namespace}, ${environment}
	// or ${application}, as ${NAME}; "$${" is a literal "${". References
	// are checked at admission: an unknown reference, a cycle or an invalid
	// key is rejected with the key and position named.
	// +optional
	// +kubebuilder:validation:MaxProperties=1024
	Data map[string]string `json:"data,omitempty"`

	// Overrides maps an environment (dev, staging or prod) to values that
	// replace or add to data in that environment, e.g.
	// {prod: {LOG_LEVEL: warn}}. Only the overrides of spec.environment are
	// rendered; the others are checked all the same.
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	// +kubebuilder:validation:XValidation:rule="self.all(e, e in ['dev', 'staging', 'prod'])",message="overrides are keyed by environment: dev, staging or prod"
	Overrides map[string]map[string]string `json:"overrides,omitempty"`

	// SecretData maps keys to values read from Secrets in the AppConfig's
	// namespace. They are rendered into a Secret, never into a ConfigMap, and
	// are not templated; data values cannot refer to them.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z_][A-Za-z0-9_]*$'))",message="secretData keys must match ^[A-Za-z_][A-Za-z0-9_]*$"
	SecretData map[string]SecretValueRef `json:"secretData,omitempty"`

	// Revision pins the consumers to an earlier revision, one listed in
	// status.revisions, for a rollback: consumers whose used keys differ
	// roll back to it. Empty means the revision rendered from this spec.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{10}$`
	Revision string `json:"revision,omitempty"`

	// RevisionHistoryLimit is how many revisions are kept for rollback,
	// besides those a consumer still runs and the pinned one.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Rollout controls how a change reaches the consumers.
	// +optional
	Rollout *ConfigRollout `json:"rollout,omitempty"`
}

// SecretValueRef selects one key of a Secret.
type SecretValueRef struct {
	// SecretName is the Secret, in the AppConfig's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// Key is the key in the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// ConfigRollout controls how a change of configuration reaches the consumers.
type ConfigRollout struct {
	// DebounceSeconds is how long the configuration must stay unchanged
	// before a new revision is rolled out, so that a burst of edits gives
	// one rollout.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	DebounceSeconds *int32 `json:"debounceSeconds,omitempty"`

	// MaxConcurrent is how many consumers roll out at once. The next one
	// starts when one of them is healthy again. A consumer whose rollout
	// failed (its Deployment's progress deadline passed) keeps its place
	// until it recovers, so once maxConcurrent consumers have failed the
	// rollout stops there; with 1, the first failure stops it.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`
}

// AppConfigPhase is a one-word summary of an AppConfig's state.
// +kubebuilder:validation:Enum=Pending;RollingOut;Ready;Degraded
type AppConfigPhase string

// AppConfig phases.
const (
	// AppConfigPending: the configuration is invalid, or a change waits for its debounce window.
	AppConfigPending AppConfigPhase = "Pending"
	// AppConfigRollingOut: consumers are moving to the current revision.
	AppConfigRollingOut AppConfigPhase = "RollingOut"
	// AppConfigReady: every consumer runs the current revision, or one equal in the keys it uses.
	AppConfigReady AppConfigPhase = "Ready"
	// AppConfigDegraded: a consumer's rollout failed or cannot start.
	AppConfigDegraded AppConfigPhase = "Degraded"
)

// ConsumerState is where one consumer is in a rollout.
// +kubebuilder:validation:Enum=UpToDate;Pending;RollingOut;Failed;Blocked
type ConsumerState string

// Consumer states.
const (
	// ConsumerUpToDate: the consumer runs values equal to the current revision's in the keys it uses.
	ConsumerUpToDate ConsumerState = "UpToDate"
	// ConsumerPending: the consumer waits for its turn to roll out.
	ConsumerPending ConsumerState = "Pending"
	// ConsumerRollingOut: the consumer is rolling out the current revision.
	ConsumerRollingOut ConsumerState = "RollingOut"
	// ConsumerFailed: the consumer's rollout did not become healthy.
	ConsumerFailed ConsumerState = "Failed"
	// ConsumerBlocked: the consumer uses a key the current revision does not have.
	ConsumerBlocked ConsumerState = "Blocked"
)

// ConfigConsumer is one workload that uses an AppConfig.
type ConfigConsumer struct {
	// Kind is WebApp, Deployment or StatefulSet.
	// +required
	Kind string `json:"kind"`

	// Name is the consumer's name, in the AppConfig's namespace.
	// +required
	Name string `json:"name"`

	// Keys are the keys the consumer uses; empty means every key.
	// +optional
	// +listType=atomic
	Keys []string `json:"keys,omitempty"`

	// Revision is the revision the consumer runs, or is rolling out.
	// +optional
	Revision string `json:"revision,omitempty"`

	// State is where the consumer is in the rollout.
	// +required
	State ConsumerState `json:"state"`

	// Message explains a Failed or Blocked state.
	// +optional
	Message string `json:"message,omitempty"`

	// Since is when the consumer entered its state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// ConfigRevision is one rendered, immutable revision.
type ConfigRevision struct {
	// Name is the revision, and the suffix of its ConfigMap
	// "<application>-config-<name>": a hash of the rendered data and of a
	// token per secret key, which changes whenever that key's value
	// changes. Equal data renders the same name; secret values never enter
	// the hash.
	// +required
	Name string `json:"name"`

	// Created is when Steward rendered the revision.
	// +required
	Created metav1.Time `json:"created"`

	// Keys is the number of keys in the revision, secret ones included.
	// +optional
	Keys int32 `json:"keys,omitempty"`
}

// AppConfigStatus is the observed state of an AppConfig.
type AppConfigStatus struct {
	// ObservedGeneration is the generation the status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state: Pending, RollingOut, Ready or Degraded.
	// +optional
	Phase AppConfigPhase `json:"phase,omitempty"`

	// CurrentRevision is the revision the consumers run or move to.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// LatestRevision is the revision rendered from the spec. It becomes
	// current when it has been unchanged for the debounce window (unless a
	// revision is pinned).
	// +optional
	LatestRevision string `json:"latestRevision,omitempty"`

	// LatestRevisionTime is when latestRevision last changed.
	// +optional
	LatestRevisionTime *metav1.Time `json:"latestRevisionTime,omitempty"`

	// Revisions are the kept revisions, newest first.
	// +optional
	// +listType=atomic
	Revisions []ConfigRevision `json:"revisions,omitempty"`

	// Consumers are the workloads that use this AppConfig, by kind and name.
	// +optional
	// +listType=atomic
	Consumers []ConfigConsumer `json:"consumers,omitempty"`

	// Conditions are Ready, Progressing and Degraded. Ready summarizes the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AppConfig is per-environment configuration for an application: data with
// references between keys, overrides per environment, and values from
// Secrets. Steward renders it into immutable, content-hashed revisions and
// rolls out only the consumers whose used keys changed, a few at a time.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="an AppConfig's name must be at most 63 characters: it names the pod template annotation appconfig.steward.dev/<name>"
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=".spec.application"
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=".spec.environment"
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=".status.currentRevision"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type AppConfig struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec AppConfigSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status AppConfigStatus `json:"status,omitempty"`
}

// AppConfigList is a list of AppConfigs.
// +kubebuilder:object:root=true
type AppConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the AppConfigs.
	Items []AppConfig `json:"items"`
}
