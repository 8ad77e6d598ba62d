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

// DatabaseEngine names a database server.
// +kubebuilder:validation:Enum=postgres;mysql;mariadb
type DatabaseEngine string

const (
	// EnginePostgres is PostgreSQL.
	EnginePostgres DatabaseEngine = "postgres"
	// EngineMySQL is MySQL.
	EngineMySQL DatabaseEngine = "mysql"
	// EngineMariaDB is MariaDB.
	EngineMariaDB DatabaseEngine = "mariadb"
)

// DatabaseSize is a preset of replicas and compute resources.
// +kubebuilder:validation:Enum=small;medium;large
type DatabaseSize string

const (
	// SizeSmall is 1 replica with 500m CPU, 512Mi memory and a 1Gi volume.
	SizeSmall DatabaseSize = "small"
	// SizeMedium is 2 replicas with 1 CPU, 1Gi memory and a 10Gi volume each.
	SizeMedium DatabaseSize = "medium"
	// SizeLarge is 3 replicas with 2 CPUs, 2Gi memory and a 50Gi volume each.
	SizeLarge DatabaseSize = "large"
)

// DefaultStorageSizes are the volume sizes of the size presets, for a
// Database that does not set storage.size.
var DefaultStorageSizes = map[DatabaseSize]resource.Quantity{
	SizeSmall:  resource.MustParse("1Gi"),
	SizeMedium: resource.MustParse("10Gi"),
	SizeLarge:  resource.MustParse("50Gi"),
}

// StorageSize is the size each instance's volume asks for: storage.size,
// or the size preset's (small when unset).
func (s *DatabaseSpec) StorageSize() resource.Quantity {
	if s.Storage.Size != nil {
		return s.Storage.Size.DeepCopy()
	}
	if q, ok := DefaultStorageSizes[s.Size]; ok {
		return q.DeepCopy()
	}
	return DefaultStorageSizes[SizeSmall].DeepCopy()
}

// DeletionPolicy says what happens to a Database's data when the Database is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionRetain keeps the volumes and the credentials Secrets. A Database
	// created again with the same name adopts them.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete deletes the volumes and the credentials Secrets.
	DeletionDelete DeletionPolicy = "Delete"
)

