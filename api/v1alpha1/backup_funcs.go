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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The finalizer, annotation and label of Backups.
const (
	// BackupFinalizer holds a deleted Backup until its deletion policy is
	// carried out on the stored dumps.
	BackupFinalizer = "steward.dev/backup-deletion-policy"
	// AnnotationBackupNow asks for a run now: set it to any new value
	// (e.g. a timestamp); each new value starts one run.
	AnnotationBackupNow = "steward.dev/backup-now"
	// LabelBackup selects the Jobs and pods of one Backup's runs.
	LabelBackup = "steward.dev/backup"
	// LabelBackupCheck selects the Jobs and pods that check one Backup's
	// destination.
	LabelBackupCheck = "steward.dev/backup-check"
	// LabelBackupDelete selects the Job and pods that delete one Backup's
	// dumps.
	LabelBackupDelete = "steward.dev/backup-delete"
	// LabelBackupVerify selects the CronJob, Jobs and pods that verify
	// one Backup's backups.
	LabelBackupVerify = "steward.dev/backup-verify"
	// AnnotationVerifyNow asks for a verification of the newest backup
	// now: set it to any new value; each new value starts one.
	AnnotationVerifyNow = "steward.dev/verify-now"
	// AnnotationDestinationHash, on a check or delete Job, identifies the
	// destination, credentials and database it was made for.
	AnnotationDestinationHash = "steward.dev/destination-hash"
)

// ManualJobName names the Job of the run that the backup-now annotation's
// value asks for: the same value always names the same Job, so a value
// starts one run only.
func (b *Backup) ManualJobName(value string) string {
	sum := sha256.Sum256([]byte(value))
	return fmt.Sprintf("%s-now-%s", b.Name, hex.EncodeToString(sum[:])[:8])
}

// CheckJobName names the Job that checks the destination and credentials
// that hash identifies: a change of either gives another Job. The name has
// at most 63 characters, as the Job controller's labels need.
func (b *Backup) CheckJobName(hash string) string {
	return fmt.Sprintf("%s-check-%s", b.Name, hash[:min(6, len(hash))])
}

// DeleteJobName names the Job that deletes the Backup's dumps.
func (b *Backup) DeleteJobName() string {
	return b.Name + "-delete"
}

// VerifyCronJobName names the CronJob of scheduled verifications.
func (b *Backup) VerifyCronJobName() string {
	return b.Name + "-verify"
}

// ManualVerifyJobName names the Job of the verification that the
// verify-now annotation's value asks for; the same value always names the
// same Job.
func (b *Backup) ManualVerifyJobName(value string) string {
	sum := sha256.Sum256([]byte(value))
	return fmt.Sprintf("%s-verify-%s", b.Name, hex.EncodeToString(sum[:])[:8])
}
