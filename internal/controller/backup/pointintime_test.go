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

package backup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

func pointInTime(db string) func(*v1alpha1.Backup) {
	return func(b *v1alpha1.Backup) {
		b.Spec.Source = v1alpha1.BackupSource{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: db}}
		b.Spec.PointInTime = &v1alpha1.BackupPointInTime{MaxArchiveLag: &metav1.Duration{Duration: 2 * time.Minute}}
	}
}

func TestPointInTimeAdmission(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.Backup)
	}{
		{"a connection source", func(b *v1alpha1.Backup) {
			b.Spec.PointInTime = &v1alpha1.BackupPointInTime{}
		}},
		{"a MongoDB source", func(b *v1alpha1.Backup) {
			pointInTime("orders")(b)
			b.Spec.Source.Type = v1alpha1.SourceMongoDB
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), newBackup(ns, "pitr", tc.mutate))
			if err == nil || !strings.Contains(err.Error(), "pointInTime archives the log of a PostgreSQL or MariaDB Database") {
				t.Errorf("got %v, want the pointInTime refusal", err)
			}
		})
	}
	target := v1alpha1.RestoreTarget{Type: v1alpha1.SourcePostgreSQL, DatabaseRef: &corev1.LocalObjectReference{Name: "copy"}}
	for _, tc := range []struct {
		name   string
		source v1alpha1.RestoreSource
		want   string
	}{
		{"a destination", v1alpha1.RestoreSource{Destination: &v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b"},
			PointInTime: &v1alpha1.RestorePointInTime{}}, "set source.backupRef"},
		{"an object", v1alpha1.RestoreSource{BackupRef: &corev1.LocalObjectReference{Name: "b"}, Object: "2026/11/26/x.pgdump",
			PointInTime: &v1alpha1.RestorePointInTime{}}, "exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "pitr", Namespace: ns},
				Spec: v1alpha1.RestoreSpec{Source: tc.source, Target: target}}
			err := k8s.Create(context.Background(), rs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestArchivingRefusesMySQL: a mysql source is admitted for MariaDB, but a
// Database running MySQL is not archived, and the Backup says why.
func TestArchivingRefusesMySQL(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	db := &v1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
		Spec:       v1alpha1.DatabaseSpec{Engine: v1alpha1.EngineMySQL, Version: "8.4", Storage: v1alpha1.DatabaseStorage{Size: new(mustQuantity("1Gi"))}},
	}
	create(t, db)
	apitest.MarkDatabaseReady(t, k8s, timeout, client.ObjectKey{Namespace: ns, Name: "catalog"})
	create(t, newBackup(ns, "shop", func(b *v1alpha1.Backup) {
		pointInTime("catalog")(b)
		b.Spec.Source.Type = v1alpha1.SourceMySQL
	}))
	b := waitFor(t, ns, "shop", "Archiving False", hasCond(v1alpha1.ConditionArchiving, "False", v1alpha1.ReasonPointInTimeUnsupported))
	if msg := cond(b, v1alpha1.ConditionArchiving).Message; !strings.Contains(msg, "runs mysql") {
		t.Errorf("Archiving message %q does not name the engine", msg)
	}
	if err := get(ns, b.Name+"-archiver", &appsv1.Deployment{}); err == nil {
		t.Error("an archiver was created for a MySQL Database")
	}
	cj := &batchv1.CronJob{}
	eventually(t, func() error { return get(ns, "shop", cj) })
	for _, c := range cj.Spec.JobTemplate.Spec.Template.Spec.Containers {
		if c.Name == jobs.BaseContainer {
			t.Error("the runs of a MySQL Database's Backup take base backups")
		}
	}
}

// TestArchivingWithoutItsDatabase: a Backup with pointInTime whose
// Database does not exist says why nothing is archived, and the lag metric
// and its limit are exported for the alert.
func TestArchivingWithoutItsDatabase(t *testing.T) {
	ns := namespace(t)
	storeSecret(t, ns)
	create(t, newBackup(ns, "shop", pointInTime("orders")))
	b := waitFor(t, ns, "shop", "Archiving False", hasCond(v1alpha1.ConditionArchiving, "False", v1alpha1.ReasonArchiverNotRunning))
	if msg := cond(b, v1alpha1.ConditionArchiving).Message; !strings.Contains(msg, "Database orders does not exist") {
		t.Errorf("Archiving message %q does not say the Database is missing", msg)
	}
	eventually(t, func() error {
		if m := metric(t, "steward_backup_archive_max_lag_seconds", ns); m == nil || m.GetGauge().GetValue() != 120 {
			return fmt.Errorf("steward_backup_archive_max_lag_seconds %v, want 120", m)
		}
		if m := metric(t, "steward_backup_archive_lag_seconds", ns); m == nil {
			return fmt.Errorf("no steward_backup_archive_lag_seconds")
		}
		return nil
	})

	// Without pointInTime the condition and the metrics go.
	eventually(t, func() error {
		if err := get(ns, "shop", b); err != nil {
			return err
		}
		b.Spec.PointInTime = nil
		return k8s.Update(context.Background(), b)
	})
	waitFor(t, ns, "shop", "no Archiving condition", func(b *v1alpha1.Backup) bool {
		return cond(b, v1alpha1.ConditionArchiving) == nil && b.Status.PointInTime == nil
	})
	eventually(t, func() error {
		if m := metric(t, "steward_backup_archive_lag_seconds", ns); m != nil {
			return fmt.Errorf("steward_backup_archive_lag_seconds is still exported")
		}
		return nil
	})
}
