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

// Condition types of WorkloadPolicies, beside Ready.
const (
	// ConditionCompliant is True when no object of the policy's
	// environment breaks it, False while some do: objects admission never
	// refused because they predate the policy or their namespace's label.
	ConditionCompliant = "Compliant"
)

// Condition reasons of WorkloadPolicies.
const (
	// ReasonChecked: Ready is True, Steward checked the objects of the
	// policy's environment against its current generation.
	ReasonChecked = "Checked"
	// ReasonNoViolations: Compliant is True, no object breaks the policy.
	ReasonNoViolations = "NoViolations"
	// ReasonViolations: Compliant is False; the message and
	// status.violators name the objects and the rule each breaks.
	ReasonViolations = "Violations"
)

// Event reasons of WorkloadPolicies.
const (
	// EventPolicyViolation: a Warning on an object that breaks a
	// WorkloadPolicy, emitted when Steward first finds it so (the policy
	// or the namespace's label came after the object), with the rule it
	// breaks. The object is neither changed nor deleted.
	EventPolicyViolation = "PolicyViolation"
)
