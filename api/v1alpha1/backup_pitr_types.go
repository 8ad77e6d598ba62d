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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupPointInTime turns on continuous archiving of a Database's log
// into the Backup's destination (PostgreSQL's write-ahead log, MariaDB's
// binary log), so that a Restore can recover to any time between the
// oldest kept base backup and a few seconds ago. Each scheduled run then
// also takes a base backup (PostgreSQL: pg_basebackup; MariaDB: a dump
// recording its GTID position), pruned with the dumps' retention. MySQL
// (engine mysql) is not supported: its Backup reports Archiving=False with
// reason PointInTimeUnsupported.
type BackupPointInTime struct {
	// MaxArchiveLag is how far behind the primary the archive may fall
	// before the Backup's Archiving condition turns False and the
	// StewardBackupArchiveLagging alert fires.
	// +optional
	// +kubebuilder:default="5m"
	MaxArchiveLag *metav1.Duration `json:"maxArchiveLag,omitempty"`
}

// DefaultMaxArchiveLag is BackupPointInTime.MaxArchiveLag's default.
const DefaultMaxArchiveLag = 5 * time.Minute

// ArchiveLagLimit is MaxArchiveLag or its default.
func (p *BackupPointInTime) ArchiveLagLimit() time.Duration {
	if p == nil || p.MaxArchiveLag == nil || p.MaxArchiveLag.Duration <= 0 {
		return DefaultMaxArchiveLag
	}
	return p.MaxArchiveLag.Duration
}

// PointInTimeStatus is the state of a Backup's continuous archiving and
// what it can recover.
type PointInTimeStatus struct {
	// FirstRecoverableTime is the earliest time a Restore can recover to:
	// the end of the oldest kept base backup.
	// +optional
	FirstRecoverableTime *metav1.Time `json:"firstRecoverableTime,omitempty"`
	// LastRecoverableTime is the time up to which the archive holds every
	// transaction, as the archiver last reported it.
	// +optional
	LastRecoverableTime *metav1.Time `json:"lastRecoverableTime,omitempty"`
	// ArchiveLagSeconds is how far LastRecoverableTime was behind the
	// operator's clock when it last asked.
	// +optional
	ArchiveLagSeconds *int64 `json:"archiveLagSeconds,omitempty"`
	// Streaming is true while the archiver receives the log from the
	// primary.
	// +optional
	Streaming bool `json:"streaming,omitempty"`
	// LastArchivedSegment is the newest completed WAL segment stored
	// (PostgreSQL), or the binary log file stored last (MariaDB).
	// +optional
	LastArchivedSegment string `json:"lastArchivedSegment,omitempty"`
	// ArchiveFailures counts the archiver's failed uploads and lost
	// connections since its pod started.
	// +optional
	ArchiveFailures int64 `json:"archiveFailures,omitempty"`
	// LastArchiveFailure is the newest of them, without credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	LastArchiveFailure string `json:"lastArchiveFailure,omitempty"`
	// LastArchiveFailureTime is when it happened.
	// +optional
	LastArchiveFailureTime *metav1.Time `json:"lastArchiveFailureTime,omitempty"`
	// Gap says the archive misses part of the log: times inside the gap,
	// before the next base backup, cannot be recovered.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Gap string `json:"gap,omitempty"`
	// LastBaseBackup is the newest base backup a run took or tried.
	// +optional
	LastBaseBackup *BaseBackupRun `json:"lastBaseBackup,omitempty"`
}

// BaseBackupRun is one base backup a scheduled run took.
type BaseBackupRun struct {
	// Job is the run's Job.
	Job string `json:"job"`
	// Succeeded is true when the base backup was stored.
	Succeeded bool `json:"succeeded"`
	// Object is the base backup's key.
	// +optional
	Object string `json:"object,omitempty"`
	// Size is its size in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// CompletionTime is when it ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says why it failed, without credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
}

// RestorePointInTime recovers a Backup's archive to a point in time (from
// the newest base backup before it, replaying the archived log) and
// restores the result, instead of a dump.
type RestorePointInTime struct {
	// TargetTime is the time to recover to (RFC 3339): every transaction
	// committed at or before it is restored, none after it. Omitted, the
	// recovery goes as far as the archive reaches. MariaDB's binary log
	// records whole seconds: its recovery replays the transactions that
	// began before the target's second, so it may stop up to a second
	// before the target, never after it.
	// +optional
	TargetTime *metav1.Time `json:"targetTime,omitempty"`
}

// TargetString is the target as restore-pitr takes it: an RFC 3339 time
// or "latest".
func (p *RestorePointInTime) TargetString() string {
	if p == nil || p.TargetTime == nil {
		return "latest"
	}
	return p.TargetTime.UTC().Format(time.RFC3339Nano)
}

// PointInTimeVerification is a verification's recovery of the archive to
// its latest point, in a throwaway server of the verification's pod.
type PointInTimeVerification struct {
	// Passed is true when the recovery reached the archive's end and every
	// table of the recovered database could be read.
	Passed bool `json:"passed"`
	// BaseBackup is the base backup the recovery started from.
	// +optional
	BaseBackup string `json:"baseBackup,omitempty"`
	// RecoveryPoint is the commit time of the last transaction replayed.
	// +optional
	RecoveryPoint *metav1.Time `json:"recoveryPoint,omitempty"`
	// Tables and Rows are what was read in the recovered database.
	// +optional
	Tables int32 `json:"tables,omitempty"`
	// +optional
	Rows int64 `json:"rows,omitempty"`
	// DurationSeconds is how long the recovery and the reads took.
	// +optional
	DurationSeconds int64 `json:"durationSeconds,omitempty"`
	// Message says why it failed, without credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
}
