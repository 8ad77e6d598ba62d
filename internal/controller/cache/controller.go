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

// Package cache reconciles Caches: memcached as a Deployment behind a
// headless Service, or redis as a StatefulSet of a primary and replicas
// behind Services, with the engine's memory settings derived from the
// Cache's memory limit.
package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/password"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/status"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// retryUserError is how long to wait before trying again after a problem
// the user must fix, which no watch event may announce.
const retryUserError = time.Minute

// phases are the values of status.phase, in the order metrics list them;
// the first, Pending, also counts the objects with no status yet.
var phases = []string{
	string(v1alpha1.CachePending), string(v1alpha1.CacheDeploying),
	string(v1alpha1.CacheRunning), string(v1alpha1.CacheDegraded),
}

// Reconciler makes a Cache's children match its spec and reports their state.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events on state transitions.
	Recorder events.EventRecorder
	// StuckPodTimeout is how long a pod may be unable to start before the
	// Cache is Degraded; zero means stuckpods.DefaultTimeout.
	StuckPodTimeout time.Duration
}

// +kubebuilder:rbac:groups=steward.dev,resources=caches,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=caches/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Cache's children in line with its spec, then writes
// its status if that changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &v1alpha1.Cache{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		// Every child carries an owner reference: the garbage collector removes them.
		return ctrl.Result{}, nil
	}

	obs, err := r.reconcileChildren(ctx, c)
	if err == nil && obs.problem == nil {
		err = r.observePods(ctx, c, &obs)
	}
	if err != nil {
		// Retried with backoff; meanwhile the status says what fails.
		obs = observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonReconcileError, Message: err.Error()}}
	}

	next := computeStatus(c, obs)
	// A new Cache's status writes are held back during its first rollout,
	// the first one included; the rollout starts with its workload.
	wait := v1alpha1.SettleDelay(v1alpha1.FirstRolloutStart(c.CreationTimestamp.Time, obs.workloadCreated), v1alpha1.FirstRolloutSettle, c.Status.ObservedGeneration, next.ObservedGeneration,
		c.Status.Conditions, next.Conditions, time.Now(), v1alpha1.ReasonCreating)
	if wait > 0 && err == nil {
		if obs.recheck > 0 {
			wait = min(wait, obs.recheck)
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.announce(c, obs, &next)
	if werr := status.Write(ctx, r.Client, c, &c.Status, next); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if obs.problem != nil {
		return priority.RecheckAfter(conditions.TrueFor(next.Conditions, v1alpha1.ConditionDegraded, time.Now()), retryUserError, priority.MaxRecheck), nil
	}
	// A pod that cannot start yet is looked at again when it reaches the
	// stuck pod timeout: the passing of time sends no event.
	return ctrl.Result{RequeueAfter: obs.recheck}, nil
}

// child pairs the desired state of one child with its live object.
type child struct {
	// desired is nil when the spec no longer asks for the child.
	desired runtime.ApplyConfiguration
	// name is the child's name.
	name string
	// live is an empty object of the child's type, filled by reconcileChildren.
	live client.Object
}

// children lists the Cache's children for its engine in the order they
// are applied: memcached's Deployment first; redis' credentials Secret and
// configuration before the StatefulSet whose pods mount them. password is
// the redis password, when redis asks for one. The credentials Secret is
// not listed when the password is turned off, so it is kept: turned on
// again, the password is the same.
func children(c *v1alpha1.Cache, workload client.Object, password string) []child {
	pdb := child{apply.Optional(PodDisruptionBudget(c)), c.Name, &policyv1.PodDisruptionBudget{}}
	if c.EffectiveEngine() == v1alpha1.EngineRedis {
		var secret []child
		if c.RedisAuthEnabled() {
			secret = []child{{CredentialsSecret(c, CredentialsData(c, password)), c.CredentialsName(), &corev1.Secret{}}}
		}
		return append(secret,
			child{RedisConfigMap(c), c.Name, &corev1.ConfigMap{}},
			child{RedisHeadlessService(c), c.HeadlessServiceName(), &corev1.Service{}},
			child{RedisStatefulSet(c), c.Name, workload},
			child{RedisService(c), c.Name, &corev1.Service{}},
			child{RedisReadOnlyService(c), c.ReadOnlyServiceName(), &corev1.Service{}},
			pdb,
		)
	}
	return []child{
		{MemcachedDeployment(c), c.Name, workload},
		{MemcachedService(c), c.Name, &corev1.Service{}},
		pdb,
	}
}

// reconcileChildren applies every child the spec asks for and deletes those
// it no longer asks for. A problem the user must fix is returned in
// observed.problem; other errors are returned for a retry with backoff.
func (r *Reconciler) reconcileChildren(ctx context.Context, c *v1alpha1.Cache) (observed, error) {
	var workload client.Object = &appsv1.Deployment{}
	if c.EffectiveEngine() == v1alpha1.EngineRedis {
		workload = &appsv1.StatefulSet{}
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	obs := observed{}
	var password string
	if c.RedisAuthEnabled() {
		var err error
		if password, err = r.password(ctx, c); err != nil {
			return observed{}, err
		}
	}
	for _, ch := range children(c, workload, password) {
		key := client.ObjectKey{Namespace: c.Namespace, Name: ch.name}
		if err := r.Client.Get(ctx, key, ch.live); client.IgnoreNotFound(err) != nil {
			return observed{}, fmt.Errorf("reading %T %s: %w", ch.live, key, err)
		}
		if ch.desired == nil {
			if err := applier.Delete(ctx, ch.live, c.UID); err != nil {
				return observed{}, err
			}
			continue
		}
		before := replicasOf(ch.live)
		if err := applier.Apply(ctx, ch.desired, ch.live, c.UID); err != nil {
			if reason, ok := apply.UserError(err); ok {
				return observed{problem: &conditions.Problem{Reason: reason, Message: err.Error()}}, nil
			}
			return observed{}, err
		}
		if after := replicasOf(ch.live); before != nil && after != nil && *before != *after {
			obs.scaledFrom = before
		}
	}

	if workload.GetUID() != "" {
		obs.workloadCreated = workload.GetCreationTimestamp()
	}
	switch w := workload.(type) {
	case *appsv1.Deployment:
		if w.UID != "" {
			obs.workload = new(rollout.OfDeployment(w))
		}
	case *appsv1.StatefulSet:
		if w.UID != "" {
			obs.workload = new(rollout.OfStatefulSet(w))
		}
	}
	return obs, nil
}

// password is the redis password in the Cache's credentials Secret, or a
// new one when the Secret does not exist or its password is empty. The
// Secret is read from the informer cache or, when the cache does not have
// it, from the API server: a password must never be generated anew because
// the cache lags. A Secret of that name that is not the Cache's is left to
// the applier, which refuses to take it over.
func (r *Reconciler) password(ctx context.Context, c *v1alpha1.Cache) (string, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: c.Namespace, Name: c.CredentialsName()}
	err := r.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, s)
	}
	if client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	if p := s.Data["password"]; len(p) > 0 {
		return string(p), nil
	}
	return password.New(), nil
}

