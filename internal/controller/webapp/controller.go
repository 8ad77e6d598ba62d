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

// Package webapp reconciles WebApps: a Deployment behind a Service, with an
// optional Ingress, HorizontalPodAutoscaler and PodDisruptionBudget.
package webapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/fieldindex"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/priority"
	"github.com/steward-dev/steward/internal/rollout"
	"github.com/steward-dev/steward/internal/status"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// phases are the values of status.phase, in the order metrics list them;
// the first, Pending, also counts the objects with no status yet.
var phases = []string{
	string(v1alpha1.WebAppPending), string(v1alpha1.WebAppDeploying),
	string(v1alpha1.WebAppRunning), string(v1alpha1.WebAppDegraded),
}

// minWaitRetry is the first delay between checks for an object a WebApp
// waits for; it grows with the wait up to priority.MaxRecheck.
const minWaitRetry = 5 * time.Second

// retryUserError is how long to wait before trying again after a problem
// the user must fix, which no watch event may announce.
const retryUserError = time.Minute

// Reconciler makes a WebApp's children match its spec and reports their state.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly.
	APIReader client.Reader
	// Recorder emits events on state transitions.
	Recorder events.EventRecorder
	// StuckPodTimeout is how long a pod may be unable to start before the
	// WebApp is Degraded; zero means stuckpods.DefaultTimeout.
	StuckPodTimeout time.Duration

	// pods is the cache's index of pods by their WebApp, set up by
	// SetupWithManager.
	pods *fieldindex.Index
}

