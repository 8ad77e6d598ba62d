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

// Package workloadpolicy is about WorkloadPolicies. The API server enforces
// them at admission, with the ValidatingAdmissionPolicy of config/policy
// and no help from the operator; WorkloadPolicy.Check in api/v1alpha1 gives
// the same verdicts in Go. This package's tests hold the two together
// against a real API server.
package workloadpolicy
