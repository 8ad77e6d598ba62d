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

// Package pitrcmd holds what the operator and the point-in-time commands
// its pods run agree on: the commands' names, their environment, the
// result they write into their container's termination message and what
// an archiver's status endpoint answers. It is apart from package pitr so
// that the operator reads them without linking the commands and the store
// clients they use.
package pitrcmd

import (
	"time"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
)

// The commands pitr.Main runs: subcommands of steward-agent.
const (
	// CommandArchive streams the primary's WAL into the destination until
	// it is stopped.
	CommandArchive = "wal-archive"
	// CommandFetch is the restore_command of a recovery: wal-fetch FILE
	// PATH copies an archived file to PATH; it exits 1 when the archive
	// does not hold it.
	CommandFetch = "wal-fetch"
	// CommandBase takes a base backup, then prunes base backups and WAL.
	// It always exits 0: its result says whether it worked, and the
	// logical dump beside it runs either way.
	CommandBase = "backup-base"
	// CommandRestore recovers to a point in time and restores the result
	// into the target database, as `steward-agent restore` restores a dump.
	CommandRestore = "restore-pitr"
	// CommandVerify recovers the archive to its latest point in a
	// throwaway server and reads every table there; it restores nothing.
	// It always exits 0: its result says whether it worked.
	CommandVerify = "verify-pitr"
)

// Environment variables, beside the dump package's (destination, its
// credentials, the database, retention, restore overwrite).
const (
	// EnvArchive is the database whose archive is written or read, as the
	// Backup's source names it.
	EnvArchive = "STEWARD_PITR_DATABASE"
	// EnvReplicationUsername and EnvReplicationPassword are the
	// replication credentials of wal-archive and backup-base.
	EnvReplicationUsername = "STEWARD_REPLICATION_USERNAME"
	EnvReplicationPassword = "STEWARD_REPLICATION_PASSWORD"
	// EnvArchiveDir is wal-archive's local directory.
	EnvArchiveDir = "STEWARD_ARCHIVE_DIR"
	// EnvTargetTime is restore-pitr's target: an RFC 3339 time, or
	// "latest".
	EnvTargetTime = "STEWARD_RESTORE_TARGET_TIME"
	// EnvWorkDir is where restore-pitr recovers; default
	// /tmp/steward-recovery.
	EnvWorkDir = "STEWARD_RECOVERY_DIR"
	// EnvServerBinDir is where postgres is for restore-pitr; default
	// $PATH.
	EnvServerBinDir = "STEWARD_SERVER_BIN_DIR"
)

// Latest is EnvTargetTime's value for the newest recoverable point.
const Latest = "latest"

// Result is what backup-base and restore-pitr report in their
// container's termination message.
type Result struct {
	dumpcmd.Result
	// FirstRecoverable is the earliest time recovery can reach after
	// backup-base pruned.
	FirstRecoverable *time.Time `json:"firstRecoverable,omitempty"`
	// BaseKey is the base backup taken or recovered from.
	BaseKey string `json:"baseKey,omitempty"`
	// TargetTime is the time restore-pitr recovered to; nil for the
	// latest point.
	TargetTime *time.Time `json:"targetTime,omitempty"`
	// RecoveryPoint is the commit time of the last transaction the
	// recovery replayed.
	RecoveryPoint *time.Time `json:"recoveryPoint,omitempty"`
	// Tables and Rows are what verify-pitr read in the recovered
	// database.
	Tables int   `json:"tables,omitempty"`
	Rows   int64 `json:"rows,omitempty"`
}

// ParseResult reads a termination message of backup-base or
// restore-pitr.
func ParseResult(message string) (Result, error) { return dumpcmd.ParseMessage[Result](message) }

// ArchiverPort is where an archiver serves GET /status.
const ArchiverPort = 8008

// Status is what an archiver's GET /status answers.
type Status struct {
	// Streaming is true while pg_receivewal is connected to the primary.
	Streaming bool `json:"streaming"`
	// LastSegment is the newest completed segment in the archive.
	LastSegment string `json:"lastSegment,omitempty"`
	// ArchivedUntil is the time up to which everything the primary sent
	// is in the store: now, while the archiver is streaming and has
	// uploaded all it received; otherwise the time of the newest data
	// uploaded.
	ArchivedUntil *time.Time `json:"archivedUntil,omitempty"`
	// Failures counts failed uploads and stops of pg_receivewal since the
	// archiver started; LastFailure is the newest, without credentials.
	Failures        int64      `json:"failures,omitempty"`
	LastFailure     string     `json:"lastFailure,omitempty"`
	LastFailureTime *time.Time `json:"lastFailureTime,omitempty"`
	// Gap says the archive misses segments: recovery cannot cross it.
	Gap string `json:"gap,omitempty"`
}
