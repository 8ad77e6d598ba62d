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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupVerify schedules verifications of a Backup's newest backup: a Job
// in the Backup's namespace restores it into a throwaway server started
// inside its own pod (deleted afterwards, with its data) and compares it
// with the manifest written at backup time: the object's size and SHA-256,
// then every table's row count and checksum. It needs the store's
// credentials only, never the database's.
type BackupVerify struct {
	// Schedule is when to verify, in cron format ("0 5 * * 0") or a macro
	// (@daily, @weekly, ...), in the Backup's timeZone. Each verification
	// takes the newest complete backup at the time it starts.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || self.matches('^\\\\S+( \\\\S+){4}$')",message="verify.schedule must be five cron fields (minute hour day-of-month month day-of-week) or a macro such as @weekly"
	Schedule string `json:"schedule"`

	// Suspend stops scheduled verifications; one asked for with the
	// steward.dev/verify-now annotation still runs. spec.suspend
	// suspends them too.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BackupVerification is the outcome of one verification.
type BackupVerification struct {
	// Job is the name of the Job that verified.
	Job string `json:"job"`
	// Time is when the verification ended.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// Backup is the key of the verified backup's object in the
	// destination.
	// +optional
	Backup string `json:"backup,omitempty"`
	// Passed is true when the backup restored and matched its manifest.
	Passed bool `json:"passed"`
	// Reason says how it ended: VerificationPassed, NoTableDigests
	// (passed, from a manifest without table digests), NoBackup,
	// ChecksumMismatch, RestoreFailed, RowCountMismatch,
	// TableChecksumMismatch, PointInTimeRecoveryFailed or
	// VerificationFailed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what was checked or what did not match, with every
	// credential replaced by ***.
	// +optional
	Message string `json:"message,omitempty"`
	// DurationSeconds is how long the verification took, from the start
	// of its program in the pod to its end.
	// +optional
	DurationSeconds int64 `json:"durationSeconds,omitempty"`
	// TablesChecked is the number of tables whose row counts and
	// checksums were compared.
	// +optional
	TablesChecked int32 `json:"tablesChecked,omitempty"`
	// PointInTime is, with spec.pointInTime, the recovery of the archive
	// to its latest point that the same verification ran beside the dump's
	// restore. A failed recovery fails the verification (reason
	// PointInTimeRecoveryFailed).
	// +optional
	PointInTime *PointInTimeVerification `json:"pointInTime,omitempty"`
}
