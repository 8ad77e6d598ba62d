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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadPolicySpec says what the WebApps, Caches, Databases and AppStacks
// of one environment may ask for. The environment is a label of their
// namespace. Every rule left unset allows anything.
// +kubebuilder:validation:XValidation:rule="has(self.maxReplicas) || has(self.allowedImages) || has(self.requireResources) || (has(self.runAsNonRoot) && self.runAsNonRoot)",message="a WorkloadPolicy needs at least one rule: maxReplicas, allowedImages, requireResources or runAsNonRoot"
type WorkloadPolicySpec struct {
	// EnvironmentLabel is the key of the namespace label that names a
	// namespace's environment. Defaults to steward.dev/environment.
	// +optional
	// +kubebuilder:default="steward.dev/environment"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	EnvironmentLabel string `json:"environmentLabel,omitempty"`

	// Environment is the value of the environment label this policy
	// applies to, e.g. "production": the policy governs the objects of
	// every namespace whose label has this value. Several policies may
	// name the same environment; an object must then satisfy each.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Environment string `json:"environment"`

	// MaxReplicas is the most pods one workload may ask for: a WebApp's
	// replicas and autoscaling.maxReplicas, a Cache's replicas (kubectl
	// scale included), a Database's replicas or, without them, its size
	// preset's (small 1, medium 2, large 3), and the same fields of an
	// AppStack's apps, caches and databases.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// AllowedImages lists the images a workload may run: an image is
	// allowed when it matches one entry. Checked are the images an object
	// names: a WebApp's image, a Cache's or a Database's image override,
	// and the same fields of an AppStack's apps and caches. The official
	// images Steward picks for a Cache or a Database without an override
	// are not checked. Images are compared as written in the object:
	// "nginx:1.27" does not start with "docker.io/library/".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	AllowedImages []ImageRule `json:"allowedImages,omitempty"`

	// RequireResources lists the compute requests and limits every
	// workload's containers must have. A Cache always has its CPU and
	// memory requests and its memory limit from Steward's defaults, and a
	// Database without resources has all four from its size preset: only
	// what those defaults leave out must be set.
	// +optional
	RequireResources *ResourceRule `json:"requireResources,omitempty"`

	// RunAsNonRoot, when true, requires a WebApp's (and an AppStack app's)
	// containers to run as a non-root user: runAsNonRoot true in its
	// securityContext, or in its podSecurityContext without a
	// securityContext that says false. The kubelet then refuses to start
	// a container as root. A WebApp or app that sets runAsNonRoot in
	// neither gets podSecurityContext.runAsNonRoot true at admission (on
	// Kubernetes 1.36 and later; earlier it is refused); one that sets
	// false is refused. Caches and Databases always run as non-root.
	// +optional
	RunAsNonRoot *bool `json:"runAsNonRoot,omitempty"`
}

// ImageRule is one allowed set of images: a prefix, or a regular
// expression.
// +kubebuilder:validation:ExactlyOneOf=prefix;pattern
type ImageRule struct {
	// Prefix allows the images that start with it: a registry or a
	// repository path ending in "/", e.g. "registry.acme.com/" or
	// "ghcr.io/acme/".
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.endsWith('/')",message="prefix must end with /: \"ghcr.io/acme\" would also allow ghcr.io/acme-evil/..."
	Prefix string `json:"prefix,omitempty"`

	// Pattern allows the images that match it, a regular expression in
	// RE2 syntax starting with ^, e.g.
	// "^ghcr\\.io/acme/[a-z-]+@sha256:[0-9a-f]{64}$" for images pinned by
	// digest.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.startsWith('^')",message="pattern must start with ^: a pattern matches anywhere in the image otherwise"
	// +kubebuilder:validation:XValidation:rule="''.matches(self) || !''.matches(self)",message="pattern must be a valid RE2 regular expression"
	Pattern string `json:"pattern,omitempty"`
}

// ResourceRule lists the compute requests and limits a workload must set.
// +kubebuilder:validation:XValidation:rule="has(self.requests) || has(self.limits)",message="requireResources needs requests, limits or both"
type ResourceRule struct {
	// Requests are the resources (cpu, memory) whose request must be set.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Enum=cpu;memory
	Requests []corev1.ResourceName `json:"requests,omitempty"`

	// Limits are the resources (cpu, memory) whose limit must be set.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Enum=cpu;memory
	Limits []corev1.ResourceName `json:"limits,omitempty"`
}

// PolicyViolator is an object that breaks a WorkloadPolicy as it stands.
type PolicyViolator struct {
	// Kind is WebApp, Cache, Database or AppStack.
	// +required
	Kind string `json:"kind"`

	// Namespace is the object's namespace.
	// +required
	Namespace string `json:"namespace"`

	// Name is the object's name.
	// +required
	Name string `json:"name"`

	// Message is the first rule the object breaks, in the words of an
	// admission refusal, e.g. "spec.replicas: Invalid value: 50:
	// production allows at most 10 (policy production)".
	// +required
	Message string `json:"message"`
}

// WorkloadPolicyStatus reports the objects that break the policy: objects
// that existed before it, or before their namespace joined its
// environment, and that admission therefore never refused.
type WorkloadPolicyStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// It is -1 until Steward first looked at the policy, which
	// kstatus-aware tools (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Violations is the number of objects in the policy's environment that
	// break it.
	// +optional
	Violations int32 `json:"violations,omitempty"`

	// Violators are those objects, sorted by namespace, kind and name; the
	// first 100 of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Violators []PolicyViolator `json:"violators,omitempty"`

	// Conditions are Ready, True once Steward checked the environment's
	// objects against this generation of the policy, and Compliant, False
	// while objects break it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkloadPolicy limits, per environment, the replicas, images, compute
// resources and users of WebApps, Caches, Databases and AppStacks. The API
// server enforces it at admission with a ValidatingAdmissionPolicy whose
// parameters are the WorkloadPolicies, after a MutatingAdmissionPolicy has
// set its defaults, so it holds while Steward is down.
// An object the policy refuses is never stored; objects that predate the
// policy stay, and may be updated as long as the update does not add to
// what breaks the policy. Steward reports those objects in the policy's
// status and with a Warning event on each.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wlp,categories=steward
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=".spec.environment"
// +kubebuilder:printcolumn:name="Max Replicas",type=integer,JSONPath=".spec.maxReplicas"
// +kubebuilder:printcolumn:name="Non-Root",type=boolean,JSONPath=".spec.runAsNonRoot"
// +kubebuilder:printcolumn:name="Violations",type=integer,JSONPath=".status.violations"
// +kubebuilder:printcolumn:name="Images",type=string,JSONPath=".spec.allowedImages[*]['prefix','pattern']",priority=1
// +kubebuilder:printcolumn:name="Label",type=string,JSONPath=".spec.environmentLabel",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type WorkloadPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec WorkloadPolicySpec `json:"spec"`

	// Status reports the objects that break the policy, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status WorkloadPolicyStatus `json:"status,omitempty"`
}

// WorkloadPolicyList is a list of WorkloadPolicies.
// +kubebuilder:object:root=true
type WorkloadPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WorkloadPolicies.
	Items []WorkloadPolicy `json:"items"`
}