// DatabaseSpec declares a PostgreSQL or MySQL database server with its
// replicas, storage and credentials.
// +kubebuilder:validation:XValidation:rule="self.engine != 'postgres' || self.version.matches('^(13|14|15|16|17)([.][0-9]+)?$')",message="version: PostgreSQL versions 13 to 17 are supported, as a major (\"16\") or major.minor (\"16.4\")",fieldPath=".version",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="self.engine != 'mysql' || self.version.matches('^8[.](0|4)([.][0-9]+)?$')",message="version: MySQL 8.0 and 8.4 are supported, e.g. \"8.4\" or \"8.4.3\"",fieldPath=".version",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="self.engine != 'mariadb' || self.version.matches('^(10[.]11|11[.]4)([.][0-9]+)?$')",message="version: MariaDB 10.11 and 11.4 are supported, e.g. \"11.4\" or \"11.4.4\"",fieldPath=".version",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.engine != 'postgres' || self.parameters.all(k, !(k.lowerAscii() in ['port', 'listen_addresses', 'data_directory', 'config_file', 'hba_file', 'ident_file', 'external_pid_file', 'unix_socket_directories', 'wal_level', 'max_wal_senders', 'hot_standby', 'primary_conninfo', 'primary_slot_name', 'restore_command', 'archive_mode', 'archive_command', 'recovery_target', 'password_encryption']))",messageExpression="'parameters: ' + self.parameters.filter(k, k.lowerAscii() in ['port', 'listen_addresses', 'data_directory', 'config_file', 'hba_file', 'ident_file', 'external_pid_file', 'unix_socket_directories', 'wal_level', 'max_wal_senders', 'hot_standby', 'primary_conninfo', 'primary_slot_name', 'restore_command', 'archive_mode', 'archive_command', 'recovery_target', 'password_encryption'])[0] + ' is set by Steward and cannot be overridden'",fieldPath=".parameters",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.engine == 'postgres' || self.parameters.all(k, !(k.lowerAscii().replace('-', '_') in ['port', 'bind_address', 'datadir', 'socket', 'pid_file', 'server_id', 'log_bin', 'relay_log', 'read_only', 'super_read_only', 'skip_networking', 'user', 'gtid_mode', 'enforce_gtid_consistency', 'log_replica_updates', 'log_slave_updates', 'report_host', 'init_file']))",messageExpression="'parameters: ' + self.parameters.filter(k, k.lowerAscii().replace('-', '_') in ['port', 'bind_address', 'datadir', 'socket', 'pid_file', 'server_id', 'log_bin', 'relay_log', 'read_only', 'super_read_only', 'skip_networking', 'user', 'gtid_mode', 'enforce_gtid_consistency', 'log_replica_updates', 'log_slave_updates', 'report_host', 'init_file'])[0] + ' is set by Steward and cannot be overridden'",fieldPath=".parameters",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.highAvailability) || !has(self.highAvailability.synchronousReplicas) || self.highAvailability.synchronousReplicas == 0 || self.engine == 'postgres' || (self.engine == 'mariadb' && self.highAvailability.synchronousReplicas == 1)",message="highAvailability.synchronousReplicas: synchronous replication is supported for PostgreSQL, and for MariaDB with 1 (semi-synchronous replication waits for one replica)",fieldPath=".highAvailability.synchronousReplicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.autoGrow) || quantity(string(self.storage.autoGrow.maximum)).compareTo(has(self.storage.size) ? quantity(string(self.storage.size)) : quantity(self.size == 'large' ? '50Gi' : self.size == 'medium' ? '10Gi' : '1Gi')) >= 0",message="storage.autoGrow.maximum must not be smaller than the volume size (storage.size, or the size preset's: 1Gi small, 10Gi medium, 50Gi large)",fieldPath=".storage.autoGrow.maximum",reason=FieldValueInvalid
type DatabaseSpec struct {
	// Engine is the database server: postgres, mysql or mariadb. It cannot be
	// changed after creation.
	// +optional
	// +kubebuilder:default=postgres
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine cannot be changed: create a new Database and restore a backup into it"
	Engine DatabaseEngine `json:"engine,omitempty"`

	// Version is the engine version: a major ("16", "8.4", "11.4") or a
	// major.minor ("16.4", "8.4.3"). Steward runs the engine's official image
	// of that tag. A minor change rolls out replicas first, then the primary;
	// a major change is refused with the UpgradeBlocked condition.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	Version string `json:"version"`

	// Image overrides the image derived from engine and version, e.g. for a
	// mirror. It must run the same engine and version.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`

	// Size is a preset: small is 1 replica with 500m CPU and 512Mi memory,
	// medium 2 replicas with 1 CPU and 1Gi, large 3 replicas with 2 CPUs and
	// 2Gi. Engine settings such as buffer sizes are tuned to the memory.
	// replicas and resources override the preset.
	// +optional
	// +kubebuilder:default=small
	Size DatabaseSize `json:"size,omitempty"`

	// Replicas is the number of instances: one primary and replicas-1
	// streaming replicas. Overrides the size preset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources are each instance's compute requests and limits. Overrides
	// the size preset; the memory limit (or request) drives engine tuning.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Storage is each instance's volume: its size (by default the size
	// preset's: 1Gi small, 10Gi medium, 50Gi large) and StorageClass.
	// +optional
	Storage DatabaseStorage `json:"storage,omitempty"`

	// DatabaseName is the database created for the application.
	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="databaseName cannot be changed"
	DatabaseName string `json:"databaseName,omitempty"`

	// Owner is the application's user; it owns DatabaseName.
	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['postgres', 'root', 'replicator', 'mysql', 'mariadb.sys', 'mysql.sys'])",message="owner must not be a name the engine or Steward reserves (postgres, root, replicator)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="owner cannot be changed"
	Owner string `json:"owner,omitempty"`

	// Parameters are engine settings, e.g. {"work_mem": "16MB"} for
	// PostgreSQL or {"long_query_time": "2"} for MySQL. They win over the
	// values tuned to the size. Settings Steward controls (ports, paths,
	// replication) are rejected. A change that the engine can reload is
	// reloaded; one that needs a restart rolls the pods one at a time.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	Parameters map[string]string `json:"parameters,omitempty"`

	// DeletionPolicy is what happens to the data when the Database is
	// deleted: Retain (the default) keeps the volumes and the credentials
	// Secrets, and a Database created again with the same name adopts them;
	// Delete removes them.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// CredentialsSecretRef names a Secret in the same namespace whose
	// "password" key is the owner's password (a "username" key, if present,
	// must equal owner). Without it Steward generates a password once and
	// keeps it. Steward copies the password into the <name>-credentials
	// Secret; the server takes a changed password when its pods restart.
	// +optional
	CredentialsSecretRef *corev1.LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// Backup schedules logical dumps of the database: Steward creates and
	// owns a Backup named <name>-backup once the Database is Ready.
	// +optional
	Backup *DatabaseBackup `json:"backup,omitempty"`

	// Bootstrap initialises a new Database with data. It cannot be changed
	// after creation.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bootstrap cannot be changed after creation"
	Bootstrap *DatabaseBootstrap `json:"bootstrap,omitempty"`

	// HighAvailability sets how a Database with replicas keeps accepting
	// writes when its primary is lost, and how many replicas must have a
	// commit before it is acknowledged.
	// +optional
	HighAvailability *DatabaseHighAvailability `json:"highAvailability,omitempty"`
}

