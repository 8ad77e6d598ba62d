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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CacheEngine is the in-memory store a Cache runs.
// +kubebuilder:validation:Enum=memcached;redis
type CacheEngine string

const (
	// EngineMemcached runs memcached: a Deployment of independent nodes that
	// clients shard keys across.
	EngineMemcached CacheEngine = "memcached"
	// EngineRedis runs Redis: a StatefulSet with one primary (ordinal 0) and
	// read-only replicas of it.
	EngineRedis CacheEngine = "redis"
)

// CacheVersions lists, per engine, the versions a Cache may ask for, oldest
// first; the last is the default. The admission rule on CacheSpec repeats this
// list, and a test proves the two agree: change both together.
var CacheVersions = map[CacheEngine][]string{
	EngineMemcached: {"1.6"},
	EngineRedis:     {"7.0", "7.2", "7.4"},
}

// CacheSpec declares an in-memory cache: its engine, version, size and
// number of nodes.
// +kubebuilder:validation:XValidation:rule="!has(self.version) || (self.engine == 'redis' ? self.version in ['7.0', '7.2', '7.4'] : self.version in ['1.6'])",message="unsupported version: memcached supports 1.6; redis supports 7.0, 7.2 and 7.4",fieldPath=".version"
// +kubebuilder:validation:XValidation:rule="self.engine == 'redis' || !has(self.redis)",message="redis settings, persistence included, apply only to engine redis",fieldPath=".redis",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(has(self.redis) && has(self.redis.persistence)) == (has(oldSelf.redis) && has(oldSelf.redis.persistence))",message="redis.persistence cannot be added or removed after creation: a StatefulSet's volume claim templates are immutable",fieldPath=".redis"
type CacheSpec struct {
	// Engine is the cache server: memcached (the default) or redis. It cannot
	// change after creation.
	// +optional
	// +kubebuilder:default=memcached
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable"
	Engine CacheEngine `json:"engine,omitempty"`

	// Version is the engine's major.minor version: 1.6 for memcached; 7.0,
	// 7.2 or 7.4 for redis. It picks the official image, memcached:<version>
	// or redis:<version>. Defaults to the newest supported version.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Version string `json:"version,omitempty"`

	// Image overrides the container image, e.g. a mirror of the official one.
	// It must be compatible with the official image of Version: same
	// entrypoint, binaries and user.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="image must not contain spaces"
	Image string `json:"image,omitempty"`

	// Replicas is the number of cache nodes. For memcached every node holds
	// its own share of the keys; for redis, node 0 is the primary and the
	// others replicate it. Defaults to 1. `kubectl scale` sets it through the
	// scale subresource.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`

	// Memory is each node's memory limit, e.g. 256Mi. The engine's own limit is
	// derived from it with headroom for connections and bookkeeping: memcached
	// gets 90% as -m, redis 75% as maxmemory but at most Memory less 16Mi
	// (half of a Memory under 32Mi). Defaults to 64Mi.
	// +optional
	// +kubebuilder:default="64Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('16Mi')) >= 0",message="memory must be at least 16Mi"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Resources overrides the container's compute resources. Unset fields keep
	// Steward's defaults: requests of 50m CPU and Memory, a limit of Memory.
	// The engine's limit is still derived from Memory.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Redis holds settings only the redis engine has.
	// +optional
	Redis *RedisSettings `json:"redis,omitempty"`
}

// MaxMemoryPolicy is how redis evicts keys when maxmemory is reached.
// +kubebuilder:validation:Enum=noeviction;allkeys-lru;allkeys-lfu;allkeys-random;volatile-lru;volatile-lfu;volatile-random;volatile-ttl
type MaxMemoryPolicy string

// RedisSettings are the redis engine's settings.
type RedisSettings struct {
	// MaxMemoryPolicy is redis' maxmemory-policy: what happens when memory is
	// full. Defaults to allkeys-lru (evict the least recently used key), or to
	// noeviction (refuse writes) when persistence is enabled, as persisted data
	// is usually not meant to disappear.
	// +optional
	MaxMemoryPolicy MaxMemoryPolicy `json:"maxMemoryPolicy,omitempty"`

	// Persistence keeps the data on a PersistentVolumeClaim per node with an
	// append-only file, so it survives restarts. It cannot change after
	// creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="redis.persistence is immutable: a StatefulSet's volume claim templates cannot change"
	Persistence *RedisPersistence `json:"persistence,omitempty"`

	// Auth says whether clients must authenticate. Unless it is turned off,
	// every client and every replica authenticates with the password in the
	// Secret <name>-credentials (key password), which Steward generates.
	// +optional
	Auth *RedisAuth `json:"auth,omitempty"`
}

// RedisAuth configures the password redis asks of its clients.
type RedisAuth struct {
	// Enabled makes redis refuse every command but AUTH from a client that
	// has not authenticated with the password in the Secret
	// <name>-credentials, key password. Defaults to true. Changing it
	// restarts the nodes; the Secret is kept when it is turned off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RedisPersistence configures append-only-file persistence on a volume.
type RedisPersistence struct {
	// Enabled turns persistence on.
	// +required
	Enabled bool `json:"enabled"`

	// Size is the size of each node's volume. Defaults to 1Gi.
	// +optional
	// +kubebuilder:default="1Gi"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName selects the StorageClass of the volumes. The cluster's
	// default class is used when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// CachePhase is a one-word summary of a Cache's state.
// +kubebuilder:validation:Enum=Pending;Deploying;Running;Degraded
type CachePhase string

const (
	// CachePending means Steward has not yet seen the Cache's workload.
	CachePending CachePhase = "Pending"
	// CacheDeploying means a rollout or scale is in progress.
	CacheDeploying CachePhase = "Deploying"
	// CacheRunning means every node runs the current spec and is ready.
	CacheRunning CachePhase = "Running"
	// CacheDegraded means nodes are unavailable or a child could not be applied.
	CacheDegraded CachePhase = "Degraded"
)

// CacheStatus is the observed state of a Cache.
type CacheStatus struct {
	// ObservedGeneration is the metadata.generation this status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state: Pending, Deploying, Running or Degraded.
	// +optional
	Phase CachePhase `json:"phase,omitempty"`

	// Version is the engine version Steward runs, spec.version or its default.
	// +optional
	Version string `json:"version,omitempty"`

	// Replicas is the number of nodes the workload runs, of any version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready nodes.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Selector is the label selector of the Cache's pods, in string form. It
	// backs the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Nodes are the names of the memcached pods, sorted. Clients that shard
	// keys can list them; each also resolves through the headless Service.
	// +optional
	// +listType=atomic
	Nodes []string `json:"nodes,omitempty"`

	// Endpoint is the in-cluster address clients connect to, host:port. For
	// redis it is the primary; <name>-ro serves reads from every node.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// CredentialsSecret names the Secret with the redis password and the
	// connection details (keys password, host, port and uri), while redis
	// asks its clients for a password.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// Conditions are Ready, Progressing and Degraded. Ready summarizes the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Cache is an in-memory cache, memcached or redis, sized by memory: Steward
// runs it as a Deployment (memcached) or a StatefulSet with replicas (redis)
// behind Services, and derives the engine's memory settings from the limit.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 54 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="a Cache's name must be a DNS label of at most 54 characters that starts with a letter: it names Services such as <name>-headless"
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=".spec.engine"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=".status.endpoint",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type Cache struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec CacheSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status CacheStatus `json:"status,omitempty"`
}

// CacheList is a list of Caches.
// +kubebuilder:object:root=true
type CacheList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Caches.
	Items []Cache `json:"items"`
}
