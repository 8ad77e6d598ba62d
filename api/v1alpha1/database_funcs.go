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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels, annotations and the finalizer Steward puts on a Database and its
// children.
const (
	// DatabaseFinalizer holds a deleted Database until its deletion policy
	// is carried out: volumes and Secrets kept (released for adoption) or
	// deleted.
	DatabaseFinalizer = "steward.dev/deletion-policy"
	// LabelDatabase selects the pods, volumes and Secrets of one Database.
	LabelDatabase = "steward.dev/database"
	// LabelRole is "primary" or "replica" on a database pod; the read-write
	// and read-only Services select on it.
	LabelRole = "steward.dev/role"
	// LabelBootstrapFor on a Restore names the Database it bootstraps.
	LabelBootstrapFor = "steward.dev/bootstrap-for"
	// AnnotationVersion on a Database's StatefulSet records the engine
	// version its pod template runs.
	AnnotationVersion = "steward.dev/version"
	// AnnotationRestartHash on a database pod template changes when a
	// setting that only takes effect after a restart changes, which rolls
	// the pods.
	AnnotationRestartHash = "steward.dev/restart-hash"
	// AnnotationSwitchoverTo on a Database asks for a switchover to the
	// named instance (its pod), or to the best replica with "any". Steward
	// removes it once the switchover is done or refused.
	AnnotationSwitchoverTo = "steward.dev/switchover-to"
	// SwitchoverToAny is the AnnotationSwitchoverTo value for the best
	// replica.
	SwitchoverToAny = "any"
)

// Defaults of spec.highAvailability.
const (
	DefaultMaxFailoverLagBytes        = 16 << 20
	DefaultMaxFailoverLagTransactions = 1000
	DefaultFenceAfterSeconds          = 5
)

// SynchronousReplicas is spec.highAvailability.synchronousReplicas.
func (db *Database) SynchronousReplicas() int32 {
	if db.Spec.HighAvailability == nil {
		return 0
	}
	return db.Spec.HighAvailability.SynchronousReplicas
}

// MaxFailoverLagBytes is spec.highAvailability.maxFailoverLagBytes or its
// default.
func (db *Database) MaxFailoverLagBytes() int64 {
	if h := db.Spec.HighAvailability; h != nil && h.MaxFailoverLagBytes != nil {
		return *h.MaxFailoverLagBytes
	}
	return DefaultMaxFailoverLagBytes
}

// FenceAfterSeconds is spec.highAvailability.fenceAfterSeconds or its
// default.
func (db *Database) FenceAfterSeconds() int32 {
	if h := db.Spec.HighAvailability; h != nil && h.FenceAfterSeconds != nil {
		return *h.FenceAfterSeconds
	}
	return DefaultFenceAfterSeconds
}

// CanFailOver reports whether Steward moves the primary of this engine.
func (e DatabaseEngine) CanFailOver() bool { return e == EnginePostgres || e == EngineMariaDB }

// The units of the instances' positions.
const (
	// PositionBytes: bytes of WAL (PostgreSQL).
	PositionBytes = "bytes"
	// PositionTransactions: GTID sequence numbers (MariaDB).
	PositionTransactions = "transactions"
)

// MaxFailoverLag is how far behind the lost primary a replica may be and
// still be promoted, in the unit of the engine's positions, and the field
// that sets it.
func (db *Database) MaxFailoverLag() (limit int64, unit, field string) {
	if db.Spec.Engine == EngineMariaDB {
		limit = DefaultMaxFailoverLagTransactions
		if h := db.Spec.HighAvailability; h != nil && h.MaxFailoverLagTransactions != nil {
			limit = *h.MaxFailoverLagTransactions
		}
		return limit, PositionTransactions, "maxFailoverLagTransactions"
	}
	return db.MaxFailoverLagBytes(), PositionBytes, "maxFailoverLagBytes"
}

// InstanceHost is an instance's DNS name through the headless Service.
func (db *Database) InstanceHost(pod string) string {
	return fmt.Sprintf("%s.%s.%s.svc", pod, db.HeadlessServiceName(), db.Namespace)
}

// Port is the port the engine's server listens on, and its Services.
func (e DatabaseEngine) Port() int32 {
	if e == EnginePostgres {
		return 5432
	}
	return 3306
}

// Port is the port of the Database's server and Services.
func (db *Database) Port() int32 { return db.Spec.Engine.Port() }

// Host is the read-write Service's DNS name.
func (db *Database) Host() string { return fmt.Sprintf("%s.%s.svc", db.Name, db.Namespace) }

// SourceType is the dump type of the Database's engine, for Backups and
// Restores.
func (db *Database) SourceType() BackupSourceType {
	if db.Spec.Engine == EnginePostgres {
		return SourcePostgreSQL
	}
	return SourceMySQL
}

// DatabaseCredentialsName names the Secret with the owner's credentials of
// the named Database.
func DatabaseCredentialsName(database string) string { return database + "-credentials" }

// CredentialsName names the Secret with the owner's credentials.
func (db *Database) CredentialsName() string { return DatabaseCredentialsName(db.Name) }

// SuperuserName names the Secret with the superuser's and the replication
// user's credentials.
func (db *Database) SuperuserName() string { return db.Name + "-superuser" }

// ConfigMapName names the ConfigMap with the rendered configuration.
func (db *Database) ConfigMapName() string { return db.Name + "-config" }

// HeadlessServiceName names the headless Service that gives pods DNS names.
func (db *Database) HeadlessServiceName() string { return db.Name + "-headless" }

// ReadOnlyServiceName names the Service that selects the replicas.
func (db *Database) ReadOnlyServiceName() string { return db.Name + "-ro" }

// PrimaryPod is the name of the pod that runs the primary: status.primary,
// or ordinal 0 before the first start.
func (db *Database) PrimaryPod() string {
	if db.Status.Primary != "" {
		return db.Status.Primary
	}
	return db.FirstPod()
}

// FirstPod is ordinal 0, the first primary.
func (db *Database) FirstPod() string { return db.Name + "-0" }

// BackupName names the Backup that spec.backup asks for.
func (db *Database) BackupName() string { return db.Name + "-backup" }

// BootstrapRestoreName names the Restore that loads
// spec.bootstrap.fromBackup.
func (db *Database) BootstrapRestoreName() string { return db.Name + "-bootstrap" }

// IsBootstrapRestore reports whether the Restore is the one the Database
// created to load spec.bootstrap.fromBackup: the Database controls it and
// its status names it. That Restore may run before the Database is Ready.
func (db *Database) IsBootstrapRestore(rs *Restore) bool {
	return db.Spec.Bootstrap != nil && db.Status.BootstrapRestore == rs.Name && metav1.IsControlledBy(rs, db)
}
