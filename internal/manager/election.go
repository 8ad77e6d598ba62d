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

package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaderLock is the Lease lock of leader election, held under
// opts.LeaderElectionIdentity; nil when election is off.
//
// The election works like controller-runtime's own, but with an identity
// the caller chooses: a candidate that reads the Lease under its own
// identity renews it at once instead of waiting for it to expire.
func leaderLock(cfg *rest.Config, opts Options) (resourcelock.Interface, error) {
	if !opts.LeaderElection {
		return nil, nil
	}
	if opts.LeaderElectionID == "" {
		return nil, errors.New("leader election needs a Lease name (--leader-election-id)")
	}
	ns := opts.LeaderElectionNamespace
	if ns == "" {
		ns = podNamespace()
	}
	if ns == "" {
		return nil, errors.New("leader election needs the Lease's namespace (--leader-election-namespace) outside a pod")
	}
	id := opts.LeaderElectionIdentity
	if id == "" {
		id = DefaultIdentity()
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	// A request must fail well within the renew deadline, so that one hung
	// request does not cost the leadership by itself.
	cfg.Timeout = max(opts.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, opts.LeaderElectionID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: id})
}

// DefaultIdentity is the leader election identity of a process that is not
// given one: the host name and a random suffix, unique to the process.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "steward"
	}
	return host + "_" + string(uuid.NewUUID())
}

// stepDownMessage and leaderLost are what controller-runtime's manager logs
// as an error when it stops: its leader elector always reports "leader
// election lost" as it ends, even when the manager itself ended it.
const (
	stepDownMessage = "error received after stop sequence was engaged"
	leaderLost      = "leader election lost"
)

// quietStepDown passes log through, except for two errors a shutdown
// produces, logged as the information they are: the "leader election lost"
// error which every shutdown produces, and an error that is only the
// process' own context being canceled (a Lease renewal in flight when
// SIGTERM came, say). A real loss of the leadership is not logged there:
// the manager returns it from Start (see Run). A renewal that times out is
// a deadline, not a cancellation, and stays an error.
func quietStepDown(log logr.Logger) logr.Logger {
	return log.WithSink(stepDownSink{log.GetSink()})
}

type stepDownSink struct{ logr.LogSink }

func (s stepDownSink) Error(err error, msg string, kv ...any) {
	switch {
	case msg == stepDownMessage && err != nil && err.Error() == leaderLost:
		s.Info(0, "Stopped campaigning for the leadership", kv...)
		return
	case errors.Is(err, context.Canceled):
		s.Info(0, msg+" (stopping)", slices.Concat(kv, []any{"reason", err.Error()})...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s stepDownSink) WithValues(kv ...any) logr.LogSink {
	return stepDownSink{s.LogSink.WithValues(kv...)}
}

func (s stepDownSink) WithName(name string) logr.LogSink {
	return stepDownSink{s.LogSink.WithName(name)}
}
