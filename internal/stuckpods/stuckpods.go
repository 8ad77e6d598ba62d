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

// Package stuckpods tells from pods' own status that they cannot start:
// unschedulable, an image that cannot be pulled, a crash loop, a failing
// init container, a container the kubelet cannot create. The WebApp,
// Database and Cache controllers turn what it finds into a Degraded
// condition, so that stuck work reports itself instead of showing
// "0 of N ready" forever.
//
// How long a problem has lasted is judged from the pod's own timestamps,
// never from when Steward first saw it, so that an operator restart does
// not reset the clock: the PodScheduled condition's lastTransitionTime for
// an unschedulable pod, and for a container the time the pod stopped being
// ready (or initialised), falling back to its creation.
package stuckpods

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
)

// DefaultTimeout is how long a pod must have been unable to start before
// its owner is Degraded, unless --stuck-pod-timeout says otherwise. It is
// longer than a normal image pull or a first scheduling attempt that
// waits for a node to scale up, and far shorter than a Deployment's
// progress deadline (ten minutes).
const DefaultTimeout = 2 * time.Minute

// OrDefault is timeout, or DefaultTimeout when timeout is not positive.
func OrDefault(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultTimeout
	}
	return timeout
}

// IsReason reports whether reason is one of those Find returns.
func IsReason(reason string) bool {
	switch reason {
	case v1alpha1.ReasonPodsUnschedulable, v1alpha1.ReasonImagePullFailing, v1alpha1.ReasonCrashLooping,
		v1alpha1.ReasonInitFailing, v1alpha1.ReasonContainerCannotStart:
		return true
	}
	return false
}

// recheckMargin is added to the time a problem still has to last, so that
// the look after the requeue is not a moment too early.
const recheckMargin = time.Second

// Limits on what of a pod's messages goes into a condition.
const (
	// maxMessage bounds a scheduler's or kubelet's message.
	maxMessage = 512
	// maxTailLines and maxTail bound what is kept of the end of a
	// termination message, which may be the container's log.
	maxTailLines = 3
	maxTail      = 300
)

// Problem is why a pod cannot start: a reason among those IsReason
// accepts, and a message naming the pod and container.
type Problem = conditions.Problem

// Find looks at the pods of one object. It returns the problem of the
// first pod, by name, that has been unable to start for at least timeout,
// or nil. The second value is how long to wait before looking again
// because a pod has a problem that has not lasted timeout yet, or 0: the
// passing of time sends no watch event.
func Find(pods []corev1.Pod, timeout time.Duration, now time.Time) (*Problem, time.Duration) {
	sorted := make([]*corev1.Pod, len(pods))
	for i := range pods {
		sorted[i] = &pods[i]
	}
	slices.SortFunc(sorted, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })

	var found *Problem
	more := 0
	var recheck time.Duration
	for _, pod := range sorted {
		d, ok := diagnose(pod)
		if !ok {
			continue
		}
		if left := d.since.Add(timeout).Sub(now); left > 0 {
			if wait := left + recheckMargin; recheck == 0 || wait < recheck {
				recheck = wait
			}
			continue
		}
		if found == nil {
			found = &Problem{Reason: d.reason, Message: d.message}
			continue
		}
		more++
	}
	switch {
	case found == nil:
	case more == 1:
		found.Message += " (and 1 more pod)"
	case more > 1:
		found.Message += fmt.Sprintf(" (and %d more pods)", more)
	}
	return found, recheck
}

// CannotStart returns why one pod cannot start right now (unschedulable,
// its image not pulled, crash-looping, ...), however briefly that has
// been so, and whether it cannot.
func CannotStart(pod *corev1.Pod) (*Problem, bool) {
	d, ok := diagnose(pod)
	if !ok {
		return nil, false
	}
	return &Problem{Reason: d.reason, Message: d.message}, true
}

// diagnosis is what is wrong with one pod and since when.
type diagnosis struct {
	reason, message string
	since           time.Time
}

// diagnose returns why a pod cannot start, if it cannot. Ready pods, pods
// being deleted and pods that finished are fine.
func diagnose(pod *corev1.Pod) (diagnosis, bool) {
	if !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return diagnosis{}, false
	}
	if c := condition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
		return diagnosis{}, false
	}
	if c := condition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		return diagnosis{
			reason:  v1alpha1.ReasonPodsUnschedulable,
			message: fmt.Sprintf("pod %s: %s: %s", pod.Name, c.Reason, clip(c.Message)),
			since:   orCreated(pod, c.LastTransitionTime),
		}, true
	}
	for i := range pod.Status.InitContainerStatuses {
		cs := &pod.Status.InitContainerStatuses[i]
		if reason, msg, ok := containerProblem(cs, true); ok {
			return diagnosis{
				reason:  reason,
				message: fmt.Sprintf("pod %s init container %s: %s", pod.Name, cs.Name, msg),
				since:   notInitializedSince(pod),
			}, true
		}
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if reason, msg, ok := containerProblem(cs, false); ok {
			return diagnosis{
				reason:  reason,
				message: fmt.Sprintf("pod %s container %s: %s", pod.Name, cs.Name, msg),
				since:   notReadySince(pod),
			}, true
		}
	}
	return diagnosis{}, false
}

// Waiting reasons of the kubelet, by what they mean.
var (
	imagePullReasons = []string{
		"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ImageInspectError", "RegistryUnavailable",
	}
	cannotStartReasons = []string{
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreStartHookError", "PostStartHookError",
	}
)

