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

// Condition types shared by Steward's kinds. They follow the kstatus
// convention: Ready summarizes; Reconciling and Stalled say whether work is
// in progress or cannot go on; Progressing and Degraded, which say the same
// in the words of Deployments, stay beside them.
const (
	// ConditionReady is True when the object is fully reconciled and serving.
	// `kubectl wait --for=condition=Ready` waits on it.
	ConditionReady = "Ready"
	// ConditionProgressing is True while Steward is moving the object towards
	// its spec: creating, rolling out, scaling.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the object failed to reach or keep its
	// desired state and needs attention.
	ConditionDegraded = "Degraded"
	// ConditionReconciling is True while Steward works towards the spec:
	// creating, rolling out, scaling, waiting for something that is on its
	// way, retrying a request that failed. kstatus (and so Flux and
	// kubectl-based tools) reads it as InProgress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the object cannot progress without the
	// user: an invalid spec, a missing reference, a final failure. kstatus
	// reads it as Failed, so a Flux wait fails at once instead of timing out.
	ConditionStalled = "Stalled"
)

// Condition reasons. Each is CamelCase and says why a condition has its status.
const (
	// ReasonAvailable: every desired pod runs the current spec and is ready.
	ReasonAvailable = "Available"
	// ReasonCreating: the first rollout has not finished yet.
	ReasonCreating = "Creating"
	// ReasonRollingOut: a change of spec or scale is being rolled out.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete: no rollout is in progress.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonHealthy: nothing is degraded.
	ReasonHealthy = "Healthy"
	// ReasonReconciled: Reconciling is False: no work is in progress, either
	// because the object is Ready or because it is Stalled.
	ReasonReconciled = "Reconciled"
	// ReasonUnavailable: the rollout finished but fewer pods are available than desired.
	ReasonUnavailable = "Unavailable"
	// ReasonApplyFailed: the API server refused a child object Steward applied.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNameConflict: a child's name is taken by an object Steward does
	// not manage; Steward never takes it over.
	ReasonNameConflict = "NameConflict"
	// ReasonReconcileError: a request to the API server failed; Steward retries
	// with backoff and the message says what failed.
	ReasonReconcileError = "ReconcileError"
	// ReasonWaitingForPullSecret: an image pull Secret the spec names does not exist yet.
	ReasonWaitingForPullSecret = "WaitingForPullSecret"
	// ReasonWaitingForDatabase: the Database a WebApp, Backup or Restore
	// names does not exist yet or is not Ready.
	ReasonWaitingForDatabase = "WaitingForDatabase"
	// ReasonDatabaseNotFound: the Database a WebApp binds to does not exist.
	ReasonDatabaseNotFound = "DatabaseNotFound"
	// ReasonWaitingForCache: the Cache a WebApp binds to is not Ready yet.
	ReasonWaitingForCache = "WaitingForCache"
	// ReasonCacheNotFound: the Cache a WebApp binds to does not exist.
	ReasonCacheNotFound = "CacheNotFound"
	// ReasonWaitingForAppConfig: an AppConfig a WebApp uses has no revision yet.
	ReasonWaitingForAppConfig = "WaitingForAppConfig"
	// ReasonAppConfigNotFound: an AppConfig a WebApp uses does not exist.
	ReasonAppConfigNotFound = "AppConfigNotFound"
	// ReasonMissingConfigKey: a WebApp uses a key its AppConfig's revision does not have.
	ReasonMissingConfigKey = "MissingConfigKey"
	// ReasonInvalidSpec: the spec is valid to the schema but not to Steward,
	// for example an engine version it does not support or a template that
	// does not render; the message says what to change.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonRestored: a Restore (of a Database's bootstrap, or a Restore
	// object itself) verified its dump and restored it.
	ReasonRestored = "Restored"
)

// Event reasons shared by the kinds that run pods. Events are emitted on
// state transitions only.
const (
	// EventAvailable: the object became Ready.
	EventAvailable = "Available"
	// EventRollingOut: a change of spec started rolling out.
	EventRollingOut = "RollingOut"
	// EventScaled: the number of replicas changed.
	EventScaled = "Scaled"
)

// Reasons a WebApp, Database or Cache is Degraded when one of its pods has
// been unable to start for longer than the operator's --stuck-pod-timeout.
// The condition's message names the pod (and container) and carries the
// pod's own reason and message; the object recovers by itself once its pods
// are ready.
const (
	// ReasonPodsUnschedulable: the scheduler finds no node for a pod, for
	// example "0/3 nodes are available: 3 Insufficient memory."
	ReasonPodsUnschedulable = "PodsUnschedulable"
	// ReasonImagePullFailing: a container's image cannot be pulled
	// (ErrImagePull, ImagePullBackOff, InvalidImageName and the like): a
	// wrong name or tag, a private registry without a pull Secret.
	ReasonImagePullFailing = "ImagePullFailing"
	// ReasonCrashLooping: a container keeps exiting and the kubelet backs off
	// restarting it (CrashLoopBackOff); the message carries the end of its
	// last termination message or log.
	ReasonCrashLooping = "CrashLooping"
	// ReasonInitFailing: an init container exits with an error, so the pod
	// never gets to its main containers.
	ReasonInitFailing = "InitFailing"
	// ReasonContainerCannotStart: the kubelet cannot create or run a
	// container (CreateContainerConfigError, CreateContainerError,
	// RunContainerError, a failing lifecycle hook), for example because a
	// Secret or ConfigMap it reads does not exist.
	ReasonContainerCannotStart = "ContainerCannotStart"
)
