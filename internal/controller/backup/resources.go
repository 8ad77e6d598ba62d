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

package backup

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/labels"
)

// source is a resolved Backup source: where to connect and which image
// carries the right dump tool.
type source struct {
	conn  jobs.Connection
	image string
	// engine is the Database's, for a databaseRef source.
	engine v1alpha1.DatabaseEngine
}

// resolveSource finds the database a Backup dumps. A Database that does
// not exist or is not Ready yet is a wait, reported in status.
func (r *Reconciler) resolveSource(ctx context.Context, b *v1alpha1.Backup) (source, *conditions.Problem, error) {
	s := b.Spec.Source
	if c := s.Connection; c != nil {
		image := b.Spec.Image
		if image == "" {
			image = jobs.DefaultImage(s.Type)
		}
		return source{conn: jobs.Connection{Type: s.Type, Host: c.Host, Port: c.Port, Database: c.Database,
			CredentialsSecret: c.CredentialsSecretRef.Name}, image: image}, nil, nil
	}
	db := &v1alpha1.Database{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: s.DatabaseRef.Name}, db)
	switch {
	case apierrors.IsNotFound(err):
		return source{}, &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase,
			Message: fmt.Sprintf("Database %s does not exist", s.DatabaseRef.Name)}, nil
	case err != nil:
		return source{}, nil, fmt.Errorf("reading Database %s: %w", s.DatabaseRef.Name, err)
	}
	if want := db.SourceType(); want != s.Type {
		return source{}, &conditions.Problem{Reason: v1alpha1.ReasonInvalidSource, Message: fmt.Sprintf(
			"source.type is %s but Database %s runs %s, which needs %s", s.Type, db.Name, db.Spec.Engine, want)}, nil
	}
	if !conditions.EverTrue(db.Status.Conditions, v1alpha1.ConditionReady, v1alpha1.ReasonCreating) {
		return source{}, &conditions.Problem{Reason: v1alpha1.ReasonWaitingForDatabase,
			Message: fmt.Sprintf("Database %s has not been Ready yet", db.Name)}, nil
	}
	eng, engErr := engine.Get(string(db.Spec.Engine))
	if engErr != nil {
		return source{}, invalidSource(engErr), nil
	}
	image := b.Spec.Image
	if image == "" {
		image = engine.ImageFor(db, eng)
	}
	return source{conn: jobs.Connection{Type: s.Type, Host: db.Host(), Port: db.Port(),
		Database: db.Spec.DatabaseName, CredentialsSecret: db.CredentialsName()}, image: image, engine: db.Spec.Engine}, nil, nil
}

func invalidSource(err error) *conditions.Problem {
	return &conditions.Problem{Reason: v1alpha1.ReasonInvalidSource, Message: err.Error()}
}

// Labels are put on a Backup's CronJob, Jobs and pods.
func Labels(b *v1alpha1.Backup) map[string]string {
	l := labels.Common(b.Name, "backup")
	l[v1alpha1.LabelBackup] = b.Name
	return l
}

// ownerReference makes the Backup the controller of a child it applies.
func ownerReference(b *v1alpha1.Backup) *metav1ac.OwnerReferenceApplyConfiguration {
	return apply.ControllerReference(v1alpha1.GroupVersion.WithKind("Backup"), b)
}

func jobSpec(b *v1alpha1.Backup, src source, instanceImage string) *batchv1ac.JobSpecApplyConfiguration {
	return batchv1ac.JobSpec().
		// A failed run is reported, not retried: the next scheduled run
		// tries again, and a retry would hide the failure.
		WithBackoffLimit(0).
		WithTemplate(jobs.PodTemplate(jobs.Run{
			Command: "backup", Image: src.image, InstanceImage: instanceImage,
			Conn: src.conn, Destination: b.Spec.Destination, Retention: b.Spec.Retention,
			TimeZone: timeZone(b), Labels: Labels(b), PointInTime: basePointInTime(b, src),
		}))
}

// CronJob runs the Backup on its schedule, one run at a time.
func CronJob(b *v1alpha1.Backup, src source, instanceImage string) *batchv1ac.CronJobApplyConfiguration {
	spec := batchv1ac.CronJobSpec().
		WithSchedule(b.Spec.Schedule).
		WithSuspend(b.Spec.Suspend).
		WithConcurrencyPolicy(batchv1.ForbidConcurrent).
		WithStartingDeadlineSeconds(3600).
		WithSuccessfulJobsHistoryLimit(3).
		WithFailedJobsHistoryLimit(3).
		WithJobTemplate(batchv1ac.JobTemplateSpec().
			WithLabels(Labels(b)).
			WithSpec(jobSpec(b, src, instanceImage)))
	// The schedule's zone is always explicit, so the CronJob controller
	// and Steward's nextScheduleTime and staleness agree.
	spec.WithTimeZone(timeZone(b))
	return batchv1ac.CronJob(b.Name, b.Namespace).
		WithLabels(Labels(b)).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(spec)
}

// ManualJob is an on-demand run, asked for with v1alpha1.AnnotationBackupNow.
func ManualJob(b *v1alpha1.Backup, src source, instanceImage, value string) *batchv1ac.JobApplyConfiguration {
	return batchv1ac.Job(b.ManualJobName(value), b.Namespace).
		WithLabels(Labels(b)).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(jobSpec(b, src, instanceImage).WithTTLSecondsAfterFinished(int32(manualRunTTL.Seconds())))
}

// timeZone is the Backup's time zone, UTC by default.
func timeZone(b *v1alpha1.Backup) string {
	if b.Spec.TimeZone != nil && *b.Spec.TimeZone != "" {
		return *b.Spec.TimeZone
	}
	return "UTC"
}

// schedule is a parsed cron schedule in its time zone.
type schedule struct {
	cron.Schedule
	loc *time.Location
}

// next is the first run after t.
func (s schedule) next(t time.Time) time.Time { return s.Next(t.In(s.loc)) }

// interval is the time between the next two runs after t.
func (s schedule) interval(t time.Time) time.Duration {
	first := s.next(t)
	return s.next(first).Sub(first)
}

// parseSchedule checks what the CRD's pattern cannot: the fields' values
// and the time zone.
func parseSchedule(spec string, tz *string) (schedule, *conditions.Problem) {
	loc := time.UTC
	if tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return schedule{}, &conditions.Problem{Reason: v1alpha1.ReasonInvalidSchedule, Message: fmt.Sprintf("timeZone %q is not a known time zone", *tz)}
		}
		loc = l
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return schedule{}, &conditions.Problem{Reason: v1alpha1.ReasonInvalidSchedule, Message: fmt.Sprintf("schedule %q: %v", spec, err)}
	}
	return schedule{Schedule: s, loc: loc}, nil
}
