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
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
)

// validate checks what admission cannot: the engine's own rules, of which
// the CRD's validation covers the common cases.
func validate(db *v1alpha1.Database, eng engine.Engine) *conditions.Problem {
	var controlled []string
	for k := range db.Spec.Parameters {
		if eng.Controlled(k) {
			controlled = append(controlled, k)
		}
	}
	if len(controlled) > 0 {
		return &conditions.Problem{Reason: v1alpha1.ReasonInvalidParameters,
			Message: fmt.Sprintf("parameters %s are set by Steward and cannot be overridden", strings.Join(slices.Sorted(slices.Values(controlled)), ", "))}
	}
	if n := db.SynchronousReplicas(); n > 0 && n >= Replicas(db) {
		return &conditions.Problem{Reason: v1alpha1.ReasonInvalidSpec,
			Message: fmt.Sprintf("highAvailability.synchronousReplicas is %d but the Database has %d instances: it needs more replicas than synchronous ones, or every commit would wait", n, Replicas(db))}
	}
	major := Major(db.Spec.Engine, db.Spec.Version)
	for _, v := range eng.Versions() {
		if Major(db.Spec.Engine, v) == major {
			return nil
		}
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonInvalidSpec,
		Message: fmt.Sprintf("%s version %s is not supported; supported: %s", db.Spec.Engine, db.Spec.Version, strings.Join(eng.Versions(), ", "))}
}

// upgradeBlocked refuses a change of major version: the data files of one
// major cannot be opened by the next. The running version is the one the
// StatefulSet was last applied with.
func upgradeBlocked(db *v1alpha1.Database, sts *appsv1.StatefulSet) *conditions.Problem {
	if sts == nil {
		return nil
	}
	running := sts.Annotations[v1alpha1.AnnotationVersion]
	if running == "" || Major(db.Spec.Engine, running) == Major(db.Spec.Engine, db.Spec.Version) {
		return nil
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonUpgradeBlocked, Message: fmt.Sprintf(
		"Version %s runs; %s is a new major version, which cannot be upgraded in place. "+
			"Take a backup, create a new Database with version %s and spec.bootstrap.fromBackup naming it, "+
			"then move the applications over; or set spec.version back to %s. Nothing was changed.",
		running, db.Spec.Version, db.Spec.Version, running)}
}
