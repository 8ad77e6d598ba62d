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

// Package dumpcmd holds what the operator and the dump commands its pods
// run agree on: the commands' names, their environment and the result
// they write into their container's termination message. It is apart from
// package dump so that the operator reads results without linking the
// commands and the store clients they use.
package dumpcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The commands dump.Main runs: the subcommands of steward-agent that backup
// pods run.
const (
	// CommandBackup dumps the database into the destination, then prunes.
	CommandBackup = "backup"
	// CommandRestore restores a backup into the database.
	CommandRestore = "restore"
	// CommandCheck checks the destination (store.Probe): it lists the
	// bucket and writes, reads back and deletes a small object. It
	// connects to no database.
	CommandCheck = "backup-check"
	// CommandDelete deletes the backups of the database named by EnvDBName
	// from the destination (dump.DeleteDumps). It connects to no database.
	CommandDelete = "backup-delete"
	// CommandVerify restores the newest good backup of the EnvDBType
	// database named by EnvDBName (or the one EnvVerifyKey names) into a
	// throwaway server started in its own pod, and compares it with its
	// manifest (dump.Verify). It connects to no database of the user's.
	CommandVerify = "backup-verify"
)

// Environment variables of the commands. The database is the one backed
// up, or restored into; backup-check reads only the destination's, and
// backup-delete the destination's and EnvDBName.
const (
	EnvDBType     = "STEWARD_DB_TYPE"
	EnvDBHost     = "STEWARD_DB_HOST"
	EnvDBPort     = "STEWARD_DB_PORT"
	EnvDBName     = "STEWARD_DB_NAME"
	EnvDBUsername = "STEWARD_DB_USERNAME"
	EnvDBPassword = "STEWARD_DB_PASSWORD"
	// EnvDBBinDir (optional) is where the dump and restore tools are;
	// default $PATH.
	EnvDBBinDir = "STEWARD_DB_BIN_DIR"

	// The destination, as in store.Destination.
	EnvDestinationType     = "STEWARD_DESTINATION_TYPE"
	EnvDestinationBucket   = "STEWARD_DESTINATION_BUCKET"
	EnvDestinationPrefix   = "STEWARD_DESTINATION_PREFIX"
	EnvDestinationEndpoint = "STEWARD_DESTINATION_ENDPOINT"
	EnvDestinationRegion   = "STEWARD_DESTINATION_REGION"
	// EnvStoreCredentialsDir (optional) is a directory (a mounted Secret)
	// whose files, by name, are the store's credentials.
	EnvStoreCredentialsDir = "STEWARD_STORE_CREDENTIALS_DIR"

	// Retention of `steward-agent backup`: counts, and a Go duration for the
	// maximum age. When none is set nothing is pruned.
	EnvKeepLast    = "STEWARD_RETENTION_KEEP_LAST"
	EnvKeepDaily   = "STEWARD_RETENTION_KEEP_DAILY"
	EnvKeepWeekly  = "STEWARD_RETENTION_KEEP_WEEKLY"
	EnvKeepMonthly = "STEWARD_RETENTION_KEEP_MONTHLY"
	EnvMaxAge      = "STEWARD_RETENTION_MAX_AGE"
	// EnvRetentionTimeZone (optional, an IANA name, default UTC) is the
	// zone of the retention's days, weeks and months.
	EnvRetentionTimeZone = "STEWARD_RETENTION_TIME_ZONE"

	// EnvRestoreKey is the key of the backup to restore, or "latest"
	// (the default). EnvRestoreOverwrite "true" allows a non-empty target.
	EnvRestoreKey       = "STEWARD_RESTORE_KEY"
	EnvRestoreOverwrite = "STEWARD_RESTORE_OVERWRITE"

	// EnvVerifyKey is the key of the backup backup-verify verifies, or
	// "latest" (the default): the newest good backup of the database.
	EnvVerifyKey = "STEWARD_VERIFY_KEY"

	// EnvTerminationLog is where the Result goes; default
	// DefaultTerminationLog.
	EnvTerminationLog = "STEWARD_TERMINATION_LOG"
)

// DefaultTerminationLog is the container's termination message file.
const DefaultTerminationLog = "/dev/termination-log"

// MaxResultBytes is the most Kubernetes keeps of a termination message.
const MaxResultBytes = 4096

// Result is what a run of `steward-agent backup` or `restore` reports in
// its container's termination message, as JSON of at most MaxResultBytes.
type Result struct {
	Succeeded bool `json:"succeeded"`
	// Key, Size and SHA256 are the backup's (taken or restored).
	Key             string    `json:"key,omitempty"`
	Size            int64     `json:"size,omitempty"`
	SHA256          string    `json:"sha256,omitempty"`
	StartTime       time.Time `json:"startTime"`
	CompletionTime  time.Time `json:"completionTime"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Pruned is the number of old backups deleted; PruneError why pruning
	// failed, which does not fail the backup.
	Pruned     int    `json:"pruned"`
	PruneError string `json:"pruneError,omitempty"`
	// Deleted is the number of backups backup-delete deleted.
	Deleted int `json:"deleted,omitempty"`
	// TablesChecked is the number of tables whose row counts and
	// checksums backup-verify compared.
	TablesChecked int `json:"tablesChecked,omitempty"`
	// Error is why the run failed, shortened, with every credential
	// replaced by redact.Mask.
	Error string `json:"error,omitempty"`
	// Reason classifies a failure of the destination, as the reasons of a
	// Backup's DestinationChecked condition: DestinationUnreachable,
	// CredentialsRefused, BucketNotFound or CredentialsMissing; empty when
	// the failure is none of those. For backup-verify it is the
	// verification's reason, passed or not (VerificationPassed,
	// ChecksumMismatch, ...), unless the destination failed.
	Reason string `json:"reason,omitempty"`
	// Message says what backup-verify checked, when it passed.
	Message string `json:"message,omitempty"`
}

// Marshal returns the Result as JSON of at most MaxResultBytes, shortening
// the messages when needed.
func (r Result) Marshal() []byte {
	for limit := 1500; ; limit /= 2 {
		r.Error, r.PruneError, r.Message = shorten(r.Error, limit), shorten(r.PruneError, limit), shorten(r.Message, limit)
		data, err := json.Marshal(r)
		if err == nil && len(data) <= MaxResultBytes {
			return data
		}
		if limit == 0 {
			return data
		}
	}
}

func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	for limit > 0 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return s[:limit] + "…"
}

// ParseResult reads a termination message.
func ParseResult(message string) (Result, error) { return ParseMessage[Result](message) }

// ParseMessage reads a termination message holding a result of type T as
// JSON: a Result, or a result that embeds one.
func ParseMessage[T any](message string) (T, error) {
	var r T
	message = strings.TrimSpace(message)
	if message == "" {
		return r, errors.New("the termination message is empty")
	}
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		return r, fmt.Errorf("the termination message is not a result: %w", err)
	}
	return r, nil
}
