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

// StackEnvironment selects an AppStack's profile of defaults.
// +kubebuilder:validation:Enum=development;staging;production
type StackEnvironment string

// Stack environments.
const (
	StackDevelopment StackEnvironment = "development"
	StackStaging     StackEnvironment = "staging"
	StackProduction  StackEnvironment = "production"
)

// AppStackSpec is a whole application: its databases, caches and web apps,
// their dependencies, shared configuration, ingress and monitoring.
// +kubebuilder:validation:XValidation:rule="!has(self.apps) || self.apps.all(a, !has(a.dependsOn) || a.dependsOn.all(n, (has(self.databases) && self.databases.exists(d, d.name == n)) || (has(self.caches) && self.caches.exists(c, c.name == n)) || self.apps.exists(o, o.name == n)))",message="apps: dependsOn names a component the stack does not have",fieldPath=".apps"
// +kubebuilder:validation:XValidation:rule="!has(self.caches) || self.caches.all(a, !has(a.dependsOn) || a.dependsOn.all(n, (has(self.databases) && self.databases.exists(d, d.name == n)) || self.caches.exists(c, c.name == n) || (has(self.apps) && self.apps.exists(o, o.name == n))))",message="caches: dependsOn names a component the stack does not have",fieldPath=".caches"
// +kubebuilder:validation:XValidation:rule="!has(self.databases) || self.databases.all(a, !has(a.dependsOn) || a.dependsOn.all(n, self.databases.exists(d, d.name == n) || (has(self.caches) && self.caches.exists(c, c.name == n)) || (has(self.apps) && self.apps.exists(o, o.name == n))))",message="databases: dependsOn names a component the stack does not have",fieldPath=".databases"
// +kubebuilder:validation:XValidation:rule="!has(self.apps) || self.apps.all(a, !has(a.database) || (has(self.databases) && self.databases.exists(d, d.name == a.database.ref)))",message="apps: database.ref names a database the stack does not have",fieldPath=".apps"
// +kubebuilder:validation:XValidation:rule="!has(self.apps) || self.apps.all(a, !has(a.cache) || (has(self.caches) && self.caches.exists(c, c.name == a.cache.ref)))",message="apps: cache.ref names a cache the stack does not have",fieldPath=".apps"
// +kubebuilder:validation:XValidation:rule="!has(self.databases) || self.databases.all(d, (!has(self.caches) || !self.caches.exists(c, c.name == d.name)) && (!has(self.apps) || !self.apps.exists(a, a.name == d.name)))",message="component names must be unique across databases, caches and apps"
// +kubebuilder:validation:XValidation:rule="!has(self.caches) || !has(self.apps) || self.caches.all(c, !self.apps.exists(a, a.name == c.name))",message="component names must be unique across databases, caches and apps"
// +kubebuilder:validation:XValidation:rule="!has(self.ingress) || (has(self.apps) && self.apps.exists(a, has(a.expose)))",message="ingress needs at least one app with expose.path",fieldPath=".ingress"
type AppStackSpec struct {
	// Environment selects the profile of defaults: development, staging or
	// production. A value set in a component always wins over the profile.
	// +required
	Environment StackEnvironment `json:"environment"`

	// Databases are the stack's Databases, each named <stack>-<name>.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Databases []StackDatabase `json:"databases,omitempty"`

	// Caches are the stack's Caches, each named <stack>-<name>.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Caches []StackCache `json:"caches,omitempty"`

	// Apps are the stack's WebApps, each named <stack>-<name>.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Apps []StackApp `json:"apps,omitempty"`

	// Config is configuration shared by the stack's apps: Steward renders it
	// as the AppConfig <stack>-config, and every app uses it (the keys in
	// its configKeys, or every key).
	// +optional
	Config *StackConfig `json:"config,omitempty"`

	// Ingress routes a host's paths to the apps that set expose.
	// +optional
	Ingress *StackIngress `json:"ingress,omitempty"`

	// Monitoring makes Prometheus scrape the apps: through ServiceMonitors
	// when the Prometheus Operator's CRDs are installed, through
	// prometheus.io annotations on the pods otherwise.
	// +optional
	Monitoring *StackMonitoring `json:"monitoring,omitempty"`

	// Backup is where the databases' backups go when the profile (staging,
	// production) or a database's backup turns them on. Without it,
	// profile backups are off and status.effective says why.
	// +optional
	Backup *StackBackup `json:"backup,omitempty"`

	// DependencyTimeout turns a component's wait for its dependencies into
	// Degraded once it has waited this long. Without it a wait is only
	// Progressing, however long.
	// +optional
	DependencyTimeout *metav1.Duration `json:"dependencyTimeout,omitempty"`
}

