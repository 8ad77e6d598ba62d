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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

func deleting(p *corev1.Pod, running bool) *corev1.Pod {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	if !running {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	}
	return p
}

func reported(name, phase string, role engine.Role, ready bool, position int64) member {
	return member{name: name, pod: pod(name), report: &instance.Report{Name: name, Phase: phase,
		Status: engine.Status{Role: role, Ready: ready, Position: position}}}
}

func replica(name string, position int64) member {
	return reported(name, instance.PhaseRunning, engine.RoleReplica, true, position)
}

func unreachable(p *corev1.Pod) member { return member{name: p.Name, pod: p, err: "timeout"} }

// TestFenced: when a primary that does not serve is certainly not
// accepting writes, and why not otherwise: the order of fencing.
func TestFenced(t *testing.T) {
	base := view{now: t0, primary: "db-0", lastAck: t0.Add(-time.Second), fenceAfter: 10 * time.Second}
	notStreaming := replica("db-1", 100)
	notStreaming.report.Ready = false
	notStreaming.notStreamingSince = t0.Add(-20 * time.Second)
	tests := []struct {
		name    string
		primary member
		v       func(view) view
		want    bool
		because string
	}{
		{"pod gone", member{name: "db-0", err: "no pod"}, nil, true, "pod is gone"},
		{"server killed", reported("db-0", instance.PhaseStopped, engine.RolePrimary, false, 0), nil, true, "does not run"},
		{"fenced itself", reported("db-0", instance.PhaseFenced, engine.RolePrimary, false, 0), nil, true, "does not run"},
		{"runs as a replica", reported("db-0", instance.PhaseRunning, engine.RoleReplica, true, 0), nil, true, "runs as a replica"},
		{"still running", reported("db-0", instance.PhaseRunning, engine.RolePrimary, false, 0), nil, false, "it runs"},
		{"starting again", reported("db-0", instance.PhaseStarting, engine.RolePrimary, false, 0), nil, false, "it runs"},
		{"deleted, container stopped", unreachable(deleting(pod("db-0"), false)), nil, true, "container has stopped"},
		{"deleted, container still running", unreachable(deleting(pod("db-0"), true)), nil, false, "lease runs out"},
		{"unreachable, lease valid", unreachable(pod("db-0")), nil, false, "lease runs out"},
		{"unreachable, lease out, replicas may stream", unreachable(pod("db-0")),
			func(v view) view { v.now = t0.Add(time.Minute); v.members = []member{replica("db-1", 1)}; return v }, false, "may still stream"},
		{"unreachable, lease out, a replica stopped streaming long enough", unreachable(pod("db-0")),
			func(v view) view { v.now = t0.Add(time.Minute); v.members = []member{notStreaming}; return v }, true, "no longer streams"},
		{"unreachable, lease out, a replica stopped streaming just now", unreachable(pod("db-0")),
			func(v view) view {
				m := notStreaming
				m.notStreamingSince = t0.Add(time.Minute - time.Second)
				v.now, v.members = t0.Add(time.Minute), []member{m}
				return v
			}, false, "may still stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := base
			if tt.v != nil {
				v = tt.v(v)
			}
			got, why := fenced(v, tt.primary)
			if got != tt.want || !strings.Contains(why, tt.because) {
				t.Errorf("fenced = %t, %q; want %t, containing %q", got, why, tt.want, tt.because)
			}
		})
	}
}

// TestCandidate: the most advanced running replica, unless it is too far
// behind; never a pod being deleted, a stopped instance or the primary.
func TestCandidate(t *testing.T) {
	gone := replica("db-3", 900)
	gone.pod = deleting(gone.pod, true)
	members := []member{reported("db-0", instance.PhaseStopped, engine.RolePrimary, false, 0),
		replica("db-1", 500), replica("db-2", 700), gone,
		reported("db-4", instance.PhaseRejoining, engine.RoleReplica, false, 990)}
	v := view{primary: "db-0", members: members, maxLag: 100, lagUnit: "bytes", lagField: "maxFailoverLagBytes"}
	if c, why := candidate(v); why != "" || c.name != "db-2" {
		t.Errorf("candidate = %s, %q; want db-2", c.name, why)
	}
	v.lastPrimaryPosition = 790
	if c, why := candidate(v); why != "" || c.name != "db-2" {
		t.Errorf("90 bytes behind, 100 allowed: candidate = %s, %q; want db-2", c.name, why)
	}
	v.lastPrimaryPosition = 900
	if _, why := candidate(v); !strings.Contains(why, "200 bytes behind") {
		t.Errorf("200 bytes behind, 100 allowed: %q", why)
	}
	v.members = members[:1]
	if _, why := candidate(v); why != "no replica runs and answers" {
		t.Errorf("no replica: %q", why)
	}
}

// TestSwitchoverTarget: a named ready replica, or the best for "any".
func TestSwitchoverTarget(t *testing.T) {
	lagging := replica("db-2", 50)
	lagging.report.Ready = false
	v := view{primary: "db-0", maxLag: 1 << 20, members: []member{
		reported("db-0", instance.PhaseRunning, engine.RolePrimary, true, 100), replica("db-1", 100), lagging}}
	for want, refusal := range map[string]string{
		"any": "", "db-1": "", "db-0": "is the primary already", "db-2": "not a ready replica", "db-7": "not an instance",
	} {
		c, why := switchoverTarget(v, want)
		if !strings.Contains(why, refusal) || refusal == "" && (why != "" || c.name != "db-1") {
			t.Errorf("switchoverTarget(%s) = %s, %q; want refusal %q", want, c.name, why, refusal)
		}
	}
}

// TestAssignmentLease: the primary of a Database with replicas gets a
// lease and the replicas' names; a single instance none.
func TestAssignmentLease(t *testing.T) {
	if got := assignment(newDB(3), view{primary: "db-0", members: []member{{name: "db-0"}, {name: "db-1"}, {name: "db-2"}}}); got.LeaseSeconds != int(v1alpha1.DefaultFenceAfterSeconds) ||
		strings.Join(got.Replicas, ",") != "db-1,db-2" || got.Term != 1 || !got.Bootstrap || got.PrimaryHost != "db-0.db-headless.ns.svc" {
		t.Errorf("assignment = %+v", got)
	}
	if got := assignment(newDB(1), view{primary: "db-0", members: []member{{name: "db-0"}}}); got.LeaseSeconds != 0 {
		t.Errorf("a single instance has a lease: %+v", got)
	}
}

func newDB(replicas int32) *v1alpha1.Database {
	return &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: v1alpha1.DatabaseSpec{Engine: v1alpha1.EnginePostgres, Version: "15", Replicas: &replicas}}
}
