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

// BackupSourceType names the kind of database a dump is taken of.
// +kubebuilder:validation:Enum=postgresql;mysql;mongodb
type BackupSourceType string

const (
	// SourcePostgreSQL dumps with pg_dump.
	SourcePostgreSQL BackupSourceType = "postgresql"
	// SourceMySQL dumps with mysqldump or mariadb-dump (MySQL and MariaDB).
	SourceMySQL BackupSourceType = "mysql"
	// SourceMongoDB dumps with mongodump.
	SourceMongoDB BackupSourceType = "mongodb"
)

// BackupSource is the database a Backup dumps.
// +kubebuilder:validation:XValidation:rule="has(self.databaseRef) != has(self.connection)",message="set exactly one of source.databaseRef and source.connection"
type BackupSource struct {
	// Type is the database's kind: postgresql, mysql (also MariaDB) or
	// mongodb. With databaseRef it must match the Database's engine.
	// +required
	Type BackupSourceType `json:"type"`

	// DatabaseRef names a Steward Database in the same namespace; host,
	// port, database name and credentials are taken from it.
	// +optional
	DatabaseRef *corev1.LocalObjectReference `json:"databaseRef,omitempty"`

	// Connection locates a database Steward does not manage.
	// +optional
	Connection *DatabaseConnection `json:"connection,omitempty"`
}

// DatabaseConnection is how to reach a database Steward does not manage.
type DatabaseConnection struct {
	// Host is the server's DNS name or address.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`

	// Port is the server's TCP port; the engine's default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Database is the database to dump or restore into.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Database string `json:"database"`

	// CredentialsSecretRef names a Secret in the same namespace with the
	// keys "username" and "password".
	// +required
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
}

// DestinationType names an object store.
// +kubebuilder:validation:Enum=s3;gcs;azure;file
type DestinationType string

const (
	// DestinationS3 is Amazon S3 or an S3-compatible store.
	DestinationS3 DestinationType = "s3"
	// DestinationGCS is Google Cloud Storage.
	DestinationGCS DestinationType = "gcs"
	// DestinationAzure is Azure Blob Storage.
	DestinationAzure DestinationType = "azure"
	// DestinationFile is a directory, for local development and tests.
	DestinationFile DestinationType = "file"
)

// BackupDestination is where dumps are stored.
// +kubebuilder:validation:XValidation:rule="self.type != 'file' || has(self.volume)",message="destination.volume is required for type file: the directory must be on a volume the backup pods mount"
// +kubebuilder:validation:XValidation:rule="!has(self.endpoint) || !self.endpoint.startsWith('http://') || (has(self.allowInsecureEndpoint) && self.allowInsecureEndpoint)",message="destination.endpoint is plain http://, which sends the dumps and the store's credentials or tokens unencrypted: use https://, or set destination.allowInsecureEndpoint: true for a store inside the cluster"
type BackupDestination struct {
	// Type is the store: s3, gcs, azure, or file for local development.
	// +required
	Type DestinationType `json:"type"`

	// Bucket is the bucket (s3, gcs), the container (azure), or the
	// directory inside volume (file).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Bucket string `json:"bucket"`

	// Prefix is the folder the objects go in, e.g. "prod/orders" (a "/" is
	// added when missing).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Prefix string `json:"prefix,omitempty"`

	// Endpoint is the store's URL for S3-compatible stores and emulators,
	// e.g. "https://minio.example:9000". A plain http:// URL is refused
	// unless allowInsecureEndpoint is set.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint string `json:"endpoint,omitempty"`

	// AllowInsecureEndpoint accepts an endpoint of plain http://. It is
	// meant for a store inside the cluster (an in-cluster MinIO, an
	// emulator) whose traffic never leaves a network you trust: over plain
	// HTTP the dumps cross the network unencrypted, and so do SAS tokens,
	// OAuth tokens and request signatures that can be replayed. Without it
	// such an endpoint is refused at admission. A Backup whose http://
	// endpoint it allows says so with the InsecureEndpoint condition and a
	// Warning event.
	// +optional
	AllowInsecureEndpoint bool `json:"allowInsecureEndpoint,omitempty"`

	// Region is the bucket's region, for s3.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// CredentialsSecretRef names a Secret in the same namespace with the
	// store's credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (s3);
	// service-account.json (gcs); AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY
	// or AZURE_STORAGE_SAS_TOKEN (azure). Credentials come from Secrets only.
	// +optional
	CredentialsSecretRef *corev1.LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// Volume names a PersistentVolumeClaim that holds the directory, for
	// type file.
	// +optional
	Volume *corev1.LocalObjectReference `json:"volume,omitempty"`
}

