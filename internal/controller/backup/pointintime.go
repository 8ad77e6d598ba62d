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
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/metrics"
)

// archiverPoll is how often a Backup with point-in-time recovery is looked
// at: its archiver's report is read, not watched.
const archiverPoll = 15 * time.Second

// ArchiverName is the Deployment of a Backup's archiver.
func ArchiverName(b *v1alpha1.Backup) string { return b.Name + "-archiver" }

// archiverLabels are the archiver's Deployment's and pod's labels. They
// carry the Backup's label, so that a change of the pod wakes the Backup.
func archiverLabels(b *v1alpha1.Backup) map[string]string {
	l := labels.Common(b.Name, "backup-archiver")
	l[v1alpha1.LabelBackup] = b.Name
	return l
}

// replicationSecret is the Secret of a Database's replication user.
func replicationSecret(b *v1alpha1.Backup) string {
	db := v1alpha1.Database{}
	db.Name = b.Spec.Source.DatabaseRef.Name
	return db.SuperuserName()
}

// basePointInTime is what a run of a Backup with spec.pointInTime adds: a
// base backup beside the dump.
func basePointInTime(b *v1alpha1.Backup, src source) *jobs.PointInTime {
	if b.Spec.PointInTime == nil || b.Spec.Source.DatabaseRef == nil || v1alpha1.PointInTimeUnsupported(src.engine) != "" {
		return nil
	}
	return &jobs.PointInTime{Archive: src.conn.Database, ReplicationSecret: replicationSecret(b)}
}

// ArchiverDeployment is a Backup's archiver.
func ArchiverDeployment(b *v1alpha1.Backup, src source, instanceImage string) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(ArchiverName(b), b.Namespace).
		WithLabels(archiverLabels(b)).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(jobs.ArchiverDeployment(jobs.Archiver{
			Image: src.image, InstanceImage: instanceImage, Type: src.conn.Type, Host: src.conn.Host, Port: src.conn.Port,
			Archive: src.conn.Database, ReplicationSecret: replicationSecret(b), Destination: b.Spec.Destination,
			Labels: archiverLabels(b),
		}))
}

// archiverClient reads archivers' reports.
var archiverClient = &http.Client{Timeout: 3 * time.Second}

// reconcilePointInTime runs the archiver of a Backup with
// spec.pointInTime, reads its report and the runs' base backups into
// next, and sets the Archiving condition. Without spec.pointInTime it
// removes the archiver; the archive stays where it is, as the dumps do.
func (r *Reconciler) reconcilePointInTime(ctx context.Context, b *v1alpha1.Backup, next *v1alpha1.BackupStatus, now time.Time) error {
	if b.Spec.PointInTime == nil {
		next.PointInTime = nil
		meta.RemoveStatusCondition(&next.Conditions, v1alpha1.ConditionArchiving)
		metrics.ArchiveLag.DeleteLabelValues(b.Namespace, b.Name)
		metrics.ArchiveLagLimit.DeleteLabelValues(b.Namespace, b.Name)
		_, err := r.stopArchiver(ctx, b)
		return err
	}
	st := next.PointInTime
	if st == nil {
		st = &v1alpha1.PointInTimeStatus{}
		next.PointInTime = st
	}
	set := func(ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: status,
			Reason: reason, Message: msg, ObservedGeneration: b.Generation})
	}
	if err := r.baseBackups(ctx, b, st); err != nil {
		return err
	}
	src, p, err := r.resolveSource(ctx, b)
	if err != nil {
		return err
	}
	if p != nil {
		st.Streaming = false
		set(false, v1alpha1.ReasonArchiverNotRunning, "No archiver runs: "+p.Message)
		r.observeLag(b, st, now)
		return nil
	}
	if why := v1alpha1.PointInTimeUnsupported(src.engine); why != "" {
		st.Streaming = false
		set(false, v1alpha1.ReasonPointInTimeUnsupported, "No archiver runs: "+why)
		r.observeLag(b, st, now)
		_, err := r.stopArchiver(ctx, b)
		return err
	}
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ArchiverName(b)}, d); client.IgnoreNotFound(err) != nil {
		return err
	}
	if err := r.applier().Apply(ctx, ArchiverDeployment(b, src, r.InstanceImage), d, b.UID); err != nil {
		return fmt.Errorf("applying the archiver's Deployment: %w", err)
	}
	pod, why, err := r.archiverPod(ctx, b)
	if err != nil {
		return err
	}
	if pod == nil {
		st.Streaming = false
		set(false, v1alpha1.ReasonArchiverNotRunning, why)
		r.observeLag(b, st, now)
		return nil
	}
	rep, err := readArchiver(ctx, pod)
	if err != nil {
		st.Streaming = false
		set(false, v1alpha1.ReasonArchiverUnreachable, fmt.Sprintf("Reading the report of archiver pod %s: %v", pod.Name, err))
		r.observeLag(b, st, now)
		return nil
	}
	st.Streaming, st.Gap = rep.Streaming, rep.Gap
	if rep.LastSegment != "" {
		st.LastArchivedSegment = rep.LastSegment
	}
	if rep.ArchivedUntil != nil && (st.LastRecoverableTime == nil || rep.ArchivedUntil.After(st.LastRecoverableTime.Time)) {
		st.LastRecoverableTime = &metav1.Time{Time: rep.ArchivedUntil.Truncate(time.Second)}
	}
	st.ArchiveFailures, st.LastArchiveFailure = rep.Failures, rep.LastFailure
	if rep.LastFailureTime != nil {
		st.LastArchiveFailureTime = &metav1.Time{Time: rep.LastFailureTime.Truncate(time.Second)}
	}
	r.observeLag(b, st, now)
	set(v1alpha1.ArchivingVerdict(st, now, b.Spec.PointInTime.ArchiveLagLimit()))
	return nil
}

