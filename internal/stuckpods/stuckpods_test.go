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

package stuckpods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/steward-dev/steward/api/v1alpha1"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const timeout = 2 * time.Minute

// ago is a pod timestamp d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// pod is a pod created ten minutes ago whose status mutate fabricates, as
// a kubelet or scheduler would write it.
func pod(name string, mutate func(*corev1.PodStatus)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(10 * time.Minute)},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	mutate(&p.Status)
	return p
}

func unschedulable(since time.Duration) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient memory.", LastTransitionTime: ago(since),
		}}
	}
}

// notReady is a scheduled pod that has not been ready for since, whose
// container has the status cs.
func notReady(since time.Duration, cs corev1.ContainerStatus) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(since)},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: ago(since)},
		}
		s.ContainerStatuses = []corev1.ContainerStatus{cs}
	}
}

func waiting(reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func crashLooping(restarts int32, exitCode int32, msg string) corev1.ContainerStatus {
	cs := waiting("CrashLoopBackOff", "back-off 40s restarting failed container=postgres")
	cs.Name = "postgres"
	cs.RestartCount = restarts
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error", Message: msg}
	return cs
}

// initFailing is a pod whose init container has the status cs since since.
func initFailing(since time.Duration, cs corev1.ContainerStatus) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		s.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(since)},
			{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, LastTransitionTime: ago(since)},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(since)},
		}
		cs.Name = "steward"
		s.InitContainerStatuses = []corev1.ContainerStatus{cs}
		s.ContainerStatuses = []corev1.ContainerStatus{waiting("PodInitializing", "")}
	}
}

func ready(s *corev1.PodStatus) {
	s.Phase = corev1.PodRunning
	s.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Minute)},
	}
	cs := corev1.ContainerStatus{Name: "app", Ready: true, RestartCount: 3, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	s.ContainerStatuses = []corev1.ContainerStatus{cs}
}

