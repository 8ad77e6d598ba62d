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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/conditions"
)

const (
	// retryCheck is how long after a failed check of a destination it is
	// checked again, when neither it nor its credentials changed.
	retryCheck = 5 * time.Minute
	// checkDeadline bounds a check Job, pulling its image included.
	checkDeadline = 5 * time.Minute
	// deleteDeadline bounds a delete Job.
	deleteDeadline = time.Hour
	// taskTTL is how long a finished check or delete Job stays when the
	// operator does not delete it first.
	taskTTL = time.Hour
)

// destination is what a reconcile found out about the Backup's
// destination.
type destination struct {
	// hash identifies the destination and credentials in force; empty
	// when they could not be looked at.
	hash string
	// insecure: the endpoint is plain http:// and allowed.
	insecure bool
	// problem is why the destination cannot be used: a plain http://
	// endpoint that is not allowed, a missing credentials Secret, or the
	// failure of the newest check. Nil when the check passed or has not
	// finished.
	problem *conditions.Problem
	// checking: a check Job for hash runs, or was just created.
	checking bool
	// checked is a check that finished since status was written.
	checked *v1alpha1.DestinationCheck
	// done are finished check Jobs whose outcome the next status holds;
	// they are deleted once it is written.
	done []*batchv1.Job
	// retryAt is when a failed check is tried again.
	retryAt time.Time
}

// reconcileDestination checks the Backup's destination: through the API
// the endpoint's scheme and that the credentials Secret exists, and the
// store itself with a check Job in the Backup's namespace, which uses the
// Secret as the backup pods do. The operator never contacts the store.
// There is one check per destination and credentials (the Secret's
// resourceVersion), tried again after retryCheck when it failed.
func (r *Reconciler) reconcileDestination(ctx context.Context, b *v1alpha1.Backup, now time.Time) (destination, error) {
	d := b.Spec.Destination
	dest := destination{insecure: insecureEndpoint(d) && d.AllowInsecureEndpoint}
	if p := refusedEndpoint(d); p != nil {
		dest.problem = p
		return dest, nil
	}
	version, p, err := r.credentialsVersion(ctx, b)
	if p != nil || err != nil {
		dest.problem = p
		return dest, err
	}
	dest.hash = destinationHash(d, version, "")
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{v1alpha1.LabelBackupCheck: b.Name}); err != nil {
		return dest, fmt.Errorf("listing the check Jobs: %w", err)
	}
	last := b.Status.DestinationCheck
	if last != nil && last.Hash != dest.hash {
		last = nil
	}
	running := false
	for i := range list.Items {
		job := &list.Items[i]
		if job.Annotations[v1alpha1.AnnotationDestinationHash] != dest.hash {
			// A check of a destination or credentials no longer in force.
			if err := r.applier().Delete(ctx, job, b.UID); err != nil {
				return dest, err
			}
			continue
		}
		done, _, when, _ := finished(job)
		if !done {
			running = true
			continue
		}
		when = finishTime(job, when)
		if !recorded(last, job, when) {
			c, err := r.checkOutcome(ctx, job, dest.hash, when)
			if err != nil {
				return dest, err
			}
			dest.checked, last = c, c
		}
		dest.done = append(dest.done, job)
	}
	dest.checking = running
	if last != nil && last.Passed {
		return dest, nil
	}
	if last != nil {
		dest.problem = &conditions.Problem{Reason: last.Reason, Message: last.Message}
		if last.CompletionTime != nil {
			dest.retryAt = last.CompletionTime.Add(retryCheck)
		}
		if now.Before(dest.retryAt) {
			return dest, nil
		}
	}
	// A Job of the same name that finished goes first.
	if running || len(dest.done) > 0 {
		return dest, nil
	}
	if err := r.current(ctx, b); err != nil {
		return dest, err
	}
	job := &batchv1.Job{}
	if err := r.applier().Apply(ctx, CheckJob(b, dest.hash, r.InstanceImage), job, b.UID); err != nil {
		return dest, fmt.Errorf("starting the check of the destination: %w", err)
	}
	dest.checking = true
	return dest, nil
}

// errBehind is a Job not started because the cache holds an older Backup
// than the API server: the reconcile is tried again once it caught up.
var errBehind = errors.New("the cache has not caught up with the Backup yet")

// current returns errBehind unless the API server holds b at the version
// read from the cache. A check or a verification that finished is recorded
// in status and its Job deleted, and the cache can show the deletion before
// the status write: a Job started on the status it holds then would run a
// second time. Only the Backup's metadata is read, and only before a Job
// starts.
func (r *Reconciler) current(ctx context.Context, b *v1alpha1.Backup) error {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Backup"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), live); err != nil {
		return fmt.Errorf("reading Backup %s: %w", b.Name, err)
	}
	if live.ResourceVersion != b.ResourceVersion {
		return errBehind
	}
	return nil
}

