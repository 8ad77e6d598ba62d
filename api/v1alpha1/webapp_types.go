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

// WebAppSpec declares a stateless web service: the container to run, how many
// copies, and how traffic reaches it.
// +kubebuilder:validation:XValidation:rule="!(has(self.autoscaling) && has(self.replicas))",message="replicas must not be set while autoscaling is enabled: the HorizontalPodAutoscaler owns the replica count",fieldPath=".replicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || (has(self.resources) && has(self.resources.requests) && 'cpu' in self.resources.requests)",message="autoscaling needs resources.requests.cpu: CPU utilization is measured against the request",fieldPath=".autoscaling"
type WebAppSpec struct {
	// Image is the container image to run, e.g. "ghcr.io/acme/shop:1.4.2".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="image must not contain spaces"
	Image string `json:"image"`

	// Replicas is the number of pods to run. Defaults to 1. Leave it unset when
	// autoscaling is enabled. `kubectl scale` sets it through the scale subresource.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas *int32 `json:"replicas,omitempty"`

	// Port is the TCP port the container listens on. The Service exposes it as
	// port 80, named "http".
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Env lists environment variables for the container.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the container's compute requests and limits.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// HealthCheck turns an HTTP path into the container's readiness and
	// liveness probes. Without it a pod is ready once its port accepts
	// connections, and it has no liveness probe.
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`

	// Ingress publishes the service under a host name and path.
	// +optional
	Ingress *WebAppIngress `json:"ingress,omitempty"`

	// Autoscaling scales the pods on CPU utilization with a
	// HorizontalPodAutoscaler. It requires resources.requests.cpu.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// ImagePullSecrets name Secrets in the same namespace used to pull the image.
	// +optional
	// +listType=map
	// +listMapKey=name
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PodSecurityContext overrides fields of the pod's security context. Fields
	// left unset keep Steward's defaults: seccomp profile RuntimeDefault.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// SecurityContext overrides fields of the container's security context.
	// Fields left unset keep Steward's defaults: no privilege escalation and all
	// capabilities dropped.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// PodAnnotations are put on the pods, e.g. prometheus.io/scrape. Keys
	// under appconfig.steward.dev/ are Steward's and cannot be set.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('appconfig.steward.dev/'))",message="podAnnotations: keys under appconfig.steward.dev/ are set by Steward"
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// Database binds the WebApp to a Database in the same namespace. The
	// container gets the Database's connection as environment variables, each
	// a secretKeyRef to the Database's credentials Secret "<ref>-credentials",
	// so no value is ever copied into the WebApp or its Deployment:
	// <prefix>DATABASE_URL (key uri), <prefix>DB_HOST (host),
	// <prefix>DB_PORT (port), <prefix>DB_USER (username),
	// <prefix>DB_PASSWORD (password) and <prefix>DB_NAME (database).
	// The Deployment is not created, or not given the binding, until the
	// Database is Ready. A variable of the same name in env takes precedence.
	// +optional
	Database *WebAppBinding `json:"database,omitempty"`

	// Cache binds the WebApp to a Cache in the same namespace. The container
	// gets <prefix>CACHE_HOST, the Cache's in-cluster DNS name, and
	// <prefix>CACHE_PORT, its port. For a redis Cache that asks for a
	// password it also gets <prefix>CACHE_PASSWORD (key password) and
	// <prefix>CACHE_URL (key uri, redis://default:<password>@<host>:<port>),
	// secretKeyRefs to the Cache's Secret "<ref>-credentials". The
	// Deployment is not created, or not given the binding, until the Cache
	// is Ready. A variable of the same name in env takes precedence.
	// +optional
	Cache *WebAppBinding `json:"cache,omitempty"`

	// Config lists the AppConfigs the WebApp uses, and which of their keys.
	// When an AppConfig changes, the WebApp rolls out only if a key it uses
	// changed. The Deployment is not created, or not given the
	// configuration, until the AppConfig has a revision.
	// +optional
	// +listType=map
	// +listMapKey=appConfig
	// +kubebuilder:validation:MaxItems=16
	Config []ConfigUse `json:"config,omitempty"`
}

// ConfigUse is the part of an AppConfig a WebApp uses, and how it arrives.
// +kubebuilder:validation:XValidation:rule="!has(self.mountPath) || self.as == 'Files'",message="mountPath applies only when as is Files"
type ConfigUse struct {
	// AppConfig is the name of an AppConfig in the WebApp's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AppConfig string `json:"appConfig"`

	// Keys are the keys used. Empty means every key, secret ones included:
	// then any change to the AppConfig rolls the WebApp out.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:items:MaxLength=253
	Keys []string `json:"keys,omitempty"`

	// As is how the values arrive: Env (the default), one environment
	// variable per key, or Files, one file per key under mountPath. A
	// variable of the same name in env takes precedence.
	// +optional
	// +kubebuilder:default=Env
	// +kubebuilder:validation:Enum=Env;Files
	As string `json:"as,omitempty"`

	// MountPath is the directory of the files when as is Files; by default
	// /etc/steward/<appConfig>.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	MountPath string `json:"mountPath,omitempty"`
}

// How a WebApp receives an AppConfig's values.
const (
	ConfigAsEnv   = "Env"
	ConfigAsFiles = "Files"
)

// WebAppBinding names an object in the WebApp's namespace whose connection
// details the container receives as environment variables.
type WebAppBinding struct {
	// Ref is the name of the bound object, in the WebApp's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Ref string `json:"ref"`

	// Prefix is put in front of every variable name, e.g. "ORDERS_" gives
	// ORDERS_DATABASE_URL. Empty by default.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Prefix string `json:"prefix,omitempty"`
}

// HealthCheck is an HTTP endpoint that answers 2xx or 3xx while the app is healthy.
type HealthCheck struct {
	// Path is the HTTP path to probe, e.g. "/healthz".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`

	// InitialDelaySeconds is how long to wait after the container starts before
	// the first liveness probe.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`

	// PeriodSeconds is how often to probe.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// FailureThreshold is how many failed probes in a row make the pod unready,
	// or, for liveness, restart the container.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// WebAppIngress routes external HTTP traffic to the WebApp's Service.
type WebAppIngress struct {
	// Host is the fully qualified host name, e.g. "shop.example.com".
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host"`

	// Path is the URL path prefix routed to the WebApp.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`

	// TLSSecretName names a kubernetes.io/tls Secret in the same namespace that
	// holds the certificate for Host. When set, the Ingress terminates TLS.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TLSSecretName string `json:"tlsSecretName,omitempty"`

	// ClassName selects the IngressClass. The cluster default is used when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClassName *string `json:"className,omitempty"`
}

// Autoscaling bounds a HorizontalPodAutoscaler that targets average CPU utilization.
// +kubebuilder:validation:XValidation:rule="self.maxReplicas >= self.minReplicas",message="autoscaling.maxReplicas must be greater than or equal to autoscaling.minReplicas"
type Autoscaling struct {
	// MinReplicas is the lowest replica count.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the highest replica count.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxReplicas int32 `json:"maxReplicas"`

	// TargetCPUUtilizationPercentage is the average CPU use, as a percentage of
	// the request, that the autoscaler aims for.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// WebAppPhase is a one-word summary of a WebApp's state.
// +kubebuilder:validation:Enum=Pending;Deploying;Running;Degraded
type WebAppPhase string

const (
	// WebAppPending means Steward has not yet seen the WebApp's Deployment.
	WebAppPending WebAppPhase = "Pending"
	// WebAppDeploying means a rollout or scale is in progress.
	WebAppDeploying WebAppPhase = "Deploying"
	// WebAppRunning means every desired pod runs the current spec and is ready.
	WebAppRunning WebAppPhase = "Running"
	// WebAppDegraded means the rollout has stalled or pods are unavailable.
	WebAppDegraded WebAppPhase = "Degraded"
)

// WebAppStatus is the observed state of a WebApp.
type WebAppStatus struct {
	// ObservedGeneration is the metadata.generation this status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state: Pending, Deploying, Running or Degraded.
	// +optional
	Phase WebAppPhase `json:"phase,omitempty"`

	// DesiredReplicas is the replica count Steward is converging to: spec.replicas,
	// or the autoscaler's current choice.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`

	// Replicas is the number of pods the Deployment runs, of any version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// UpdatedReplicas is the number of pods that run the current spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// Selector is the label selector of the WebApp's pods, in string form. It
	// backs the scale subresource, so a HorizontalPodAutoscaler can target a WebApp.
	// +optional
	Selector string `json:"selector,omitempty"`

	// URL is where the WebApp answers: the Ingress URL when one is configured,
	// otherwise the in-cluster Service URL.
	// +optional
	URL string `json:"url,omitempty"`

	// Conditions are Ready, Progressing and Degraded. Ready summarizes the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebApp is a stateless web service: Steward runs it as a Deployment behind a
// Service, with an optional Ingress, HorizontalPodAutoscaler and
// PodDisruptionBudget, and rolls out changes safely.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=wa,categories=steward
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=".spec.image"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=".status.desiredReplicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=".status.url",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type WebApp struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec WebAppSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppList is a list of WebApps.
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WebApps.
	Items []WebApp `json:"items"`
}