// DatabaseHighAvailability tunes failover and synchronous replication.
// Failover and switchover are PostgreSQL's and MariaDB's; MySQL keeps its
// first instance as the primary.
type DatabaseHighAvailability struct {
	// SynchronousReplicas is how many replicas must have written a
	// transaction before the primary acknowledges its commit (PostgreSQL's
	// synchronous_standby_names = 'ANY n (*)'). With 1 or more no
	// acknowledged write is lost on failover, and commits wait while fewer
	// replicas stream. 0, the default, replicates asynchronously: a
	// failover may lose the last acknowledged writes, at most
	// maxFailoverLagBytes of them. Must be less than replicas. MariaDB
	// takes 0 or 1: semi-synchronous replication (AFTER_SYNC), which
	// waits for one replica.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	SynchronousReplicas int32 `json:"synchronousReplicas,omitempty"`

	// MaxFailoverLagBytes is how far behind the lost primary's last known
	// position a replica may be and still be promoted. When no replica is
	// that close, Steward does not fail over and says why in the Degraded
	// condition. Default 16 MiB.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxFailoverLagBytes *int64 `json:"maxFailoverLagBytes,omitempty"`

	// MaxFailoverLagTransactions is maxFailoverLagBytes for MariaDB, whose
	// positions count transactions (GTID sequence numbers), not bytes: how
	// many transactions behind the lost primary's last known position a
	// replica may be and still be promoted. Default 1000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxFailoverLagTransactions *int64 `json:"maxFailoverLagTransactions,omitempty"`

	// FenceAfterSeconds is how long a primary that Steward cannot reach
	// keeps accepting writes while not every replica streams from it. Past
	// it the primary stops its server by itself, and only then is a replica
	// promoted: a failover after a network cut or a lost node takes about
	// this long plus a few seconds. Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=300
	FenceAfterSeconds *int32 `json:"fenceAfterSeconds,omitempty"`
}

// DatabaseBackup is a Database's backup schedule.
type DatabaseBackup struct {
	// Enabled turns the backups on. Turning it off deletes the Backup object
	// (the stored dumps stay).
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// Schedule is when to run, in cron format or a macro such as @daily.
	// +optional
	// +kubebuilder:default="0 2 * * *"
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || self.matches('^\\\\S+( \\\\S+){4}$')",message="schedule must be five cron fields (minute hour day-of-month month day-of-week) or a macro such as @daily"
	Schedule string `json:"schedule,omitempty"`

	// TimeZone is the IANA time zone of the schedule.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone *string `json:"timeZone,omitempty"`

	// Retention says which stored backups to keep.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`

	// Destination is the object store the dumps go to. Without a prefix,
	// the dumps go in the folder <namespace>/<name>.
	// +required
	Destination BackupDestination `json:"destination"`
}

// DatabaseBootstrap says how a new Database gets its first data.
type DatabaseBootstrap struct {
	// FromBackup restores a stored dump into the new Database before it is
	// Ready. This is also how a Database moves to a new major version: back
	// up the old one, create a new Database of the new version from that
	// backup, then move the applications.
	// +required
	FromBackup RestoreSource `json:"fromBackup"`
}