// StackDatabase is one Database of a stack. Fields left unset take the
// environment's profile, then the Database's own defaults.
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !has(self.engine) || self.engine != 'postgres' || self.version.matches('^(13|14|15|16|17)([.][0-9]+)?$')",message="version: PostgreSQL versions 13 to 17 are supported",fieldPath=".version"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !has(self.engine) || self.engine != 'mysql' || self.version.matches('^8[.](0|4)([.][0-9]+)?$')",message="version: MySQL 8.0 and 8.4 are supported",fieldPath=".version"
// +kubebuilder:validation:XValidation:rule="!has(self.version) || !has(self.engine) || self.engine != 'mariadb' || self.version.matches('^(10[.]11|11[.]4)([.][0-9]+)?$')",message="version: MariaDB 10.11 and 11.4 are supported",fieldPath=".version"
type StackDatabase struct {
	// Name is the component's name; the Database is <stack>-<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'config'",message="config is the name of the stack's AppConfig component"
	Name string `json:"name"`

	// DependsOn names components of the stack that must be Ready before this one is created.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	DependsOn []string `json:"dependsOn,omitempty"`

	// Engine is postgres (the default), mysql or mariadb.
	// +optional
	// +kubebuilder:validation:Enum=postgres;mysql;mariadb
	Engine DatabaseEngine `json:"engine,omitempty"`

	// Version is the engine version; by default the newest supported major
	// (PostgreSQL 17, MySQL 8.4, MariaDB 11.4).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Version string `json:"version,omitempty"`

	// Size is the Database's preset: small, medium or large.
	// +optional
	// +kubebuilder:validation:Enum=small;medium;large
	Size DatabaseSize `json:"size,omitempty"`

	// Replicas is the number of instances. Profile: production 3, staging 2, development 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources are each instance's compute requests and limits.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// StorageSize is each instance's volume. Profile: production 100Gi,
	// staging 50Gi, development 10Gi.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`

	// StorageClassName is the volumes' StorageClass; the cluster's default when unset.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// DatabaseName is the database created for the application ("app" by default).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	DatabaseName string `json:"databaseName,omitempty"`

	// Owner is the application's user ("app" by default).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	Owner string `json:"owner,omitempty"`

	// Parameters are engine settings, as in a Database.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	Parameters map[string]string `json:"parameters,omitempty"`

	// DeletionPolicy is Retain (the default: the volumes and credentials
	// outlive the Database) or Delete.
	// +optional
	// +kubebuilder:validation:Enum=Retain;Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Backups turns scheduled backups on or off and sets their schedule and
	// retention; they go to spec.backup.destination. Profile: daily with 30
	// days' retention in production, daily with 7 days' in staging, off in
	// development.
	// +optional
	Backups *StackDatabaseBackups `json:"backups,omitempty"`
}

// StackDatabaseBackups overrides the profile's backups of one database.
type StackDatabaseBackups struct {
	// Enabled turns the backups on or off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Schedule is when to run, in cron format or a macro such as @daily.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`

	// Retention says which stored backups to keep.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`
}

// StackCache is one Cache of a stack.
type StackCache struct {
	// Name is the component's name; the Cache is <stack>-<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'config'",message="config is the name of the stack's AppConfig component"
	Name string `json:"name"`

	// DependsOn names components of the stack that must be Ready before this one is created.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	DependsOn []string `json:"dependsOn,omitempty"`

	CacheSpec `json:",inline"`
}

// StackApp is one WebApp of a stack. Its database and cache bindings name
// the stack's components, not Steward objects, and imply a dependency.
type StackApp struct {
	// Name is the component's name; the WebApp is <stack>-<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'config'",message="config is the name of the stack's AppConfig component"
	Name string `json:"name"`

	// DependsOn names components of the stack that must be Ready before this one is created.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	DependsOn []string `json:"dependsOn,omitempty"`

	// Expose routes a path of spec.ingress's host to the app.
	// +optional
	Expose *StackExpose `json:"expose,omitempty"`

	// ConfigKeys are the keys of spec.config the app uses; every key when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	ConfigKeys []string `json:"configKeys,omitempty"`

	WebAppSpec `json:",inline"`
}

// StackExpose is the path an app answers under on the stack's ingress.
type StackExpose struct {
	// Path is the path prefix, e.g. /api.
	// +required
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path"`
}

// StackConfig is configuration shared by a stack's apps.
type StackConfig struct {
	// Data maps keys to values, with the references and rules of an
	// AppConfig's data. The environment is development → dev, staging →
	// staging, production → prod.
	// +optional
	// +kubebuilder:validation:MaxProperties=1024
	Data map[string]string `json:"data,omitempty"`

	// SecretData maps keys to values read from Secrets, as in an AppConfig.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	SecretData map[string]SecretValueRef `json:"secretData,omitempty"`
}