func TestFind(t *testing.T) {
	fatal := "2026-03-01 11:58:00 LOG:  starting PostgreSQL 16\n" +
		"2026-03-01 11:58:00 FATAL:  invalid value for parameter \"shared_buffers\": \"lots\"\n"
	tests := []struct {
		name string
		pod  corev1.Pod
		// reason and message are the problem's, "" for none.
		reason, message string
		// recheck is whether Find asks to look again.
		recheck bool
	}{
		{
			name:    "unschedulable over the timeout",
			pod:     pod("shop-5d9f-abc", unschedulable(3*time.Minute)),
			reason:  v1alpha1.ReasonPodsUnschedulable,
			message: "pod shop-5d9f-abc: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.",
		},
		{
			name:    "unschedulable under the timeout",
			pod:     pod("shop-5d9f-abc", unschedulable(time.Minute)),
			recheck: true,
		},
		{
			name: "unschedulable without a transition time counts from creation",
			pod: pod("shop-5d9f-abc", func(s *corev1.PodStatus) {
				unschedulable(0)(s)
				s.Conditions[0].LastTransitionTime = metav1.Time{}
			}),
			reason:  v1alpha1.ReasonPodsUnschedulable,
			message: "pod shop-5d9f-abc: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.",
		},
		{
			name:    "image pull back-off over the timeout",
			pod:     pod("shop-1", notReady(5*time.Minute, waiting("ImagePullBackOff", `Back-off pulling image "shop:nope"`))),
			reason:  v1alpha1.ReasonImagePullFailing,
			message: `pod shop-1 container app: ImagePullBackOff: Back-off pulling image "shop:nope"`,
		},
		{
			name:    "image pull error under the timeout",
			pod:     pod("shop-1", notReady(30*time.Second, waiting("ErrImagePull", "not found"))),
			recheck: true,
		},
		{
			name:    "invalid image name",
			pod:     pod("shop-1", notReady(5*time.Minute, waiting("InvalidImageName", `couldn't parse image name "Shop:1"`))),
			reason:  v1alpha1.ReasonImagePullFailing,
			message: `pod shop-1 container app: InvalidImageName: couldn't parse image name "Shop:1"`,
		},
		{
			name:    "crash loop over the timeout carries the server's own error",
			pod:     pod("orders-0", notReady(5*time.Minute, crashLooping(4, 1, fatal))),
			reason:  v1alpha1.ReasonCrashLooping,
			message: `pod orders-0 container postgres: CrashLoopBackOff: 2026-03-01 11:58:00 LOG:  starting PostgreSQL 16 | 2026-03-01 11:58:00 FATAL:  invalid value for parameter "shared_buffers": "lots" (exit code 1)`,
		},
		{
			name:    "crash loop under the timeout",
			pod:     pod("orders-0", notReady(time.Minute, crashLooping(2, 1, fatal))),
			recheck: true,
		},
		{
			name:    "crash loop without a message gives the exit code",
			pod:     pod("orders-0", notReady(5*time.Minute, crashLooping(4, 137, ""))),
			reason:  v1alpha1.ReasonCrashLooping,
			message: "pod orders-0 container postgres: CrashLoopBackOff: exit code 137",
		},
		{
			name: "out of memory",
			pod: pod("orders-0", notReady(5*time.Minute, func() corev1.ContainerStatus {
				cs := crashLooping(4, 137, "")
				cs.LastTerminationState.Terminated.Reason = "OOMKilled"
				return cs
			}())),
			reason:  v1alpha1.ReasonCrashLooping,
			message: "pod orders-0 container postgres: CrashLoopBackOff: exit code 137, OOMKilled",
		},
		{
			name: "a back-off without a restart is no evidence",
			pod:  pod("orders-0", notReady(5*time.Minute, crashLooping(0, 1, fatal))),
		},
		{
			name:    "init container crash loop",
			pod:     pod("orders-0", initFailing(5*time.Minute, crashLooping(3, 1, "copy-binary: open /copy/steward: permission denied"))),
			reason:  v1alpha1.ReasonInitFailing,
			message: "pod orders-0 init container steward: CrashLoopBackOff: copy-binary: open /copy/steward: permission denied (exit code 1)",
		},
		{
			name: "init container exited with an error",
			pod: pod("orders-0", initFailing(5*time.Minute, corev1.ContainerStatus{State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "usage: steward copy-binary DEST"},
			}})),
			reason:  v1alpha1.ReasonInitFailing,
			message: "pod orders-0 init container steward: Terminated: usage: steward copy-binary DEST (exit code 2)",
		},
		{
			name: "init container failing under the timeout",
			pod: pod("orders-0", initFailing(10*time.Second, corev1.ContainerStatus{State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 2},
			}})),
			recheck: true,
		},
		{
			name:    "init container image",
			pod:     pod("orders-0", initFailing(5*time.Minute, waiting("ErrImagePull", "pull access denied"))),
			reason:  v1alpha1.ReasonImagePullFailing,
			message: "pod orders-0 init container steward: ErrImagePull: pull access denied",
		},
		{
			name:    "missing Secret",
			pod:     pod("shop-1", notReady(5*time.Minute, waiting("CreateContainerConfigError", `secret "shop-db" not found`))),
			reason:  v1alpha1.ReasonContainerCannotStart,
			message: `pod shop-1 container app: CreateContainerConfigError: secret "shop-db" not found`,
		},
		{
			name: "starting normally",
			pod:  pod("shop-1", notReady(5*time.Minute, waiting("ContainerCreating", ""))),
		},
		{
			name: "recovered: ready",
			pod:  pod("orders-0", ready),
		},
		{
			name: "no status yet",
			pod:  pod("shop-1", func(*corev1.PodStatus) {}),
		},
		{
			name: "being deleted",
			pod: func() corev1.Pod {
				p := pod("shop-1", unschedulable(time.Hour))
				p.DeletionTimestamp = new(ago(time.Second))
				return p
			}(),
		},
		{
			name: "failed pods are replaced, not stuck",
			pod: pod("shop-1", func(s *corev1.PodStatus) {
				notReady(time.Hour, crashLooping(4, 1, ""))(s)
				s.Phase = corev1.PodFailed
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, recheck := Find([]corev1.Pod{tt.pod}, timeout, now)
			switch {
			case tt.reason == "" && p != nil:
				t.Errorf("found %+v, want nothing", *p)
			case tt.reason != "" && p == nil:
				t.Errorf("found nothing, want %s", tt.reason)
			case p != nil && (p.Reason != tt.reason || p.Message != tt.message):
				t.Errorf("found\n%s: %s\nwant\n%s: %s", p.Reason, p.Message, tt.reason, tt.message)
			}
			if (recheck > 0) != tt.recheck {
				t.Errorf("recheck after %v, want a recheck: %t", recheck, tt.recheck)
			}
		})
	}
}