// BackupRetention says which stored backups to keep. A backup is kept when
// any rule keeps it; the newest successful backup is always kept, whatever
// the rules say. With no rule set, nothing is ever deleted.
type BackupRetention struct {
	// KeepLast keeps the newest N successful backups.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepLast *int32 `json:"keepLast,omitempty"`

	// KeepDaily keeps the newest successful backup of each of the last N
	// days that have one.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepDaily *int32 `json:"keepDaily,omitempty"`

	// KeepWeekly keeps the newest successful backup of each of the last N
	// ISO weeks that have one.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepWeekly *int32 `json:"keepWeekly,omitempty"`

	// KeepMonthly keeps the newest successful backup of each of the last N
	// months that have one.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepMonthly *int32 `json:"keepMonthly,omitempty"`

	// MaxAge keeps every successful backup younger than this, e.g. "720h";
	// older ones go unless another rule keeps them.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupSpec declares scheduled logical dumps of a database to an object store.
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || self.source.type != 'mongodb'",message="verify restores into a throwaway PostgreSQL, MySQL or MariaDB server: mongodb backups cannot be verified"
// +kubebuilder:validation:XValidation:rule="!has(self.pointInTime) || ((self.source.type == 'postgresql' || self.source.type == 'mysql') && has(self.source.databaseRef))",message="pointInTime archives the log of a PostgreSQL or MariaDB Database: set source.type postgresql or mysql, and source.databaseRef"
type BackupSpec struct {
	// Source is the database to dump.
	// +required
	Source BackupSource `json:"source"`

	// Destination is the object store the dumps go to.
	// +required
	Destination BackupDestination `json:"destination"`

	// Schedule is when to run, in cron format ("0 2 * * *") or a macro
	// (@hourly, @daily, @weekly, @monthly).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || self.matches('^\\\\S+( \\\\S+){4}$')",message="schedule must be five cron fields (minute hour day-of-month month day-of-week) or a macro such as @daily"
	Schedule string `json:"schedule"`

	// TimeZone is the IANA time zone of the schedule and of the retention's
	// days, weeks and months, e.g. "Europe/Berlin"; UTC when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone *string `json:"timeZone,omitempty"`

	// Suspend stops scheduled runs; runs asked for with the
	// steward.dev/backup-now annotation still happen.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Retention says which stored backups to keep. Pruning runs after each
	// confirmed upload and never deletes the newest successful backup.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`

	// Verify schedules verifications of the newest backup: it is restored
	// into a throwaway server in a Job's pod and compared with its
	// manifest, table by table. Not for mongodb.
	// +optional
	Verify *BackupVerify `json:"verify,omitempty"`

	// PointInTime archives the log (PostgreSQL's write-ahead log,
	// MariaDB's binary log) continuously beside the dumps, so that a
	// Restore can recover to any recent time. Only for a PostgreSQL or
	// MariaDB Database named by source.databaseRef.
	// +optional
	PointInTime *BackupPointInTime `json:"pointInTime,omitempty"`

	// DeletionPolicy is what happens to the stored dumps when the Backup is
	// deleted: Retain (the default) keeps them; Delete removes the dumps
	// and manifests of the Backup's database under the destination's
	// prefix, with a Job in the Backup's namespace that uses the store's
	// credentials, and keeps the Backup until that Job succeeded.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Image overrides the image the backup runs in, which must carry the
	// engine's dump tool (pg_dump, mysqldump or mariadb-dump, mongodump).
	// The official engine image is used by default.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`
}

// BackupRun is the outcome of one run.
type BackupRun struct {
	// Job is the name of the Job that ran.
	Job string `json:"job"`
	// StartTime is when the run started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the run ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Succeeded is true when the dump was uploaded and confirmed.
	Succeeded bool `json:"succeeded"`
	// Object is the stored dump's key.
	// +optional
	Object string `json:"object,omitempty"`
	// Size is the stored dump's size in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// SHA256 is the stored dump's checksum.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// DurationSeconds is how long the run took.
	// +optional
	DurationSeconds int64 `json:"durationSeconds,omitempty"`
	// Message says what failed, or what pruning did.
	// +optional
	Message string `json:"message,omitempty"`
}

// BackupPhase is a one-word summary of a Backup's state.
// +kubebuilder:validation:Enum=Pending;Scheduled;Suspended;Failed
type BackupPhase string

const (
	// BackupPending means the Backup waits for something on its way: its
	// Database to exist or be Ready, the check of its destination, the
	// deletion of its dumps, or a request Steward retries.
	BackupPending BackupPhase = "Pending"
	// BackupScheduled means runs are scheduled and the last one did not fail.
	BackupScheduled BackupPhase = "Scheduled"
	// BackupSuspended means spec.suspend holds scheduled runs back.
	BackupSuspended BackupPhase = "Suspended"
	// BackupFailed means the Backup needs the user: its spec cannot be used,
	// its destination failed its check, its last run failed, or no run
	// succeeded within twice the schedule's interval. The Ready condition
	// says which.
	BackupFailed BackupPhase = "Failed"
)

// BackupStatus is the observed state of a Backup.
type BackupStatus struct {
	// ObservedGeneration is the metadata.generation this status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the state: Pending, Scheduled, Suspended or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// LastBackup is the newest successful run.
	// +optional
	LastBackup *BackupRun `json:"lastBackup,omitempty"`

	// History lists the most recent runs, newest first, at most ten.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	History []BackupRun `json:"history,omitempty"`

	// NextScheduleTime is when the next scheduled run starts.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// SourceDatabase is the name of the database the dumps are of, as last
	// resolved; deletionPolicy Delete removes only that database's dumps.
	// +optional
	SourceDatabase string `json:"sourceDatabase,omitempty"`

	// LastManualRun is the value of the steward.dev/backup-now annotation
	// the last on-demand run answered.
	// +optional
	LastManualRun string `json:"lastManualRun,omitempty"`

	// DestinationCheck is the outcome of the newest check of the
	// destination, for the destination and credentials it names.
	// +optional
	DestinationCheck *DestinationCheck `json:"destinationCheck,omitempty"`

	// LastVerified is the outcome of the newest verification, scheduled
	// by spec.verify or asked for with steward.dev/verify-now.
	// +optional
	LastVerified *BackupVerification `json:"lastVerified,omitempty"`

	// NextVerificationTime is when the next scheduled verification starts.
	// +optional
	NextVerificationTime *metav1.Time `json:"nextVerificationTime,omitempty"`

	// LastManualVerification is the value of the steward.dev/verify-now
	// annotation the last on-demand verification answered.
	// +optional
	LastManualVerification string `json:"lastManualVerification,omitempty"`

	// PointInTime is the state of continuous archiving and the window a
	// Restore can recover to, with spec.pointInTime.
	// +optional
	PointInTime *PointInTimeStatus `json:"pointInTime,omitempty"`

	// Conditions are Ready, Reconciling, Stalled, DestinationChecked,
	// LastBackupSucceeded, BackupStale, with verifications Verified and
	// VerificationStale, and, for an allowed http:// endpoint,
	// InsecureEndpoint.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DestinationCheck is the outcome of a check of a Backup's destination: a
// Job in the Backup's namespace, with the store's credentials, lists the
// bucket, writes a small object, reads it back and deletes it.
type DestinationCheck struct {
	// Hash identifies what was checked: spec.destination and the
	// resourceVersion of its credentials Secret. A change of either
	// starts a new check.
	Hash string `json:"hash"`
	// Job is the name of the Job that checked.
	// +optional
	Job string `json:"job,omitempty"`
	// CompletionTime is when the Job ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Passed is true when every step succeeded.
	Passed bool `json:"passed"`
	// Reason says what failed, as the DestinationChecked condition's
	// reason: DestinationUnreachable, CredentialsRefused, BucketNotFound,
	// CredentialsMissing or DestinationCheckFailed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is the store's error, with every credential replaced by ***.
	// +optional
	Message string `json:"message,omitempty"`
}

// Backup takes scheduled logical dumps of a database, streams them to an
// object store with a checksum, and prunes old ones by a retention policy
// that never deletes the newest successful backup.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="a Backup's name has at most 50 characters: its CronJob and on-demand Jobs (<name>-now-<hash>) must fit"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.verify) || self.metadata.name.size() <= 45",message="a Backup with verify has at most 45 characters: its verification CronJob (<name>-verify) must fit"
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=".spec.source.type"
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=".spec.schedule"
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=".status.lastBackup.completionTime"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=".status.nextScheduleTime",priority=1
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=".status.lastVerified.reason",priority=1
// +kubebuilder:printcolumn:name="Last Verified",type=date,JSONPath=".status.lastVerified.time",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type Backup struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec BackupSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Backups.
	Items []Backup `json:"items"`
}

// RestoreSource is the dump a Restore reads.
// +kubebuilder:validation:XValidation:rule="has(self.backupRef) != has(self.destination)",message="set exactly one of source.backupRef and source.destination"
// +kubebuilder:validation:XValidation:rule="!has(self.pointInTime) || has(self.backupRef)",message="source.pointInTime recovers a Backup's archive: set source.backupRef"
// +kubebuilder:validation:XValidation:rule="!has(self.pointInTime) || !has(self.object) || self.object == 'latest'",message="source.pointInTime and source.object exclude each other: a point in time is recovered from base backups, not from a dump"
type RestoreSource struct {
	// BackupRef names a Backup in the same namespace; its destination is read.
	// +optional
	BackupRef *corev1.LocalObjectReference `json:"backupRef,omitempty"`

	// Destination is an object store to read from directly.
	// +optional
	Destination *BackupDestination `json:"destination,omitempty"`

	// Object is the dump's key, or "latest" for the newest successful backup.
	// +optional
	// +kubebuilder:default=latest
	// +kubebuilder:validation:MaxLength=1024
	Object string `json:"object,omitempty"`

	// PointInTime recovers the Backup's archived log to a time instead of
	// restoring a dump; the Backup needs spec.pointInTime.
	// +optional
	PointInTime *RestorePointInTime `json:"pointInTime,omitempty"`
}

// RestoreTarget is the database a Restore writes into.
// +kubebuilder:validation:XValidation:rule="has(self.databaseRef) != has(self.connection)",message="set exactly one of target.databaseRef and target.connection"
type RestoreTarget struct {
	// Type is the database's kind; it must be the dump's.
	// +required
	Type BackupSourceType `json:"type"`

	// DatabaseRef names a Steward Database in the same namespace.
	// +optional
	DatabaseRef *corev1.LocalObjectReference `json:"databaseRef,omitempty"`

	// Connection locates a database Steward does not manage.
	// +optional
	Connection *DatabaseConnection `json:"connection,omitempty"`
}

// RestoreSpec declares a one-off restore of a dump into a database.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a Restore cannot be changed; create a new one"
type RestoreSpec struct {
	// Source is the dump to restore.
	// +required
	Source RestoreSource `json:"source"`

	// Target is the database to restore into.
	// +required
	Target RestoreTarget `json:"target"`

	// Overwrite allows restoring into a database that already holds tables;
	// they are replaced. Without it such a restore is refused.
	// +optional
	Overwrite bool `json:"overwrite,omitempty"`

	// Image overrides the image the restore runs in, which must carry the
	// engine's restore tool (pg_restore, mysql or mariadb, mongorestore).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`
}

// RestorePhase is a one-word summary of a Restore's state.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type RestorePhase string

const (
	// RestorePending means the restore waits for its source or target.
	RestorePending RestorePhase = "Pending"
	// RestoreRunning means the restore Job runs.
	RestoreRunning RestorePhase = "Running"
	// RestoreSucceeded means the dump was verified and restored.
	RestoreSucceeded RestorePhase = "Succeeded"
	// RestoreFailed means the restore failed; the message says why.
	RestoreFailed RestorePhase = "Failed"
)

// RestoreStatus is the observed state of a Restore.
type RestoreStatus struct {
	// ObservedGeneration is the metadata.generation this status describes. It is -1
	// until Steward first looked at the object, which kstatus-aware tools
	// (Flux, kubectl wait) read as in progress.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarizes the state.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
	// Job is the name of the restore Job.
	// +optional
	Job string `json:"job,omitempty"`
	// Object is the dump restored.
	// +optional
	Object string `json:"object,omitempty"`
	// StartTime is when the restore started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when it ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says what failed.
	// +optional
	Message string `json:"message,omitempty"`
	// RecoveryPoint is, for a point-in-time restore, the commit time of the
	// last transaction the recovery replayed: the restored data is the
	// database as it was right after it.
	// +optional
	RecoveryPoint *metav1.Time `json:"recoveryPoint,omitempty"`
	// BaseBackup is the base backup a point-in-time restore started from.
	// +optional
	BaseBackup string `json:"baseBackup,omitempty"`
	// Conditions are Ready (the restore succeeded), Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Restore verifies a stored dump's checksum and restores it into a
// database, refusing a non-empty target unless overwrite is set.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=steward
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 55",message="a Restore's name has at most 55 characters: its Job is <name>-restore"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=".spec.target.databaseRef.name"
// +kubebuilder:printcolumn:name="Object",type=string,JSONPath=".status.object"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type Restore struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec RestoreSpec `json:"spec"`

	// Status is the observed state, written by Steward.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status RestoreStatus `json:"status,omitempty"`
}

// RestoreList is a list of Restores.
// +kubebuilder:object:root=true
type RestoreList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Restores.
	Items []Restore `json:"items"`
}
