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

// Package workloadpolicy reports the objects that break a WorkloadPolicy
// as they stand: those admission never refused because they predate the
// policy or their namespace's environment label. It lists them in the
// policy's status and announces each with an event; it never changes them.
//
// The API server enforces WorkloadPolicies at admission by itself, with
// the admission policies of config/policy: a MutatingAdmissionPolicy sets
// their defaults, then a ValidatingAdmissionPolicy checks the object.
// WorkloadPolicy.Check in api/v1alpha1, which this package's reconciler
// uses on objects as they stand, gives the same verdicts in Go, and
// WorkloadPolicy.Default sets the same defaults. The tests hold them
// together against a real API server with no operator running.
package workloadpolicy
