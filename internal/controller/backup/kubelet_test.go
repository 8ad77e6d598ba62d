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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/jobs"
)

// ranJob is what runJob saw of a pod it ran.
type ranJob struct {
	// code is the exit code; message the termination message.
	code    int
	message string
	result  dumpcmd.Result
	// log is what the command printed.
	log string
}

// runJob runs the pod of a Job in the test's process, as a kubelet would
// run its container: the command from the container's command or
// arguments, its environment with secretKeyRefs resolved, its Secret
// volumes written to directories that stand in for their mount paths, and
// the termination log in a file. The command's termination message and
// exit code then go into a pod of the Job, and the Job's conditions are
// set, as the kubelet and the Job controller would. Envtest runs no pods.
func runJob(t *testing.T, ns, name string) ranJob {
	t.Helper()
	j := &batchv1.Job{}
	eventually(t, func() error { return get(ns, name, j) })
	spec := j.Spec.Template.Spec
	c := spec.Containers[0]
	args := append(append([]string{}, c.Command...), c.Args...)
	if len(args) > 0 && strings.HasPrefix(args[0], "/") {
		args = args[1:]
	}
	if len(args) != 1 {
		t.Fatalf("Job %s runs %q: want one subcommand", name, args)
	}

	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			dir := t.TempDir()
			s := &corev1.Secret{}
			if err := get(ns, v.Secret.SecretName, s); err != nil {
				t.Fatalf("the pod's Secret volume %s: %v", v.Secret.SecretName, err)
			}
			for k, data := range s.Data {
				if err := os.WriteFile(filepath.Join(dir, k), data, 0o400); err != nil {
					t.Fatal(err)
				}
			}
			mounts[m.MountPath] = dir
		}
	}
	env := map[string]string{dumpcmd.EnvTerminationLog: filepath.Join(t.TempDir(), "termination-log")}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			s := &corev1.Secret{}
			if err := get(ns, e.ValueFrom.SecretKeyRef.Name, s); err != nil {
				t.Fatalf("the pod's Secret %s: %v", e.ValueFrom.SecretKeyRef.Name, err)
			}
			env[e.Name] = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		case mounts[e.Value] != "":
			env[e.Name] = mounts[e.Value]
		default:
			env[e.Name] = e.Value
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log syncBuffer
	code := dump.Main(ctx, args[0], func(k string) string { return env[k] }, &log)
	data, err := os.ReadFile(env[dumpcmd.EnvTerminationLog])
	if err != nil {
		t.Fatalf("Job %s wrote no termination message: %v", name, err)
	}
	res, err := dumpcmd.ParseResult(string(data))
	if err != nil {
		t.Fatal(err)
	}
	finishJobWith(t, ns, name, string(data), int32(code))
	return ranJob{code: code, message: string(data), result: res, log: log.String()}
}

// finishJobWith creates the Job's pod with a terminated run container,
// its exit code and termination message, and sets the Job's conditions.
func finishJobWith(t *testing.T, ns, job, message string, exit int32) {
	t.Helper()
	j := &batchv1.Job{}
	eventually(t, func() error { return get(ns, job, j) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-pod", Namespace: ns, Labels: map[string]string{}},
		Spec:       *j.Spec.Template.Spec.DeepCopy(),
	}
	for k, v := range j.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[batchv1.JobNameLabel] = job
	pod.Labels[batchv1.ControllerUidLabel] = string(j.UID)
	create(t, pod)
	pod.Status.Phase = corev1.PodSucceeded
	if exit != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: jobs.Container, Image: j.Spec.Template.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: message}},
	}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	j.Status.StartTime = &now
	if exit == 0 {
		j.Status.CompletionTime = &now
		j.Status.Succeeded = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
		}
	}
	if err := k8s.Status().Update(context.Background(), j); err != nil {
		t.Fatalf("finishing Job %s: %v", job, err)
	}
}

// syncBuffer collects output written and read concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
