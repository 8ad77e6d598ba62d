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

// Condition and component reasons of AppStacks, beside the shared ones.
const (
	// ReasonBlocked: a component waits for a dependency to be Ready.
	ReasonBlocked = "Blocked"
	// ReasonDependencyTimeout: a component has waited for a dependency longer
	// than spec.dependencyTimeout.
	ReasonDependencyTimeout = "DependencyTimeout"
	// ReasonComponentsReady: every component is Ready.
	ReasonComponentsReady = "ComponentsReady"
	// ReasonDeploying: components are being created or are not Ready yet.
	ReasonDeploying = "Deploying"
	// ReasonDeleting: components are being deleted: removed from the spec, or
	// the AppStack is being deleted in reverse dependency order.
	ReasonDeleting = "Deleting"
	// ReasonFinalBackup: a Database's final backup runs before it is
	// deleted.
	ReasonFinalBackup = "FinalBackup"
	// ReasonFinalBackupFailed: a Database's final backup failed; the
	// Database is kept until it is retried (the
	// steward.dev/retry-final-backup annotation) or the policy changes.
	ReasonFinalBackupFailed = "FinalBackupFailed"
	// ReasonComponentDegraded: a component is Degraded.
	ReasonComponentDegraded = "ComponentDegraded"
	// ReasonNotCreated: a component's object does not exist yet.
	ReasonNotCreated = "NotCreated"
)

// Event reasons of AppStacks.
const (
	// EventComponentCreated: a component's object was created.
	EventComponentCreated = "Created"
	// EventComponentDeleted: a component's object was deleted.
	EventComponentDeleted = "Deleted"
	// EventBlocked: a component is held until its dependency is Ready.
	EventBlocked = "Blocked"
)
