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

package database

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// LabelRoles is labelRoles, for the tests of package database_test.
var LabelRoles = (*Reconciler).labelRoles

// StallReconciles calls stall at the start of every reconcile until the
// returned restore is called.
func StallReconciles(stall func(context.Context, ctrl.Request)) (restore func()) {
	stallReconcile.Store(&stall)
	return func() { stallReconcile.Store(nil) }
}
