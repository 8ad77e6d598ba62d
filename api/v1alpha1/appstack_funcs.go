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

const (
	// AppStackFinalizer holds a deleted AppStack until its components are
	// removed in reverse dependency order.
	AppStackFinalizer = "steward.dev/appstack-teardown"
	// LabelAppStack names the AppStack a component belongs to.
	LabelAppStack = "steward.dev/appstack"
	// AnnotationRetryFinalBackup runs a failed final backup again when it is
	// set on the AppStack to a new value.
	AnnotationRetryFinalBackup = "steward.dev/retry-final-backup"
)
