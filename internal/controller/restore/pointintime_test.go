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

package restore_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
)

func TestPointInTimeNeedsAnArchivingBackup(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "db"))
	markReady(t, ns, "db")
	create(t, newBackup(ns, "nightly", "db"))
	create(t, newRestore(ns, func(r *v1alpha1.Restore) {
		r.Spec.Source.PointInTime = &v1alpha1.RestorePointInTime{}
	}))
	r := waitFor(t, ns, "refused", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreFailed })
	if readyReason(r) != v1alpha1.ReasonPointInTimeUnavailable || !strings.Contains(r.Status.Message, "does not archive the log") {
		t.Errorf("reason %s, message %q", readyReason(r), r.Status.Message)
	}
}

func TestPointInTimeRestoreReportsItsRecoveryPoint(t *testing.T) {
	ns := namespace(t)
	create(t, newDatabase(ns, "orders"))
	markReady(t, ns, "orders")
	b := newBackup(ns, "archiving", "orders")
	b.Spec.PointInTime = &v1alpha1.BackupPointInTime{}
	create(t, b)
	target := time.Date(2026, 11, 26, 14, 4, 59, 0, time.UTC)
	create(t, newRestore(ns, func(r *v1alpha1.Restore) {
		r.Spec.Source.BackupRef.Name = "archiving"
		r.Spec.Target.DatabaseRef.Name = "orders"
		r.Spec.Source.PointInTime = &v1alpha1.RestorePointInTime{TargetTime: &metav1.Time{Time: target}}
	}))
	j := job(t, ns)
	var main corev1.Container
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name == jobs.Container {
			main = c
		}
	}
	env := envOf(main)
	if !slices.Equal(main.Command[1:], []string{pitrcmd.CommandRestore}) || env[pitrcmd.EnvTargetTime].Value != "2026-11-26T14:04:59Z" ||
		env[pitrcmd.EnvArchive].Value == "" {
		t.Fatalf("command %v, env %v", main.Command, env)
	}
	point := time.Date(2026, 11, 26, 14, 4, 58, 0, time.UTC)
	msg, _ := json.Marshal(pitrcmd.Result{Result: dumpcmd.Result{Succeeded: true, Key: "pitr/db/base/x.tar.gz", CompletionTime: time.Now().UTC()},
		BaseKey: "pitr/db/base/x.tar.gz", RecoveryPoint: &point})
	finishWith(t, ns, j, string(msg), true)
	r := waitFor(t, ns, "succeeded", func(r *v1alpha1.Restore) bool { return r.Status.Phase == v1alpha1.RestoreSucceeded })
	if r.Status.RecoveryPoint == nil || !r.Status.RecoveryPoint.Time.Equal(point) || r.Status.BaseBackup != "pitr/db/base/x.tar.gz" {
		t.Errorf("status %+v", r.Status)
	}
}