// +kubebuilder:rbac:groups=steward.dev,resources=webapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=webapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=steward.dev,resources=databases;caches;appconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one WebApp's children in line with its spec, then writes
// its status if that changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &v1alpha1.WebApp{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		// Every child carries an owner reference: the garbage collector removes them.
		return ctrl.Result{}, nil
	}

	waiting, err := r.checkPullSecrets(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	var bindings Bindings
	if waiting == nil {
		if bindings, waiting, err = r.resolveBindings(ctx, app); err != nil {
			return ctrl.Result{}, err
		}
	}
	if waiting == nil {
		if bindings.Config, waiting, err = r.resolveConfig(ctx, app); err != nil {
			return ctrl.Result{}, err
		}
	}
	obs := observed{waiting: waiting}
	if waiting == nil {
		if obs, err = r.reconcileChildren(ctx, app, bindings); err != nil {
			// Retried with backoff; meanwhile the status says what fails.
			obs = observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonReconcileError, Message: err.Error()}}
		}
	}

	next := computeStatus(app, obs)
	if wait := settleDelay(app, obs.deployment, next, time.Now()); wait > 0 {
		if obs.recheck > 0 {
			wait = min(wait, obs.recheck)
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.announce(app, &next)
	if werr := status.Write(ctx, r.Client, app, &app.Status, next); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return retryAfter(obs, next, time.Now()), nil
}

// checkPullSecrets returns what the WebApp waits for when an image pull
// Secret it names does not exist. Pods could not pull their image, so the
// Deployment is left as it is until the Secret appears. Only the Secrets'
// metadata is read.
func (r *Reconciler) checkPullSecrets(ctx context.Context, app *v1alpha1.WebApp) (*conditions.Problem, error) {
	var missing []string
	for _, ref := range app.Spec.ImagePullSecrets {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: ref.Name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref.Name)
		case err != nil:
			return nil, fmt.Errorf("looking up image pull Secret %s: %w", ref.Name, err)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	return &conditions.Problem{
		Reason:  v1alpha1.ReasonWaitingForPullSecret,
		Message: fmt.Sprintf("Waiting for image pull Secret %s to exist", strings.Join(missing, ", ")),
	}, nil
}

// settleDelay holds back the status writes of a new WebApp during its first
// rollout (v1alpha1.SettleDelay), which starts with its Deployment, dep (nil
// when it does not exist).
func settleDelay(app *v1alpha1.WebApp, dep *appsv1.Deployment, next v1alpha1.WebAppStatus, now time.Time) time.Duration {
	var depCreated metav1.Time
	if dep != nil {
		depCreated = dep.CreationTimestamp
	}
	return v1alpha1.SettleDelay(v1alpha1.FirstRolloutStart(app.CreationTimestamp.Time, depCreated), v1alpha1.FirstRolloutSettle, app.Status.ObservedGeneration, next.ObservedGeneration,
		app.Status.Conditions, next.Conditions, now, v1alpha1.ReasonCreating)
}

// retryAfter is when to look again without a watch event: after a problem
// only the user can fix and while waiting for an object, with a delay that
// grows with the wait and below every watch event in the queue
// (priority.RecheckAfter); and when a pod that cannot start reaches the
// stuck pod timeout. Pull Secrets are not watched; a bound Database or
// Cache is, and the delay only backs its watch up.
func retryAfter(obs observed, status v1alpha1.WebAppStatus, now time.Time) ctrl.Result {
	switch {
	case obs.problem != nil:
		return priority.RecheckAfter(conditions.TrueFor(status.Conditions, v1alpha1.ConditionDegraded, now), retryUserError, priority.MaxRecheck)
	case obs.waiting != nil:
		return priority.RecheckAfter(conditions.TrueFor(status.Conditions, v1alpha1.ConditionProgressing, now), minWaitRetry, priority.MaxRecheck)
	}
	return ctrl.Result{RequeueAfter: obs.recheck}
}

// child pairs the desired state of one child with its live object.
type child struct {
	// desired is nil when the spec no longer asks for the child.
	desired runtime.ApplyConfiguration
	// live is an empty object of the child's type, filled by reconcileChildren.
	live client.Object
}

// reconcileChildren applies every child the spec asks for and deletes those
// it no longer asks for. A problem the user must fix is returned in
// observed.problem; other errors are returned for a retry with backoff.
func (r *Reconciler) reconcileChildren(ctx context.Context, app *v1alpha1.WebApp, b Bindings) (observed, error) {
	if p := mountConflict(app); p != nil {
		return observed{problem: p}, nil
	}
	dep := &appsv1.Deployment{}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	children := []child{
		{Deployment(app, b), dep},
		{Service(app), &corev1.Service{}},
		{apply.Optional(Ingress(app)), &networkingv1.Ingress{}},
		{apply.Optional(HorizontalPodAutoscaler(app)), hpa},
		{apply.Optional(PodDisruptionBudget(app)), &policyv1.PodDisruptionBudget{}},
	}
	// The children do not depend on each other: they are applied at once.
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	key := client.ObjectKeyFromObject(app)
	fns := make([]func() error, len(children))
	for i, c := range children {
		fns[i] = func() error {
			if err := r.Client.Get(ctx, key, c.live); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("reading %T %s: %w", c.live, key, err)
			}
			if c.desired == nil {
				return applier.Delete(ctx, c.live, app.UID)
			}
			err := applier.Apply(ctx, c.desired, c.live, app.UID)
			if reason, ok := apply.UserError(err); ok {
				return &conditions.ProblemError{Problem: conditions.Problem{Reason: reason, Message: err.Error()}}
			}
			return err
		}
	}
	if p, err := conditions.Split(apply.Together(fns...)); p != nil || err != nil {
		return observed{problem: p}, err
	}

	obs := observed{}
	if dep.UID != "" {
		obs.deployment = dep
		if mayHaveStuckPods(dep) {
			var err error
			if obs.stuck, obs.recheck, err = r.findStuckPods(ctx, app); err != nil {
				return observed{}, err
			}
		}
	}
	if hpa.UID != "" && app.Spec.Autoscaling != nil {
		obs.hpa = hpa
	}
	return obs, nil
}

