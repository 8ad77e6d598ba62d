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

// Condition types and reasons of Databases, beside the shared ones.
const (
	// ConditionUpgradeBlocked is True while the spec asks for a version
	// change Steward will not make in place.
	ConditionUpgradeBlocked = "UpgradeBlocked"
	// ConditionBootstrapped is True once the Restore of
	// spec.bootstrap.fromBackup succeeded; only set with spec.bootstrap.
	ConditionBootstrapped = "Bootstrapped"

	// ReasonUpgradeBlocked: a major version change was asked for.
	ReasonUpgradeBlocked = "UpgradeBlocked"
	// ReasonNoUpgradePending: the spec's version can be run in place.
	ReasonNoUpgradePending = "NoUpgradePending"
	// ReasonInvalidParameters: spec.parameters sets a key Steward controls,
	// or a value the engine cannot take.
	ReasonInvalidParameters = "InvalidParameters"
	// ReasonParameterRefused: a running server could not apply a value of
	// spec.parameters when it reloaded its configuration; a restart may
	// fail on it.
	ReasonParameterRefused = "ParameterRefused"
	// ReasonCredentialsNotFound: the Secret in spec.credentialsSecretRef is
	// missing or lacks username or password.
	ReasonCredentialsNotFound = "CredentialsNotFound"
	// ReasonScaling: instances are being added or removed.
	ReasonScaling = "Scaling"
	// ReasonExpandingStorage: volumes are growing to spec.storage.size.
	ReasonExpandingStorage = "ExpandingStorage"
	// ReasonExpansionNotSupported: the volumes' storage class does not
	// allow expansion.
	ReasonExpansionNotSupported = "ExpansionNotSupported"
	// ReasonWaitingForInstance: the bootstrap restore waits for an instance
	// to be ready.
	ReasonWaitingForInstance = "WaitingForInstance"
	// ReasonRestoring: the bootstrap Restore runs; the Database is Ready
	// after it.
	ReasonRestoring = "Restoring"
	// ReasonFailingOver: the primary was lost; a replica is being promoted.
	ReasonFailingOver = "FailingOver"
	// ReasonSwitchingOver: the primary hands over to a replica.
	ReasonSwitchingOver = "SwitchingOver"
	// ReasonFailoverBlocked: the primary is lost and no replica can be
	// promoted safely (none reachable, caught up within
	// maxFailoverLagBytes, or the old primary not yet fenced).
	ReasonFailoverBlocked = "FailoverBlocked"
	// ReasonBootstrapFailed: the bootstrap Restore failed. It is not
	// retried: delete the Database and create it again, or fix the backup.
	ReasonBootstrapFailed = "BootstrapFailed"
)

// Event reasons of Databases. Events are emitted on state transitions only.
const (
	// EventAdopted: a Secret kept from an earlier Database of the same name
	// was adopted.
	EventAdopted = "Adopted"
	// EventDataRetained: the Database was deleted and its data kept.
	EventDataRetained = "DataRetained"
	// EventDataDeleted: the Database was deleted with its data.
	EventDataDeleted = "DataDeleted"
	// EventReplacedPod: an instance pod that could not start on an
	// earlier spec was deleted so that it starts on the current one.
	EventReplacedPod = "ReplacedPod"
	// EventFailoverStarted: the primary was lost; a replica is promoted.
	EventFailoverStarted = "FailoverStarted"
	// EventFailedOver: a replica was promoted after the primary was lost;
	// the message carries the measured write gap.
	EventFailedOver = "FailedOver"
	// EventSwitchedOver: the primary handed over to a replica; the message
	// carries the measured write gap.
	EventSwitchedOver = "SwitchedOver"
	// EventSwitchoverRefused: the requested switchover cannot be done.
	EventSwitchoverRefused = "SwitchoverRefused"
	// EventSwitchoverWaiting: a switchover to "any" waits, up to a minute,
	// for a replica that runs and answers.
	EventSwitchoverWaiting = "SwitchoverWaiting"
	// EventSwitchoverRetargeted: the replica a switchover to "any" chose
	// missed the stopped primary's last writes; another replica that has
	// them is promoted instead.
	EventSwitchoverRetargeted = "SwitchoverRetargeted"
	// EventReplicaRebuilt: a replica that could not follow its primary
	// (it held history the primary does not have, or needed log the
	// primary no longer has) was wound back or cloned afresh by its
	// instance manager.
	EventReplicaRebuilt = "ReplicaRebuilt"
)

// Storage growth (spec.storage.autoGrow): the condition and its reasons.
const (
	// ConditionStorageGrowthBlocked is True while a volume is over
	// spec.storage.autoGrow.thresholdPercent and Steward will not grow it;
	// only set with spec.storage.autoGrow.
	ConditionStorageGrowthBlocked = "StorageGrowthBlocked"

	// ReasonMaximumReached: the volumes are at storage.autoGrow.maximum.
	ReasonMaximumReached = "MaximumReached"
	// ReasonStorageClassCannotExpand: the volumes' storage class does not
	// allow volume expansion (allowVolumeExpansion false or unset).
	ReasonStorageClassCannotExpand = "StorageClassCannotExpand"
	// ReasonBelowThreshold: every volume is used less than the threshold.
	ReasonBelowThreshold = "BelowThreshold"
	// ReasonGrowing: the volumes are growing, or about to.
	ReasonGrowing = "Growing"
	// ReasonNoUsageReported: no instance reported its volume's usage yet.
	ReasonNoUsageReported = "NoUsageReported"
)

// Event reasons of storage growth.
const (
	// EventStorageGrowing: a volume crossed the threshold; every volume
	// is asked to grow.
	EventStorageGrowing = "StorageGrowing"
	// EventStorageGrowthBlocked: a volume crossed the threshold and
	// cannot grow; the message says why.
	EventStorageGrowthBlocked = "StorageGrowthBlocked"
)