// DatabaseStorage is the volume of each instance.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.size) || (has(self.size) && quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0)",message="storage.size cannot shrink or be removed: volumes can only grow",fieldPath=".size"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storage.storageClassName cannot be changed"
type DatabaseStorage struct {
	// Size is the volume size, e.g. "10Gi"; the size preset's when unset
	// (1Gi small, 10Gi medium, 50Gi large). It can grow when the storage
	// class allows volume expansion, never shrink; once set it stays set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.size must be more than 0"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName selects the StorageClass; the cluster default when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// AutoGrow grows the volumes before they fill: when any instance's
	// volume is used to thresholdPercent or more, every volume of the
	// Database grows by incrementPercent of its size, up to maximum. The
	// storage class must allow volume expansion. Volumes never shrink: the
	// grown size stays (status.storageSize shows it) even when autoGrow is
	// removed.
	// +optional
	AutoGrow *DatabaseAutoGrow `json:"autoGrow,omitempty"`
}

// DatabaseAutoGrow says when and how far a Database's volumes grow by
// themselves.
type DatabaseAutoGrow struct {
	// ThresholdPercent is how full (used bytes over the file system's
	// capacity, as the instance reports it) any instance's volume may get
	// before every volume grows. 50 to 95; default 80.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=95
	ThresholdPercent int32 `json:"thresholdPercent,omitempty"`

	// IncrementPercent is how much one growth adds, in percent of the
	// current size, rounded up to a whole MiB: 64Mi grows to 77Mi at 20.
	// 10 to 100; default 20. A volume that is still over the threshold
	// after growing grows again once the resize is done.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	IncrementPercent int32 `json:"incrementPercent,omitempty"`

	// Maximum is the largest size the volumes grow to, e.g. "100Gi". It
	// must not be smaller than the volume size. Once reached, Steward
	// stops growing and says so in the StorageGrowthBlocked condition.
	// +required
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.autoGrow.maximum must be more than 0"
	Maximum resource.Quantity `json:"maximum"`
}

// DatabasePhase is a one-word summary of a Database's state.
// +kubebuilder:validation:Enum=Pending;Creating;Running;Updating;Degraded;Blocked
type DatabasePhase string

const (
	// DatabasePending means Steward has not created the instances yet.
	DatabasePending DatabasePhase = "Pending"
	// DatabaseCreating means the first instances are starting.
	DatabaseCreating DatabasePhase = "Creating"
	// DatabaseRunning means every instance runs the desired spec and is ready.
	DatabaseRunning DatabasePhase = "Running"
	// DatabaseUpdating means a scale, rollout or volume expansion is in progress.
	DatabaseUpdating DatabasePhase = "Updating"
	// DatabaseDegraded means instances are unavailable or a change failed.
	DatabaseDegraded DatabasePhase = "Degraded"
	// DatabaseBlocked means the spec asks for a change Steward refuses to
	// make, such as a major version upgrade in place.
	DatabaseBlocked DatabasePhase = "Blocked"
)

