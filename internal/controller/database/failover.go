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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
)

// The decisions of failover and switchover, pure: which instance serves,
// whether a lost primary is fenced, which replica to promote.

// member is one instance as the operator sees it in one reconcile.
type member struct {
	name string
	// pod is nil when the instance has no pod.
	pod *corev1.Pod
	// report is nil when the instance manager did not answer; err says why.
	report *instance.Report
	err    string
	// notStreamingSince is when the operator first saw this replica not
	// streaming, zero while it streams.
	notStreamingSince time.Time
}

// Margins of the fencing rule (see fenced). walSenderTimeout is the
// postgres engine's wal_sender_timeout; fenceCheck how often an instance
// checks its lease; fenceMargin covers the check's own time (a MariaDB
// primary asks its replicas' managers, up to a second) and delays.
const (
	walSenderTimeout = 3 * time.Second
	fenceCheck       = instance.FenceCheckInterval
	fenceMargin      = 2 * time.Second
)

// view is what the failover decisions read.
type view struct {
	now     time.Time
	primary string
	members []member
	// lastAck is when the primary last accepted an assignment, which
	// renewed its lease; the operator's start when it has not seen one.
	lastAck time.Time
	// lastPrimaryPosition is the primary's last known position, zero when
	// unknown.
	lastPrimaryPosition int64
	fenceAfter          time.Duration
	// maxLag bounds a candidate's distance behind lastPrimaryPosition, in
	// lagUnit, as lagField sets it.
	maxLag            int64
	lagUnit, lagField string
}

func (v view) member(name string) (member, bool) {
	for _, m := range v.members {
		if m.name == name {
			return m, true
		}
	}
	return member{name: name}, false
}

// serving reports whether an instance runs as a ready primary.
func serving(m member) bool {
	r := m.report
	return r != nil && r.Phase == instance.PhaseRunning && r.Role == engine.RolePrimary && r.Ready
}

// streamingReplica reports whether an instance runs as a replica.
func runningReplica(m member) bool {
	r := m.report
	return r != nil && r.Phase == instance.PhaseRunning && r.Role == engine.RoleReplica &&
		m.pod != nil && m.pod.DeletionTimestamp.IsZero()
}

// fenced reports whether the primary p can no longer accept writes, and
// why, or why it still may.
func fenced(v view, p member) (bool, string) {
	switch r := p.report; {
	case p.pod == nil:
		return true, "its pod is gone"
	case r != nil && r.Phase == instance.PhaseRunning && r.Role == engine.RoleReplica:
		return true, "it runs as a replica"
	case r != nil && r.Phase != instance.PhaseRunning && r.Phase != instance.PhasePromoting && r.Phase != instance.PhaseStarting:
		return true, fmt.Sprintf("its server does not run (%s)", r.Message)
	case r != nil:
		return false, "it runs"
	case !p.pod.DeletionTimestamp.IsZero() && !containerRunning(p.pod):
		return true, "its pod is being deleted and its container has stopped"
	}
	until := v.lastAck.Add(v.fenceAfter + fenceCheck + fenceMargin)
	if v.now.Before(until) {
		return false, fmt.Sprintf("it does not answer (%s); its lease runs out at %s", p.err, until.UTC().Format(time.RFC3339))
	}
	for _, m := range v.members {
		if m.name != p.name && !m.notStreamingSince.IsZero() &&
			!v.now.Before(m.notStreamingSince.Add(walSenderTimeout+fenceCheck+fenceMargin)) {
			return true, fmt.Sprintf("it does not answer (%s), its lease ran out and %s no longer streams from it", p.err, m.name)
		}
	}
	return false, fmt.Sprintf("it does not answer (%s) and its lease ran out, but every replica may still stream from it", p.err)
}

func containerRunning(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return true
		}
	}
	return false
}

// candidate is the replica to promote: running, the furthest position,
// and within maxLag of the primary's last known position.
func candidate(v view) (member, string) {
	var best member
	found := false
	for _, m := range v.members {
		if m.name == v.primary || !runningReplica(m) {
			continue
		}
		if !found || m.report.Position > best.report.Position {
			best, found = m, true
		}
	}
	if !found {
		return best, "no replica runs and answers"
	}
	if v.lastPrimaryPosition > 0 {
		if lag := v.lastPrimaryPosition - best.report.Position; lag > v.maxLag {
			return best, fmt.Sprintf("the most advanced replica, %s, is %d %s behind the primary's last known position, more than %s (%d)",
				best.name, lag, v.lagUnit, v.lagField, v.maxLag)
		}
	}
	return best, ""
}

// switchoverTarget is the replica a switchover request names: a running
// replica, or the best one for "any".
func switchoverTarget(v view, want string) (member, string) {
	if want == "" || want == "any" {
		m, why := candidate(v)
		if why != "" {
			return m, why
		}
		return m, ""
	}
	m, ok := v.member(want)
	switch {
	case want == v.primary:
		return m, want + " is the primary already"
	case !ok:
		return m, want + " is not an instance of this Database"
	case !runningReplica(m) || !m.report.Ready:
		return m, want + " is not a ready replica"
	}
	return m, ""
}