// crashLoopBackOff is the waiting reason of a container the kubelet backs
// off restarting.
const crashLoopBackOff = "CrashLoopBackOff"

// containerProblem returns the reason and message of a container that
// cannot start. A crash loop needs a restart count above zero: that the
// container ran and exited is the evidence. An init container that exited
// with an error fails its pod's start even before it is restarted.
func containerProblem(cs *corev1.ContainerStatus, init bool) (reason, message string, ok bool) {
	crashed := v1alpha1.ReasonCrashLooping
	if init {
		crashed = v1alpha1.ReasonInitFailing
	}
	if w := cs.State.Waiting; w != nil {
		switch {
		case slices.Contains(imagePullReasons, w.Reason):
			return v1alpha1.ReasonImagePullFailing, w.Reason + ": " + clip(w.Message), true
		case slices.Contains(cannotStartReasons, w.Reason):
			return v1alpha1.ReasonContainerCannotStart, w.Reason + ": " + clip(w.Message), true
		case w.Reason == crashLoopBackOff && cs.RestartCount > 0:
			return crashed, w.Reason + ": " + termination(cs.LastTerminationState.Terminated), true
		}
	}
	if t := cs.State.Terminated; init && t != nil && t.ExitCode != 0 {
		return crashed, "Terminated: " + termination(t), true
	}
	return "", "", false
}

// termination describes how a container ended: the end of its termination
// message (which FallbackToLogsOnError fills from its log) and its exit
// code.
func termination(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return "the container exited"
	}
	code := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		code += ", " + t.Reason
	}
	if tail := Tail(t.Message); tail != "" {
		return tail + " (" + code + ")"
	}
	return code
}

// Tail is what a condition may show of a termination message: its last
// few non-empty lines, joined with " | ", at most a few hundred characters,
// with values that look like passwords, secrets or tokens, and the
// password of URLs, replaced by "<redacted>". A termination message may be
// the end of the container's log, so it is never shown whole.
func Tail(msg string) string {
	var lines []string
	for l := range strings.Lines(Redact(msg)) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > maxTailLines {
		lines = lines[len(lines)-maxTailLines:]
	}
	s := strings.Join(lines, " | ")
	if r := []rune(s); len(r) > maxTail {
		s = "…" + string(r[len(r)-maxTail+1:])
	}
	return s
}

// clip shortens a scheduler's or kubelet's message to one line of at most
// maxMessage characters, redacted like Tail.
func clip(msg string) string {
	s := strings.Join(strings.Fields(Redact(msg)), " ")
	if r := []rune(s); len(r) > maxMessage {
		s = string(r[:maxMessage-1]) + "…"
	}
	return s
}

// Patterns of secret values in messages.
var (
	// secretAssignment is key=value, key: value or "key":"value" with a
	// secret-sounding key.
	secretAssignment = regexp.MustCompile(`(?i)\b([a-z_]*(?:password|passwd|secret|token)[a-z_]*)(["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)`)
	// sqlPassword is SQL's PASSWORD 'value', which a server may echo in
	// the statement it logs after an error.
	sqlPassword = regexp.MustCompile(`(?i)\b(password\s+)('[^']*'|"[^"]*")`)
	// urlPassword is the password of scheme://user:password@host.
	urlPassword = regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`)
)

// Redact replaces what looks like a secret value in msg with "<redacted>".
// It is a safety net: Steward never puts environment variables in a
// message, but a container's log may echo a password.
func Redact(msg string) string {
	msg = secretAssignment.ReplaceAllString(msg, "${1}${2}<redacted>")
	msg = sqlPassword.ReplaceAllString(msg, "${1}<redacted>")
	return urlPassword.ReplaceAllString(msg, "${1}<redacted>@")
}

// condition returns the pod's condition of type t, or nil.
func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// orCreated is t, or the pod's creation time when t is not set.
func orCreated(pod *corev1.Pod, t metav1.Time) time.Time {
	if t.IsZero() {
		return pod.CreationTimestamp.Time
	}
	return t.Time
}

// notReadySince is when the pod last stopped being ready (for a new pod,
// when the kubelet first reported it), or its creation.
func notReadySince(pod *corev1.Pod) time.Time {
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if c := condition(pod, t); c != nil && c.Status == corev1.ConditionFalse {
			return orCreated(pod, c.LastTransitionTime)
		}
	}
	return pod.CreationTimestamp.Time
}

// notInitializedSince is since when the pod's init containers have not
// completed, or notReadySince.
func notInitializedSince(pod *corev1.Pod) time.Time {
	if c := condition(pod, corev1.PodInitialized); c != nil && c.Status == corev1.ConditionFalse {
		return orCreated(pod, c.LastTransitionTime)
	}
	return notReadySince(pod)
}

// NewlyStuck is the Degraded condition of next to announce when an object
// that was Degraded already is found to have a pod that cannot start, or
// a different such cause: its phase does not change, the reason does. It
// is nil when there is nothing new to announce.
func NewlyStuck(prev, next []metav1.Condition) *metav1.Condition {
	before := meta.FindStatusCondition(prev, v1alpha1.ConditionDegraded)
	degraded := meta.FindStatusCondition(next, v1alpha1.ConditionDegraded)
	if degraded == nil || !IsReason(degraded.Reason) || (before != nil && before.Reason == degraded.Reason) {
		return nil
	}
	return degraded
}