// applier applies the Backup's children.
func (r *Reconciler) applier() apply.Applier {
	return apply.Applier{Client: r.Client, Reader: r.APIReader}
}

// insecureEndpoint reports whether d's endpoint is plain http://.
func insecureEndpoint(d v1alpha1.BackupDestination) bool {
	return strings.HasPrefix(d.Endpoint, "http://")
}

// refusedEndpoint is the problem of a plain http:// endpoint that
// allowInsecureEndpoint does not accept, or nil. The API server refuses
// such a destination; one stored before that rule is refused here.
func refusedEndpoint(d v1alpha1.BackupDestination) *conditions.Problem {
	if !insecureEndpoint(d) || d.AllowInsecureEndpoint {
		return nil
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonInsecureEndpoint, Message: fmt.Sprintf(
		"destination.endpoint %s is plain http://, which sends the dumps and the store's credentials or tokens unencrypted; "+
			"nothing runs against it: use https://, or set destination.allowInsecureEndpoint: true for a store inside the cluster",
		redact.URL(d.Endpoint))}
}

// credentialsVersion reads the metadata of the destination's credentials
// Secret, never its data, and returns its resourceVersion, or the problem
// that it does not exist. Without a Secret the version is "".
func (r *Reconciler) credentialsVersion(ctx context.Context, b *v1alpha1.Backup) (string, *conditions.Problem, error) {
	ref := b.Spec.Destination.CredentialsSecretRef
	if ref == nil {
		return "", nil, nil
	}
	s := &metav1.PartialObjectMetadata{}
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ref.Name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return "", &conditions.Problem{Reason: v1alpha1.ReasonCredentialsMissing, Message: fmt.Sprintf(
			"The destination's credentials Secret %s does not exist", ref.Name)}, nil
	case err != nil:
		return "", nil, fmt.Errorf("reading the credentials Secret %s: %w", ref.Name, err)
	}
	return string(s.UID) + "/" + s.ResourceVersion, nil, nil
}

// destinationHash identifies a destination, the version of its credentials
// Secret and, for a delete, the database whose dumps go.
func destinationHash(d v1alpha1.BackupDestination, credentials, database string) string {
	data, err := json.Marshal(struct {
		Destination v1alpha1.BackupDestination `json:"destination"`
		Credentials string                     `json:"credentials"`
		Database    string                     `json:"database,omitempty"`
	}{d, credentials, database})
	if err != nil {
		panic(err) // a struct of strings and bools always marshals
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// finishTime is when a finished Job ended: its condition's time, else its
// creation.
func finishTime(job *batchv1.Job, when time.Time) time.Time {
	if when.IsZero() {
		return job.CreationTimestamp.Time
	}
	return when
}

// recorded reports whether last holds the outcome of job, which ended at
// when. A check tried again has the same name and ends later.
func recorded(last *v1alpha1.DestinationCheck, job *batchv1.Job, when time.Time) bool {
	return last != nil && last.Job == job.Name && last.CompletionTime != nil && !when.Truncate(time.Second).After(last.CompletionTime.Time)
}

// checkOutcome reads a finished check Job's result. A result not read
// because the API server could not list the Job's pods is an error, tried
// again, not a failed check.
func (r *Reconciler) checkOutcome(ctx context.Context, job *batchv1.Job, hash string, when time.Time) (*v1alpha1.DestinationCheck, error) {
	c := &v1alpha1.DestinationCheck{Hash: hash, Job: job.Name, CompletionTime: metav1Time(when.Truncate(time.Second))}
	_, failed, _, msg := finished(job)
	res, ok, err := r.taskResult(ctx, job)
	if unread(ok, err) {
		return nil, err
	}
	switch {
	case ok && res.Succeeded && !failed, !ok && err == nil && !failed:
		// A Job completes only when its container exited 0.
		c.Passed, c.Reason = true, v1alpha1.ReasonCheckPassed
		c.Message = fmt.Sprintf("Job %s listed the bucket, wrote, read back and deleted a test object", job.Name)
	case ok:
		c.Reason, c.Message = checkReason(res.Reason), fmt.Sprintf("Job %s: %s", job.Name, res.Error)
	case err != nil:
		c.Reason, c.Message = v1alpha1.ReasonDestinationCheckFailed, fmt.Sprintf("Job %s: %v", job.Name, err)
	default:
		c.Reason, c.Message = v1alpha1.ReasonDestinationCheckFailed, fmt.Sprintf("Job %s failed without a result: %s", job.Name, msg)
	}
	return c, nil
}

// checkReason is the DestinationChecked reason of a failed check's result.
func checkReason(reason string) string {
	switch reason {
	case v1alpha1.ReasonDestinationUnreachable, v1alpha1.ReasonCredentialsRefused,
		v1alpha1.ReasonBucketNotFound, v1alpha1.ReasonCredentialsMissing:
		return reason
	}
	return v1alpha1.ReasonDestinationCheckFailed
}

// taskResult reads a finished check or delete Job's result from its pod.
// A Job of the same name made before it may leave pods behind: only the
// Job's own count.
func (r *Reconciler) taskResult(ctx context.Context, job *batchv1.Job) (dumpcmd.Result, bool, error) {
	res, ok, err := r.taskResultIn(ctx, r.Client, job)
	if ok {
		return res, ok, err
	}
	// The Job's completion can reach the cache before its pod's final
	// status does: the API server tells whether the pod and its result
	// are really gone.
	return r.taskResultIn(ctx, r.APIReader, job)
}

// taskResultIn is taskResult as reader sees the Job's pods.
func (r *Reconciler) taskResultIn(ctx context.Context, reader client.Reader, job *batchv1.Job) (dumpcmd.Result, bool, error) {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return dumpcmd.Result{}, false, &podsUnlisted{job: job.Name, err: err}
	}
	var lastErr error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if uid := pod.Labels[batchv1.ControllerUidLabel]; uid != "" && uid != string(job.UID) {
			continue
		}
		res, ok, err := jobs.Result(pod)
		if ok {
			return res, true, nil
		}
		if err != nil {
			lastErr = err
		}
	}
	return dumpcmd.Result{}, false, lastErr
}