// StackIngress routes one host to the stack's exposed apps.
type StackIngress struct {
	// Host is the fully qualified host name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host"`

	// TLSSecretName names the Secret holding the host's certificate; TLS is
	// off without it.
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`

	// ClassName is the IngressClass; the cluster's default when unset.
	// +optional
	ClassName *string `json:"className,omitempty"`
}

// StackMonitoring turns monitoring of a stack's apps on.
type StackMonitoring struct {
	// Enabled turns monitoring on.
	// +required
	Enabled bool `json:"enabled"`

	// Path is where the apps serve metrics.
	// +optional
	// +kubebuilder:default="/metrics"
	Path string `json:"path,omitempty"`
}

// StackBackup is where a stack's database backups go.
type StackBackup struct {
	// Destination is the object store.
	// +required
	Destination BackupDestination `json:"destination"`
}

// AppStackPhase is a one-word summary of an AppStack's state.
// +kubebuilder:validation:Enum=Pending;Deploying;Ready;Degraded;Deleting
type AppStackPhase string

// AppStack phases.
const (
	AppStackPending   AppStackPhase = "Pending"
	AppStackDeploying AppStackPhase = "Deploying"
	AppStackReady     AppStackPhase = "Ready"
	AppStackDegraded  AppStackPhase = "Degraded"
	AppStackDeleting  AppStackPhase = "Deleting"
)

// StackComponentStatus is the health of one component.
type StackComponentStatus struct {
	// Name is the component's name in the stack.
	// +required
	Name string `json:"name"`

	// Kind is Database, Cache, WebApp or AppConfig.
	// +required
	Kind string `json:"kind"`

	// Object is the name of the Steward object.
	// +required
	Object string `json:"object"`

	// Ready is true when the object's Ready condition is True for its current spec.
	// +required
	Ready bool `json:"ready"`

	// Reason is the object's Ready reason, or Blocked while the component
	// waits for a dependency.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message explains the reason, e.g. "waiting for database orders-db: UpgradeBlocked".
	// +optional
	Message string `json:"message,omitempty"`

	// Since is when Ready or Reason last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// EffectiveSetting is one setting applied to a component and where it came from.
type EffectiveSetting struct {
	// Name is the setting, e.g. replicas or storageSize.
	// +required
	Name string `json:"name"`

	// Value is the value applied.
	// +required
	Value string `json:"value"`

	// Source is spec (set in the component), profile (the environment's
	// default) or default (Steward's default for the kind).
	// +required
	// +kubebuilder:validation:Enum=spec;profile;default
	Source string `json:"source"`
}

// StackEffective is the settings applied to one component.
type StackEffective struct {
	// Component is the component's name.
	// +required
	Component string `json:"component"`

	// Settings are the profile-governed settings, in a fixed order.
	// +optional
	// +listType=atomic
	Settings []EffectiveSetting `json:"settings,omitempty"`
}

// StackEndpoint is a URL the stack serves.
type StackEndpoint struct {
	// Name is "ingress" or an app's name.
	// +required
	Name string `json:"name"`

	// URL is where it answers.
	// +required
	URL string `json:"url"`
}

// AppStackStatus is the observed state of an AppStack.
type AppStackStatus struct {
	// ObservedGeneration is the generation the status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state: Pending, Deploying, Ready, Degraded or Deleting.
	// +optional
	Phase AppStackPhase `json:"phase,omitempty"`

	// Components is the health of each component, in dependency order.
	// +optional
	// +listType=atomic
	Components []StackComponentStatus `json:"components,omitempty"`

	// Effective shows the profile-governed settings applied to each component.
	// +optional
	// +listType=atomic
	Effective []StackEffective `json:"effective,omitempty"`

	// Endpoints are the ingress URL and the apps' URLs.
	// +optional
	// +listType=atomic
	Endpoints []StackEndpoint `json:"endpoints,omitempty"`

	// FirstReadyTime is when the stack was first Ready, every component
	// created and Ready; unset until then, and kept afterwards. With
	// metadata.creationTimestamp it tells how long the whole application
	// took to come up. For a stack already Ready when its operator first
	// set it, it is when the stack last became Ready.
	// +optional
	FirstReadyTime *metav1.Time `json:"firstReadyTime,omitempty"`

	// Conditions are Ready, Progressing and Degraded. Ready summarizes the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AppStack is a whole application: databases, caches and web apps created
// in dependency order, with defaults from an environment profile, shared
// configuration, an ingress and monitoring. Steward creates Steward objects
// only, each reconciled by its own controller, and deletes them in reverse
// order.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 30 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="an AppStack's name must be a DNS label of at most 30 characters that starts with a letter: it prefixes its components' names"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.databases) || self.spec.databases.all(d, self.metadata.name.size() + 1 + d.name.size() <= 40)",message="a Database's name <stack>-<database> must be at most 40 characters"
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=".spec.environment"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].reason",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type AppStack struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec AppStackSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status AppStackStatus `json:"status,omitempty"`
}

// AppStackList is a list of AppStacks.
// +kubebuilder:object:root=true
type AppStackList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the AppStacks.
	Items []AppStack `json:"items"`
}
