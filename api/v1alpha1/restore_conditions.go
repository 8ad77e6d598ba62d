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

// Condition reasons of Restores, beside the shared ones.
const (
	// ReasonWaitingForBackup: the Backup in spec.source.backupRef does not
	// exist yet.
	ReasonWaitingForBackup = "WaitingForBackup"
	// ReasonTargetMismatch: spec.target.type is not the Database's engine.
	ReasonTargetMismatch = "TargetMismatch"
	// ReasonRestoreRunning: the restore Job runs.
	ReasonRestoreRunning = "Running"
	// ReasonRestoreFailed: the restore failed; it is not retried.
	ReasonRestoreFailed = "RestoreFailed"
)

// Event reasons of Restores.
const (
	// EventRestoreStarted: the restore Job was created.
	EventRestoreStarted = "RestoreStarted"
	// EventRestoreSucceeded: the dump was verified and restored.
	EventRestoreSucceeded = "RestoreSucceeded"
	// EventRestoreFailed: the restore failed.
	EventRestoreFailed = "RestoreFailed"
)
