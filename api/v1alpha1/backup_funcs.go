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
	// LabelBackup selects the Jobs and pods of one Backup.
	LabelBackup = "steward.dev/backup"
)

// ManualJobName names the Job of the run that the backup-now annotation's
// value asks for: the same value always names the same Job, so a value
// starts one run only.
func (b *Backup) ManualJobName(value string) string {
	sum := sha256.Sum256([]byte(value))
	return fmt.Sprintf("%s-now-%s", b.Name, hex.EncodeToString(sum[:])[:8])
}