// DatabaseStatus is the observed state of a Database.
type DatabaseStatus struct {
	// ObservedGeneration is the metadata.generation this status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state.
	// +optional
	Phase DatabasePhase `json:"phase,omitempty"`

	// Version is the engine version the instances run.
	// +optional
	Version string `json:"version,omitempty"`

	// Replicas is the number of instances that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready instances.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// StorageSize is the size each instance's volume asks for:
	// spec.storage.size, or the size preset's default; never less than the
	// size the volumes were created with or grown to by storage.autoGrow,
	// as volumes never shrink.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`

	// Primary is the name of the pod that accepts writes.
	// +optional
	Primary string `json:"primary,omitempty"`

	// Endpoint is the read-write address: the DNS name and port of the
	// Service that selects the primary.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// ReadEndpoint is the read-only address: the DNS name and port of the
	// Service that selects the replicas. Empty with a single instance.
	// +optional
	ReadEndpoint string `json:"readEndpoint,omitempty"`

	// CredentialsSecret names the Secret with the owner's username,
	// password, host, port, database and a connection uri.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`

	// LastBackup is the newest successful run of the Backup that
	// spec.backup creates.
	// +optional
	LastBackup *BackupRun `json:"lastBackup,omitempty"`

	// BootstrapRestore names the Restore that loads spec.bootstrap.fromBackup.
	// +optional
	BootstrapRestore string `json:"bootstrapRestore,omitempty"`

	// Term counts the changes of primary: 0 until a primary first served,
	// then 1, and one more at each failover or switchover. Every instance
	// refuses orders of an older term.
	// +optional
	Term int64 `json:"term,omitempty"`

	// Instances are what each instance reported last: role, readiness and
	// how far behind the primary it is.
	// +optional
	// +listType=map
	// +listMapKey=name
	Instances []DatabaseInstance `json:"instances,omitempty"`

	// RoleChange is the failover or switchover under way.
	// +optional
	RoleChange *DatabaseRoleChange `json:"roleChange,omitempty"`

	// LastRoleChange is the last completed failover or switchover.
	// +optional
	LastRoleChange *DatabaseRoleChange `json:"lastRoleChange,omitempty"`

	// Conditions are Ready, Progressing, Degraded and UpgradeBlocked,
	// Bootstrapped with spec.bootstrap and StorageGrowthBlocked with
	// spec.storage.autoGrow. Ready summarizes the others.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DatabaseInstance is one instance as it reported itself.
type DatabaseInstance struct {
	// Name is the instance's pod.
	Name string `json:"name"`
	// Role is primary or replica; empty when the instance does not run
	// its server.
	// +optional
	Role string `json:"role,omitempty"`
	// Ready is true when the instance serves in its role: a replica that
	// streams from the primary.
	Ready bool `json:"ready"`
	// LagBytes is how far the replica is behind the primary's position,
	// in bytes of WAL (PostgreSQL).
	// +optional
	LagBytes *int64 `json:"lagBytes,omitempty"`
	// LagTransactions is how far the replica is behind the primary's
	// position, in transactions (MariaDB).
	// +optional
	LagTransactions *int64 `json:"lagTransactions,omitempty"`
	// Message says why the instance is not ready.
	// +optional
	Message string `json:"message,omitempty"`
	// VolumeUsedBytes is how much of the file system of the instance's
	// data volume is used, as the instance last reported it.
	// +optional
	VolumeUsedBytes *int64 `json:"volumeUsedBytes,omitempty"`
	// VolumeCapacityBytes is the size of that file system (a little less
	// than the volume's, for the file system's own records).
	// +optional
	VolumeCapacityBytes *int64 `json:"volumeCapacityBytes,omitempty"`
}

// RoleChangeType is Failover or Switchover.
// +kubebuilder:validation:Enum=Failover;Switchover
type RoleChangeType string

// The kinds of role change.
const (
	// RoleChangeFailover: the primary was lost and a replica promoted.
	RoleChangeFailover RoleChangeType = "Failover"
	// RoleChangeSwitchover: the primary handed over to a replica on
	// request or for a restart.
	RoleChangeSwitchover RoleChangeType = "Switchover"
)

// DatabaseRoleChange is one failover or switchover.
type DatabaseRoleChange struct {
	// Type is Failover or Switchover.
	Type RoleChangeType `json:"type"`
	// From is the former primary; To the instance promoted.
	From string `json:"from"`
	To   string `json:"to"`
	// Term is the term the change starts.
	Term int64 `json:"term"`
	// Reason says why: the primary's loss, or what asked for it.
	Reason string `json:"reason"`
	// StartedAt is when Steward saw the primary lost or began the
	// switchover.
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is when the new primary accepted writes.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// WriteGapMilliseconds is how long no instance accepted writes, as
	// Steward measured it: from the primary last seen serving to the new
	// one serving.
	// +optional
	WriteGapMilliseconds int64 `json:"writeGapMilliseconds,omitempty"`
}

// Database is a PostgreSQL or MySQL server with generated credentials, tuned
// configuration, storage, streaming replicas and safe upgrades.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=db,categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="a Database's name has at most 40 characters: its children (<name>-headless, <name>-backup-now-..., pod names) must fit in 63"
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=".spec.engine"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=".status.primary",priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=".status.endpoint",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type Database struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec DatabaseSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status DatabaseStatus `json:"status,omitempty"`
}

// DatabaseList is a list of Databases.
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Databases.
	Items []Database `json:"items"`
}