// stopArchiver deletes the Backup's archiver Deployment, if it has one,
// and reports whether no archiver pod is left: once stopped, nothing
// uploads any more.
func (r *Reconciler) stopArchiver(ctx context.Context, b *v1alpha1.Backup) (stopped bool, err error) {
	d := &appsv1.Deployment{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ArchiverName(b)}, d)
	switch {
	case err == nil && metav1.IsControlledBy(d, b) && d.DeletionTimestamp == nil:
		fg := metav1.DeletePropagationForeground
		if err := r.Client.Delete(ctx, d, &client.DeleteOptions{PropagationPolicy: &fg}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting the archiver's Deployment: %w", err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(b.Namespace), client.MatchingLabels(archiverLabels(b))); err != nil {
		return false, err
	}
	return len(pods.Items) == 0, nil
}

// observeLag records the archive's lag in status and the metric. Before
// anything was archived, the metric counts from the Backup's creation:
// an archive that never began lags as much as one that stopped then.
func (r *Reconciler) observeLag(b *v1alpha1.Backup, st *v1alpha1.PointInTimeStatus, now time.Time) {
	metrics.ArchiveLagLimit.WithLabelValues(b.Namespace, b.Name).Set(b.Spec.PointInTime.ArchiveLagLimit().Seconds())
	if st.LastRecoverableTime == nil {
		st.ArchiveLagSeconds = nil
		metrics.ArchiveLag.WithLabelValues(b.Namespace, b.Name).Set(now.Sub(b.CreationTimestamp.Time).Seconds())
		return
	}
	lag := int64(now.Sub(st.LastRecoverableTime.Time).Seconds())
	st.ArchiveLagSeconds = &lag
	metrics.ArchiveLag.WithLabelValues(b.Namespace, b.Name).Set(float64(lag))
}

// archiverPod is the archiver's running pod, or nil and why there is
// none.
func (r *Reconciler) archiverPod(ctx context.Context, b *v1alpha1.Backup) (*corev1.Pod, string, error) {
	pods := &corev1.PodList{}
	sel := archiverLabels(b)
	if err := r.Client.List(ctx, pods, client.InNamespace(b.Namespace), client.MatchingLabels(sel)); err != nil {
		return nil, "", fmt.Errorf("listing the archiver's pods: %w", err)
	}
	why := fmt.Sprintf("Deployment %s has no pod yet", ArchiverName(b))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == jobs.ArchiverContainer && cs.State.Running != nil {
					return p, "", nil
				}
			}
		}
		why = fmt.Sprintf("Archiver pod %s is %s", p.Name, p.Status.Phase)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				why += fmt.Sprintf(": container %s is waiting (%s) %s", cs.Name, w.Reason, w.Message)
				break
			}
		}
	}
	return nil, why, nil
}