// podsUnlisted is a Job's result not read because its pods could not be
// listed: it may still be there.
type podsUnlisted struct {
	job string
	err error
}

func (e *podsUnlisted) Error() string {
	return fmt.Sprintf("listing the pods of Job %s: %v", e.job, e.err)
}
func (e *podsUnlisted) Unwrap() error { return e.err }

// unread reports whether taskResult found no result only because the pods
// could not be listed.
func unread(ok bool, err error) bool {
	var u *podsUnlisted
	return !ok && errors.As(err, &u)
}

// taskLabels are put on a Backup's check or delete Job and its pod: the
// Backup's common labels and label, which is LabelBackupCheck or
// LabelBackupDelete, but not LabelBackup, which selects its runs.
func taskLabels(b *v1alpha1.Backup, label string) map[string]string {
	l := Labels(b)
	delete(l, v1alpha1.LabelBackup)
	l[label] = b.Name
	return l
}

// CheckJob checks the destination that hash identifies, in Steward's own
// image, with the destination's credentials Secret.
func CheckJob(b *v1alpha1.Backup, hash, instanceImage string) *batchv1ac.JobApplyConfiguration {
	return taskJob(b, b.CheckJobName(hash), v1alpha1.LabelBackupCheck, hash, checkDeadline, jobs.Task{
		Command: dumpcmd.CommandCheck, Image: instanceImage, Destination: b.Spec.Destination})
}

// DeleteJob deletes the dumps of database from the destination, in
// Steward's own image, with the destination's credentials Secret; hash
// identifies the destination, credentials and database.
func DeleteJob(b *v1alpha1.Backup, hash, database, instanceImage string) *batchv1ac.JobApplyConfiguration {
	return taskJob(b, b.DeleteJobName(), v1alpha1.LabelBackupDelete, hash, deleteDeadline, jobs.Task{
		Command: dumpcmd.CommandDelete, Image: instanceImage, Destination: b.Spec.Destination, Database: database})
}

// taskJob runs t once: a failure is reported, and the operator decides
// when to try again.
func taskJob(b *v1alpha1.Backup, name, label, hash string, deadline time.Duration, t jobs.Task) *batchv1ac.JobApplyConfiguration {
	t.Labels = taskLabels(b, label)
	return batchv1ac.Job(name, b.Namespace).
		WithLabels(t.Labels).
		WithAnnotations(map[string]string{v1alpha1.AnnotationDestinationHash: hash}).
		WithOwnerReferences(ownerReference(b)).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(0).
			WithActiveDeadlineSeconds(int64(deadline.Seconds())).
			WithTTLSecondsAfterFinished(int32(taskTTL.Seconds())).
			WithTemplate(jobs.TaskPodTemplate(t)))
}
