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

// Condition types of Backups, beside Ready.
const (
	// ConditionLastBackupSucceeded is True when the newest run succeeded,
	// False when it failed, and Unknown before the first run finished.
	ConditionLastBackupSucceeded = "LastBackupSucceeded"
	// ConditionBackupStale is True when no run has succeeded within twice
	// the schedule's interval.
	ConditionBackupStale = "BackupStale"
)

// Condition reasons of Backups, beside the shared ones.
const (
	// ReasonScheduled: Ready; the schedule is in place (or suspended) and
	// the last run did not fail.
	ReasonScheduled = "Scheduled"
	// ReasonSucceeded: the newest run stored and verified its dump.
	ReasonSucceeded = "Succeeded"
	// ReasonFailed: the newest run failed; the message names its Job and
	// says why.
	ReasonFailed = "Failed"
	// ReasonNoRunYet: no run has finished yet.
	ReasonNoRunYet = "NoRunYet"
	// ReasonFresh: a run succeeded within twice the schedule's interval.
	ReasonFresh = "Fresh"
	// ReasonStale: no run succeeded within twice the schedule's interval
	// (the BackupStale condition's reason).
	ReasonStale = "NoRecentSuccess"
	// ReasonBackupStale: not Ready because the Backup is stale; the message
	// is the BackupStale condition's.
	ReasonBackupStale = "BackupStale"
	// ReasonInvalidSource: spec.source does not match the Database it
	// names, or names neither a Database nor a connection.
	ReasonInvalidSource = "InvalidSource"
	// ReasonInvalidSchedule: spec.schedule or spec.timeZone cannot be
	// parsed.
	ReasonInvalidSchedule = "InvalidSchedule"
)

// Event reasons of Backups.
const (
	// EventBackupSucceeded: a run stored and verified its dump.
	EventBackupSucceeded = "BackupSucceeded"
	// EventBackupFailed: a run failed.
	EventBackupFailed = "BackupFailed"
	// EventBackupStale: the Backup became stale.
	EventBackupStale = "BackupStale"
	// EventBackupRequested: a run was started for the backup-now annotation.
	EventBackupRequested = "BackupRequested"
	// EventDumpsDeleted: the Backup was deleted with its stored dumps.
	EventDumpsDeleted = "DumpsDeleted"
	// EventDumpsRetained: the Backup was deleted and its dumps kept.
	EventDumpsRetained = "DumpsRetained"
)