// replicasOf is the replica count of an existing Deployment or StatefulSet,
// or nil.
func replicasOf(obj client.Object) *int32 {
	if obj.GetUID() == "" {
		return nil
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Replicas
	case *appsv1.StatefulSet:
		return w.Spec.Replicas
	}
	return nil
}

// observePods lists the Cache's pods: a memcached Cache's nodes are their
// names, and a pod of either engine that has been unable to start for the
// stuck pod timeout makes the Cache Degraded.
func (r *Reconciler) observePods(ctx context.Context, c *v1alpha1.Cache, obs *observed) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(SelectorLabels(c))); err != nil {
		return fmt.Errorf("listing the pods of Cache %s: %w", c.Name, err)
	}
	if c.EffectiveEngine() == v1alpha1.EngineMemcached {
		obs.nodes = nodes(pods)
	}
	if obs.workload != nil {
		obs.stuck, obs.recheck = stuckpods.Find(pods.Items, stuckpods.OrDefault(r.StuckPodTimeout), time.Now())
	}
	return nil
}

// nodes returns the names of the pods that are not terminating or
// finished, sorted.
func nodes(pods *corev1.PodList) []string {
	var nodes []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nodes = append(nodes, p.Name)
	}
	slices.Sort(nodes)
	return nodes
}

// podToCache maps a pod to the Cache it belongs to, by its label.
func podToCache(_ context.Context, pod client.Object) []reconcile.Request {
	name, ok := pod.GetLabels()[labels.Cache]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
}

// SetupWithManager registers the reconciler, watching Caches, the children
// they own and their pods (for status.nodes and pods that cannot start),
// and the steward_caches{phase} metric.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	err := metrics.RegisterListPhases(reader, mgr.Elected(), func() client.ObjectList { return &v1alpha1.CacheList{} },
		"caches", "Cache", phases, func(o client.Object) string { return string(o.(*v1alpha1.Cache).Status.Phase) })
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Cache{}, builder.WithPredicates(priority.NotEcho())).
		Watches(&v1alpha1.Cache{}, priority.SpecChangesFirst()).
		Watches(&v1alpha1.Cache{}, priority.EchoesLast()).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCache)).
		WithOptions(opts).
		Complete(r)
}
