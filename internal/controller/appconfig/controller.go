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

// Package appconfig reconciles AppConfigs: it renders each into immutable,
// content-hashed revisions (a ConfigMap, and a Secret for secret values),
// keeps "<application>-config" in step with the current revision, and rolls
// the new revision out to the consumers whose used keys changed, a few at a
// time, after a debounce window.
//
// A reconcile observes the AppConfig's inputs, revisions and consumers,
// computes a plan without a client (plan.go), carries it out, and writes
// the status that follows, with the events of its transition (events.go).
package appconfig

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/fieldindex"
	"github.com/steward-dev/steward/internal/status"
)

const (
	defaultDebounce      = 5 * time.Second
	defaultMaxConcurrent = 5
	defaultHistory       = 10
	// defaultResync is how often an AppConfig is looked at without an
	// event: the Secrets its secretData reads and plain Deployments and
	// StatefulSets that opt in are not watched.
	defaultResync = 2 * time.Minute
	// pollRollout is how often a plain consumer's rollout is looked at.
	pollRollout = 2 * time.Second
	// retrySecret is the longest wait before a Secret that secretData
	// names and that does not exist is looked for again: Secrets are not
	// watched.
	retrySecret = 30 * time.Second
	// retryUserError is how long to wait before trying again after an
	// apply that only the user can fix failed.
	retryUserError = time.Minute
)

// Reconciler renders AppConfigs and rolls their revisions out.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly: the Secrets secretData
	// names, and plain consumers, which the cache does not hold.
	APIReader client.Reader
	// Recorder emits events.
	Recorder events.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Resync is how often an AppConfig is looked at without an event;
	// defaultResync when zero.
	Resync time.Duration

	// uses finds the WebApps that use an AppConfig; SetupWithManager sets it.
	uses *fieldindex.Index
}

// +kubebuilder:rbac:groups=steward.dev,resources=appconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=appconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=steward.dev,resources=webapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile renders one AppConfig, moves its current revision, and rolls it
// out to the consumers whose keys changed: observe, plan, carry the plan
// out, then one status write with the events of its transition. An error
// leaves the status as it was, for a retry with backoff; a problem the user
// must fix is the status' conditions and an event.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &v1alpha1.AppConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, ac); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ac.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the children carry owner references
	}

	obs, err := r.observe(ctx, ac)
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := computePlan(ac, obs, r.now(), r.resync())
	if err != nil {
		return ctrl.Result{}, err
	}
	problem, err := r.carryOut(ctx, ac, obs, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != nil {
		// The steps after the one that failed were not carried out.
		p = p.stop(ac, ac.Status, *problem, r.resync())
	}

	r.announce(ctx, ac, p)
	if err := status.Write(ctx, r.Client, ac, &ac.Status, p.status); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// resync is how often an AppConfig is looked at without an event.
func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return defaultResync
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// get reads a child from the cache, or from the API server when the cache
// does not have it yet: a revision just created may not be cached.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	return err
}
