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
	// ConditionDestinationChecked is True when the newest check of the
	// destination, with the current spec.destination and credentials
	// Secret, passed: a Job listed the bucket and wrote, read back and
	// deleted a small object. It is Unknown while that check runs and
	// False, with the store's error, when it failed or could not start.
	ConditionDestinationChecked = "DestinationChecked"
	// ConditionVerified is True when the newest verification of the
	// Backup's newest backup passed: a Job restored it into a throwaway
	// server in its pod and found the checksum, and every table's row
	// count and checksum, as the manifest written at backup time says.
	// False, with one of the verification reasons, when it failed; absent
	// without spec.verify.
	ConditionVerified = "Verified"
	// ConditionVerificationStale is True when spec.verify schedules
	// verifications and none ended within twice the verify schedule's
	// interval; absent without spec.verify or while it is suspended.
	ConditionVerificationStale = "VerificationStale"
	// ConditionInsecureEndpoint is True when the destination's endpoint is
	// plain http:// and allowInsecureEndpoint accepts it; it is absent
	// otherwise.
	ConditionInsecureEndpoint = "InsecureEndpoint"
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
	// ReasonCheckPassed: DestinationChecked; the destination was listed,
	// written, read back and cleaned up with the current credentials.
	ReasonCheckPassed = "CheckPassed"
	// ReasonCheckingDestination: DestinationChecked is Unknown and Ready
	// False while the first check of the current destination and
	// credentials runs.
	ReasonCheckingDestination = "CheckingDestination"
	// ReasonInsecureEndpoint: the endpoint is plain http:// and
	// allowInsecureEndpoint is not set (an object stored before the rule
	// existed); nothing is run against it. As the InsecureEndpoint
	// condition's reason (True), the endpoint is allowed.
	ReasonInsecureEndpoint = "InsecureEndpoint"
	// ReasonCredentialsMissing: the credentials Secret does not exist, or
	// lacks a key the store needs; the message names it.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonDestinationUnreachable: the store could not be reached
	// (connection refused, a name that does not resolve, a timeout).
	ReasonDestinationUnreachable = "DestinationUnreachable"
	// ReasonCredentialsRefused: the store refused the credentials, or
	// denied listing, writing, reading or deleting in the bucket.
	ReasonCredentialsRefused = "CredentialsRefused"
	// ReasonBucketNotFound: the bucket or container does not exist.
	ReasonBucketNotFound = "BucketNotFound"
	// ReasonDestinationCheckFailed: the check failed otherwise, or its Job
	// ended without a result; the message says how.
	ReasonDestinationCheckFailed = "DestinationCheckFailed"
	// ReasonDeletingDumps: the Backup is being deleted and a Job deletes
	// its dumps, as deletionPolicy Delete asks.
	ReasonDeletingDumps = "DeletingDumps"
	// ReasonDeleteFailed: the dumps could not be deleted; the Backup stays
	// until they are, or deletionPolicy is set to Retain.
	ReasonDeleteFailed = "DeleteFailed"
)

// Reasons of a verification (status.lastVerified.reason and the Verified
// condition), also what `steward backup-verify` reports.
const (
	// ReasonVerificationPassed: the backup restored, and its checksum and
	// every table's row count and checksum match its manifest.
	ReasonVerificationPassed = "VerificationPassed"
	// ReasonNoTableDigests: the backup restored and its checksum matches,
	// but its manifest predates table digests (or the engine has none,
	// MongoDB): the tables' contents were not compared. It counts as
	// passed.
	ReasonNoTableDigests = "NoTableDigests"
	// ReasonNoBackup: there is no complete backup to verify, or the one
	// named has no manifest.
	ReasonNoBackup = "NoBackup"
	// ReasonChecksumMismatch: the stored object's size or SHA-256 differs
	// from its manifest's: it was corrupted or replaced. Nothing was
	// restored from it, and a Restore of it refuses to run too.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonRestoreFailed (declared with the Restore's reasons, the same
	// word): the restore tool failed on the backup.
	// ReasonRowCountMismatch: a table of the restored backup has another
	// number of rows than the manifest says, or a table is missing or
	// extra.
	ReasonRowCountMismatch = "RowCountMismatch"
	// ReasonTableChecksumMismatch: a table of the restored backup has the
	// manifest's number of rows but other contents.
	ReasonTableChecksumMismatch = "TableChecksumMismatch"
	// ReasonVerificationFailed: the verification could not be carried
	// out (the throwaway server did not start, the store could not be
	// read, the Job ended without a result); the message says why.
	ReasonVerificationFailed = "VerificationFailed"
)

// Reasons of the VerificationStale condition and of a Verified condition
// before the first verification.
const (
	// ReasonVerificationFresh: a verification ended within twice the
	// verify schedule's interval.
	ReasonVerificationFresh = "VerificationFresh"
	// ReasonNoRecentVerification: none ended within twice the interval.
	ReasonNoRecentVerification = "NoRecentVerification"
	// ReasonNoVerificationYet: no verification has ended yet.
	ReasonNoVerificationYet = "NoVerificationYet"
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
	// EventDumpsDeleteFailed: the dumps could not be deleted (Warning).
	EventDumpsDeleteFailed = "DumpsDeleteFailed"
	// EventDestinationChecked: a check of the destination passed.
	EventDestinationChecked = "DestinationChecked"
	// EventDestinationCheckFailed: a check of the destination failed, or
	// could not start (Warning).
	EventDestinationCheckFailed = "DestinationCheckFailed"
	// EventVerificationPassed: a verification of a backup passed.
	EventVerificationPassed = "VerificationPassed"
	// EventVerificationFailed: a verification of a backup failed, or
	// could not be carried out (Warning).
	EventVerificationFailed = "VerificationFailed"
	// EventVerificationStale: no verification ended within twice the
	// verify schedule's interval (Warning).
	EventVerificationStale = "VerificationStale"
	// EventVerificationRequested: a verification was started for the
	// verify-now annotation.
	EventVerificationRequested = "VerificationRequested"
	// EventInsecureEndpoint: the destination's endpoint is plain http://,
	// allowed by allowInsecureEndpoint or refused without it (Warning).
	EventInsecureEndpoint = "InsecureEndpoint"
)