func TestFindRechecksWhenTheFirstProblemReachesTheTimeout(t *testing.T) {
	pods := []corev1.Pod{
		pod("a", unschedulable(90*time.Second)),
		pod("b", notReady(100*time.Second, waiting("ImagePullBackOff", ""))),
		pod("c", ready),
	}
	p, recheck := Find(pods, timeout, now)
	if p != nil {
		t.Errorf("found %+v before the timeout", *p)
	}
	if want := 20*time.Second + recheckMargin; recheck != want {
		t.Errorf("recheck after %v, want %v", recheck, want)
	}
	// Once it has passed, the problem is reported.
	if p, _ := Find(pods, timeout, now.Add(recheck)); p == nil || p.Reason != v1alpha1.ReasonImagePullFailing {
		t.Errorf("after the recheck: %+v, want ImagePullFailing", p)
	}
}

func TestFindReportsTheFirstPodByNameAndCountsTheOthers(t *testing.T) {
	pods := []corev1.Pod{
		pod("shop-c", unschedulable(time.Hour)),
		pod("shop-a", notReady(time.Hour, waiting("ImagePullBackOff", "x"))),
		pod("shop-d", unschedulable(time.Second)),
		pod("shop-b", unschedulable(time.Hour)),
	}
	p, recheck := Find(pods, timeout, now)
	if p == nil || p.Reason != v1alpha1.ReasonImagePullFailing || !strings.HasPrefix(p.Message, "pod shop-a ") ||
		!strings.HasSuffix(p.Message, " (and 2 more pods)") {
		t.Errorf("found %+v", p)
	}
	if recheck == 0 {
		t.Error("no recheck for shop-d")
	}
}

func TestMessagesAreShortAndRedacted(t *testing.T) {
	log := strings.Repeat("starting up, please wait\n", 50) +
		"connecting to postgres://app:s3cr3t-pw@orders:5432/app\n" +
		"ERROR: password authentication failed; STATEMENT: ALTER ROLE app PASSWORD 'hunter22'\n" +
		`{"level":"ERROR","msg":"instance failed","POSTGRES_PASSWORD":"topsecret1","token=abc123"}` + "\n\n"
	got := Tail(log)
	for _, secret := range []string{"s3cr3t-pw", "hunter22", "topsecret1", "abc123"} {
		if strings.Contains(got, secret) {
			t.Errorf("tail shows %q: %s", secret, got)
		}
	}
	if strings.Contains(got, "please wait") || !strings.Contains(got, "password authentication failed") {
		t.Errorf("tail is not the last lines: %s", got)
	}
	if n := len([]rune(got)); n > maxTail {
		t.Errorf("tail has %d characters, want at most %d", n, maxTail)
	}
	long := clip(strings.Repeat("0/500 nodes are available: 1 Insufficient memory. ", 100))
	if n := len([]rune(long)); n > maxMessage {
		t.Errorf("message has %d characters, want at most %d", n, maxMessage)
	}
}

func TestDiagnosisChanged(t *testing.T) {
	pred := DiagnosisChanged()
	update := func(old, pod corev1.Pod) bool {
		return pred.Update(event.UpdateEvent{ObjectOld: &old, ObjectNew: &pod})
	}
	creating := pod("shop-1", notReady(time.Minute, waiting("ContainerCreating", "")))
	heartbeat := *creating.DeepCopy()
	heartbeat.Labels = map[string]string{"touched": "yes"}
	if update(creating, heartbeat) {
		t.Error("a metadata-only change passes")
	}
	up := pod("shop-1", ready)
	if update(creating, up) {
		t.Error("a pod that started normally passes")
	}
	if pred.Create(event.CreateEvent{Object: &creating}) || pred.Delete(event.DeleteEvent{Object: &up}) {
		t.Error("the creation or deletion of a pod that can start passes")
	}

	pulling := pod("shop-1", notReady(time.Minute, waiting("ErrImagePull", "")))
	if !update(creating, pulling) {
		t.Error("a container that cannot pull its image does not pass")
	}
	backingOff := pod("shop-1", notReady(time.Minute, waiting("ImagePullBackOff", "back-off pulling image")))
	if update(pulling, backingOff) {
		t.Error("the same problem with another kubelet reason and message passes")
	}
	crashing := pod("shop-1", notReady(time.Minute, crashLooping(2, 1, "boom")))
	if !update(backingOff, crashing) {
		t.Error("a problem of another reason does not pass")
	}
	if !update(pulling, up) {
		t.Error("a pod that became ready does not pass")
	}
	if !pred.Create(event.CreateEvent{Object: &pulling}) || !pred.Delete(event.DeleteEvent{Object: &pulling}) {
		t.Error("the creation or deletion of a pod that cannot start does not pass")
	}
}
