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

package database_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// slowTimeout bounds the waits of this file: generous, for a loaded machine.
const slowTimeout = 2 * time.Minute

// TestInvalidParametersDegradeAndKeepTheRunningConfiguration runs without
// the admission webhook, as with --webhook-port=0: a Database whose
// parameters the engine would refuse is Degraded with reason
// InvalidParameters and the same words as the webhook, and nothing reaches
// its pods, which keep the last good configuration, until it is fixed.
func TestInvalidParametersDegradeAndKeepTheRunningConfiguration(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "tuned", func(db *v1alpha1.Database) {
		db.Spec.Parameters = map[string]string{"work_mem": "8MB"}
	}))
	config := func() string {
		cm := &corev1.ConfigMap{}
		if err := get(t, ns, "tuned-config", cm); err != nil {
			return ""
		}
		return cm.Data["postgresql.conf"]
	}
	apitest.Eventually(t, slowTimeout, func() error {
		if !strings.Contains(config(), "work_mem = '8MB'") {
			return fmt.Errorf("configuration not rendered yet")
		}
		return nil
	})
	markRolledOut(t, ns, "tuned", 1)
	waitSlowly(t, ns, "Ready", isReady)
	good := config()
	sts := statefulSet(t, ns, "tuned")

	update(t, ns, "tuned", func(db *v1alpha1.Database) {
		db.Spec.Parameters = map[string]string{"work_mem": "16MB", "shared_buffers": "not-a-size", "max_connections": "-5"}
	})
	want := `spec.parameters.max_connections: -5 is out of range: between 1 and 262143; ` +
		`spec.parameters.shared_buffers: "not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`
	db := waitSlowly(t, ns, "Degraded with InvalidParameters", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonInvalidParameters &&
			c.ObservedGeneration == db.Generation
	})
	if c := condition(db, v1alpha1.ConditionDegraded); c.Message != want {
		t.Errorf("Degraded message = %q, want %q", c.Message, want)
	}
	if c := condition(db, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidParameters {
		t.Errorf("Ready = %+v, want False with reason InvalidParameters", c)
	}
	if db.Status.Phase != v1alpha1.DatabaseDegraded {
		t.Errorf("phase = %s, want Degraded", db.Status.Phase)
	}
	expectEvent(t, ns, "tuned", v1alpha1.ReasonInvalidParameters)
	// The reconcile that found the problem applied nothing, and neither
	// does any after it while the spec stays so.
	if got := config(); got != good {
		t.Errorf("the configuration changed while the parameters were invalid:\n%s", got)
	}
	if now := statefulSet(t, ns, "tuned"); now.Generation != sts.Generation {
		t.Errorf("the StatefulSet changed (generation %d, was %d) while the parameters were invalid", now.Generation, sts.Generation)
	}

	// Fixed, the new configuration rolls out.
	update(t, ns, "tuned", func(db *v1alpha1.Database) {
		db.Spec.Parameters = map[string]string{"work_mem": "16MB", "shared_buffers": "256MB", "max_connections": "-5"}
	})
	waitSlowly(t, ns, "only max_connections named", func(db *v1alpha1.Database) bool {
		c := condition(db, v1alpha1.ConditionDegraded)
		return c != nil && c.ObservedGeneration == db.Generation &&
			c.Message == "spec.parameters.max_connections: -5 is out of range: between 1 and 262143"
	})
	update(t, ns, "tuned", func(db *v1alpha1.Database) { db.Spec.Parameters["max_connections"] = "200" })
	apitest.Eventually(t, slowTimeout, func() error {
		if c := config(); !strings.Contains(c, "work_mem = '16MB'") || !strings.Contains(c, "max_connections = '200'") {
			return fmt.Errorf("fixed configuration not rendered yet")
		}
		// shared_buffers and max_connections need a restart: the pod
		// template changes.
		if statefulSet(t, ns, "tuned").Generation == sts.Generation {
			return fmt.Errorf("the StatefulSet has not been updated yet")
		}
		return nil
	})
	markRolledOut(t, ns, "tuned", 1)
	waitSlowly(t, ns, "Ready again", isReady)
}

// waitSlowly is waitFor for the Database "tuned", with slowTimeout.
func waitSlowly(t *testing.T, ns, what string, ok func(*v1alpha1.Database) bool) *v1alpha1.Database {
	t.Helper()
	db := &v1alpha1.Database{}
	apitest.Eventually(t, slowTimeout, func() error {
		if err := get(t, ns, "tuned", db); err != nil {
			return err
		}
		if !ok(db) {
			return fmt.Errorf("waiting for %s; status: %+v", what, db.Status)
		}
		return nil
	})
	return db
}
