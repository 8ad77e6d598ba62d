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

// Condition reasons of AppConfigs, beside the shared ones.
const (
	// ReasonSecretNotFound: a Secret or key that spec.secretData names does
	// not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonRevisionNotFound: spec.revision pins a revision that does not
	// exist (any more).
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonDebouncing: a new revision waits until the configuration has been
	// unchanged for spec.rollout.debounce.
	ReasonDebouncing = "Debouncing"
	// ReasonRolledOut: every consumer runs the current revision, or one
	// equal in the keys it uses.
	ReasonRolledOut = "RolledOut"
	// ReasonRolloutFailed: a consumer's rollout failed; the rollout stopped.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonConsumerBlocked: a consumer cannot take the revision, for
	// example because it uses a key the revision does not have.
	ReasonConsumerBlocked = "ConsumerBlocked"
	// ReasonPinned: spec.revision pins an older revision than the spec
	// renders; the pinned one is rolled out.
	ReasonPinned = "Pinned"
)

// Event reasons of AppConfigs.
const (
	// EventRevisionCreated: a new revision's ConfigMap (and Secret) was
	// created.
	EventRevisionCreated = "RevisionCreated"
	// EventRolledOut: a revision reached every consumer.
	EventRolledOut = "RolledOut"
)