// mayHaveStuckPods reports whether the Deployment's pods are worth a look
// for one that cannot start: not when it is healthy, since a stuck pod
// does not change the status of an available WebApp (computeStatus), and
// one that makes it unavailable changes the Deployment's status, which
// wakes the WebApp. Listing a WebApp's pods goes through every cached pod
// of its namespace.
func mayHaveStuckPods(dep *appsv1.Deployment) bool {
	return !rollout.OfDeployment(dep).Healthy
}

// findStuckPods looks for a pod of the WebApp that has been unable to
// start for the stuck pod timeout; see stuckpods.Find.
func (r *Reconciler) findStuckPods(ctx context.Context, app *v1alpha1.WebApp) (*stuckpods.Problem, time.Duration, error) {
	pods := &corev1.PodList{}
	if err := r.pods.List(ctx, r.Client, pods, app.Namespace, app.Name); err != nil {
		return nil, 0, fmt.Errorf("listing the pods of WebApp %s: %w", app.Name, err)
	}
	p, recheck := stuckpods.Find(pods.Items, stuckpods.OrDefault(r.StuckPodTimeout), time.Now())
	return p, recheck, nil
}

// podToWebApp maps a pod to the WebApp it belongs to, by its label.
func podToWebApp(_ context.Context, pod client.Object) []reconcile.Request {
	name, ok := pod.GetLabels()[labels.WebApp]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
}

// notOwnStatusEcho leaves out the update that brings back the status this
// process wrote (status.OwnEcho): a WebApp's reconcile derives its status
// from the spec and the children, and computed again from the status it
// just wrote it is the same (TestStatusOfItsOwnEchoIsTheSame), so the next
// reconcile would find nothing to do. In a bulk create that was one
// reconcile of three per WebApp. An update by anyone else, of the status
// too, is still enqueued.
func notOwnStatusEcho() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !status.OwnEcho(e.ObjectNew) }}
}

// podsIndex is the field index of pods by the WebApp they belong to, by
// its label. A label selector would go through every cached pod of the
// namespace for each lookup: with thousands of WebApps in a namespace, a
// bulk create's first rollouts would cost the operator the square of their
// number.
const podsIndex = "metadata.labels." + labels.WebApp

func webAppPods(indexer client.FieldIndexer) *fieldindex.Index {
	return fieldindex.New(indexer, &corev1.Pod{}, podsIndex, func(o client.Object) []string {
		if name, ok := o.GetLabels()[labels.WebApp]; ok {
			return []string{name}
		}
		return nil
	})
}

// SetupWithManager registers the reconciler, watching WebApps, the children
// they own and their pods that cannot start (stuckpods.DiagnosisChanged),
// and the steward_webapps{phase} metric.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	reader := mgr.GetCache()
	err := metrics.RegisterListPhases(reader, mgr.Elected(), func() client.ObjectList { return &v1alpha1.WebAppList{} },
		"webapps", "WebApp", phases, func(o client.Object) string { return string(o.(*v1alpha1.WebApp).Status.Phase) })
	if err != nil {
		return err
	}
	indexer := mgr.GetFieldIndexer()
	r.pods = webAppPods(indexer)
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WebApp{}, builder.WithPredicates(priority.NotEcho())).
		Watches(&v1alpha1.WebApp{}, priority.SpecChangesFirst()).
		Watches(&v1alpha1.WebApp{}, priority.EchoesLast(), builder.WithPredicates(notOwnStatusEcho())).
		Watches(&v1alpha1.Database{}, handler.EnqueueRequestsFromMapFunc(boundWebApps(reader, databaseBindings(indexer))),
			builder.WithPredicates(readinessChanged())).
		Watches(&v1alpha1.Cache{}, handler.EnqueueRequestsFromMapFunc(boundWebApps(reader, cacheBindings(indexer))),
			builder.WithPredicates(readinessChanged())).
		Watches(&v1alpha1.AppConfig{}, consumersOf(reader, appconfig.WebAppUses(indexer, configIndex))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToWebApp),
			builder.WithPredicates(stuckpods.DiagnosisChanged())).
		WithOptions(opts).
		Complete(r)
}