// readArchiver reads an archiver's GET /status.
func readArchiver(ctx context.Context, pod *corev1.Pod) (pitrcmd.Status, error) {
	var st pitrcmd.Status
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(pitrcmd.ArchiverPort)) + "/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	resp, err := archiverClient.Do(req)
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// baseBackups records the newest finished run's base backup.
func (r *Reconciler) baseBackups(ctx context.Context, b *v1alpha1.Backup, st *v1alpha1.PointInTimeStatus) error {
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBackup: b.Name}); err != nil {
		return fmt.Errorf("listing Jobs: %w", err)
	}
	var newest *batchv1.Job
	var newestAt time.Time
	for i := range list.Items {
		job := &list.Items[i]
		done, _, when, _ := finished(job)
		if done && when.After(newestAt) {
			newest, newestAt = job, when
		}
	}
	if newest == nil || (st.LastBaseBackup != nil && st.LastBaseBackup.Job == newest.Name) {
		return nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(b.Namespace), client.MatchingLabels{"job-name": newest.Name}); err != nil {
		return fmt.Errorf("listing the pods of Job %s: %w", newest.Name, err)
	}
	for i := range pods.Items {
		res, ok, ended := jobs.BaseResult(&pods.Items[i])
		if ended != nil {
			// The container ended without a result: that is the base
			// backup's outcome, recorded, not an error of this reconcile.
			st.LastBaseBackup = &v1alpha1.BaseBackupRun{Job: newest.Name, Message: ended.Error(), CompletionTime: metav1Time(newestAt)}
			break
		}
		if !ok {
			continue
		}
		run := &v1alpha1.BaseBackupRun{Job: newest.Name, Succeeded: res.Succeeded, Object: res.BaseKey, Size: res.Size,
			CompletionTime: metav1Time(res.CompletionTime), Message: res.Error}
		if res.Succeeded && res.PruneError != "" {
			run.Message = "Pruning old base backups and WAL failed: " + res.PruneError
		}
		st.LastBaseBackup = run
		if res.FirstRecoverable != nil {
			st.FirstRecoverableTime = &metav1.Time{Time: res.FirstRecoverable.Truncate(time.Second).Add(time.Second)}
		}
		return nil
	}
	return nil
}

// verifyPointInTime is what a verification of a Backup with
// spec.pointInTime adds: a recovery of the archive to its latest point.
func verifyPointInTime(b *v1alpha1.Backup, src source) *jobs.PointInTime {
	if b.Spec.PointInTime == nil {
		return nil
	}
	return &jobs.PointInTime{Archive: src.conn.Database}
}

// pointInTimeOutcome adds the recovery of a verification's pod to its
// outcome: a failed recovery fails the verification.
func (r *Reconciler) pointInTimeOutcome(ctx context.Context, job *batchv1.Job, v *v1alpha1.BackupVerification) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return
	}
	for i := range pods.Items {
		res, ok, ended := jobs.PITRVerifyResult(&pods.Items[i])
		var p *v1alpha1.PointInTimeVerification
		switch {
		case ended != nil:
			p = &v1alpha1.PointInTimeVerification{Message: ended.Error()}
		case ok:
			p = &v1alpha1.PointInTimeVerification{Passed: res.Succeeded, BaseBackup: res.BaseKey, Tables: int32(res.Tables), Rows: res.Rows,
				DurationSeconds: int64(res.DurationSeconds + 0.5), Message: res.Error}
			if res.RecoveryPoint != nil {
				p.RecoveryPoint = &metav1.Time{Time: res.RecoveryPoint.Truncate(time.Second)}
			}
		default:
			continue
		}
		v.PointInTime = p
		if !p.Passed && v.Passed {
			v.Passed, v.Reason = false, v1alpha1.ReasonPointInTimeRecoveryFailed
			v.Message = "The dump verified, but the recovery of the archive to its latest point failed: " + p.Message
		}
		return
	}
}
