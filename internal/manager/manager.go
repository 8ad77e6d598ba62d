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

// Package manager assembles Steward's controller manager: the cache, the
// clients, leader election, probes, metrics and every kind's controller.
package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/appconfig"
	"github.com/steward-dev/steward/internal/controller/appstack"
	"github.com/steward-dev/steward/internal/controller/backup"
	cachecontroller "github.com/steward-dev/steward/internal/controller/cache"
	"github.com/steward-dev/steward/internal/controller/database"
	"github.com/steward-dev/steward/internal/controller/restore"
	"github.com/steward-dev/steward/internal/controller/webapp"
	"github.com/steward-dev/steward/internal/controller/workloadpolicy"
	"github.com/steward-dev/steward/internal/labels"
	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/recorder"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// Options configure the manager. cmd/steward sets them from flags.
type Options struct {
	// MetricsAddr is where /metrics is served; "0" turns it off.
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS to callers that present a
	// bearer token which the API server authenticates (TokenReview) and
	// authorises for a GET of the non-resource URL /metrics
	// (SubjectAccessReview). Off, /metrics is plain HTTP for anyone.
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key, which
	// are reloaded when they change; without them the server generates a
	// self-signed certificate at each start.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook servers speak HTTP/2. Off by
	// default: HTTP/1.1 is enough for both, and HTTP/2 servers have had
	// denial-of-service flaws (Rapid Reset, CVE-2023-44487) that HTTP/1.1
	// servers did not.
	EnableHTTP2 bool
	// ProbeAddr is where /healthz and /readyz are served; "0" turns them off.
	ProbeAddr string
	// PprofAddr is where Go's /debug/pprof profiles are served, without
	// authentication; empty or "0" (the default) turns them off.
	PprofAddr string

	// LeaderElection makes only one replica reconcile at a time.
	LeaderElection bool
	// LeaderElectionID names the Lease.
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease. In a pod it defaults to the
	// pod's namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// LeaderElectionIdentity names this process in the Lease. A process
	// that finds the Lease held under its own identity takes it at once:
	// Run keeps one identity across the managers it builds, and the chart
	// uses the pod's name, so that a container restarted in place (after a
	// crash or a SIGKILL) does not wait out its predecessor's lease. Two
	// live processes must never share one. Empty: the host name and a
	// random suffix.
	LeaderElectionIdentity string

	// APIServerTimeout is how long Run waits for an unreachable API server,
	// at start-up or after an outage cost it the leadership, before it
	// gives up and exits.
	APIServerTimeout time.Duration

	// QPS and Burst rate-limit the client. A negative QPS turns the client's
	// limiter off and leaves protection to API Priority and Fairness.
	QPS   float32
	Burst int

	// WebAppConcurrency is the number of WebApps reconciled in parallel.
	WebAppConcurrency int

	// DatabaseConcurrency is the number of Databases reconciled in parallel.
	DatabaseConcurrency int

	// AppStackConcurrency is the number of AppStacks reconciled in parallel.
	AppStackConcurrency int

	// InstanceImage is Steward's own image, whose binary database pods run
	// as their instance manager.
	InstanceImage string

	// AppConfigResync is how often an AppConfig is looked at without an
	// event, which picks up changes of the Secrets its secretData reads and
	// plain workloads that opt in. Zero means two minutes.
	AppConfigResync time.Duration

	// SkipControllerNameValidation allows more than one manager in one
	// process, one after the other: tests that restart the operator.
	SkipControllerNameValidation bool

	// GracefulShutdownTimeout bounds how long running reconciles may take to
	// finish on shutdown.
	GracefulShutdownTimeout time.Duration

	// StuckPodTimeout is how long a pod of a WebApp, Database or Cache may
	// be unable to start (unschedulable, image not pulled, crash loop)
	// before its owner turns Degraded. Zero means two minutes.
	StuckPodTimeout time.Duration

	// NoInstanceRequests keeps the operator from contacting the database
	// instances at their pod addresses: for clusters whose pods run no
	// containers (kwok), where those addresses lead nowhere. Roles are then
	// not managed: no failover, no switchover, and the instances wait.
	NoInstanceRequests bool

	// DatabaseInstances, when set, is how the Database controller reaches
	// the instances instead (tests); it wins over NoInstanceRequests.
	DatabaseInstances database.InstanceClient

	// Webhook configures the admission webhooks; off in DefaultOptions.
	Webhook WebhookOptions

	// WatchNamespaces, when set, are the only namespaces whose objects the
	// operator watches and manages (namespaced mode); empty means every
	// namespace but the protected ones. Cluster-scoped kinds (Namespaces,
	// WorkloadPolicies) are watched cluster-wide either way.
	WatchNamespaces []string
	// ProtectedNamespaces are never watched, so never acted in; none of
	// them may be in WatchNamespaces.
	ProtectedNamespaces []string
}

// DefaultAppConfigResync is the default of Options.AppConfigResync.
const DefaultAppConfigResync = 2 * time.Minute

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8443",
		MetricsSecure:           true,
		ProbeAddr:               ":8081",
		LeaderElection:          true,
		LeaderElectionID:        "steward.steward.dev",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		APIServerTimeout:        2 * time.Minute,
		QPS:                     -1,
		Burst:                   1000,
		WebAppConcurrency:       10,
		DatabaseConcurrency:     4,
		AppStackConcurrency:     4,
		InstanceImage:           DefaultInstanceImage,
		GracefulShutdownTimeout: 30 * time.Second,
		StuckPodTimeout:         stuckpods.DefaultTimeout,
		ProtectedNamespaces:     DefaultProtectedNamespaces(),
	}
}

// DefaultInstanceImage is the image database pods copy the instance manager
// from when --instance-image is not given: this release's image, never a
// moving tag, so that database pods run the manager this operator was
// built with. Its tag is the Helm chart's appVersion (a test keeps the two
// in step).
const DefaultInstanceImage = "ghcr.io/steward-dev/steward:0.1.0"

// Scheme knows the built-in kinds and Steward's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registration
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// ManagedKinds are the child kinds Steward owns. The cache holds only those
// labelled as Steward's, so memory does not grow with unrelated objects.
func ManagedKinds() []client.Object {
	return []client.Object{
		&appsv1.Deployment{},
		&corev1.Service{},
		&networkingv1.Ingress{},
		&autoscalingv2.HorizontalPodAutoscaler{},
		&policyv1.PodDisruptionBudget{},
		&appsv1.StatefulSet{},
		&corev1.ConfigMap{},
		&corev1.Secret{},
		&corev1.PersistentVolumeClaim{},
		&corev1.Pod{}, // database roles, a Cache's status.nodes, backup and restore results, pods that cannot start
		&batchv1.Job{},
		&batchv1.CronJob{},
	}
}

// slimPod is the cache's transform of Pods: it drops their managed fields,
// as for every kind, and their spec but the node name. Steward reads a
// pod's metadata (labels, owners, creation and deletion) and its status
// (phase, conditions, container states, address), never its containers or
// volumes, which are most of a pod's size: a WebApp's pods are its
// Deployment's template, a Database's its StatefulSet's. A pod Steward
// writes is patched (labels) or deleted, never updated whole, so the slim
// copy is never sent back.
func slimPod(in any) (any, error) {
	pod, ok := in.(*corev1.Pod)
	if !ok {
		return cache.TransformStripManagedFields()(in)
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName}
	return pod, nil
}

// Leader election's Lease and the core Events it emits are in the
// operator's own namespace only: a Role there, not the ClusterRole.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=steward-system,roleName=steward-leader-election
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=steward-system,roleName=steward-leader-election
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create,roleName=steward-manager-cluster
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create,roleName=steward-manager-cluster

// CacheOptions are the options of Steward's cache for opts: the namespaces
// it watches, the label that selects the children it caches, and the
// transforms that slim what it keeps. The benchmark opens the same watches
// with them.
func CacheOptions(opts Options) (cache.Options, error) {
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range ManagedKinds() {
		byObject[obj] = cache.ByObject{Label: labels.ManagedSelector()}
	}
	for obj, by := range byObject {
		if _, ok := obj.(*corev1.Pod); ok {
			by.Transform = slimPod
			byObject[obj] = by
		}
	}
	namespaces, err := cacheNamespaces(opts)
	if err != nil {
		return cache.Options{}, err
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         byObject,
		// WatchNamespaces, or all but ProtectedNamespaces.
		DefaultNamespaces: namespaces,
		// A read of a kind nobody watches fails instead of quietly
		// starting an informer over every object of that kind.
		ReaderFailOnMissingInformer: true,
	}, nil
}

// New builds the manager with every controller registered.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = opts.QPS
	cfg.Burst = opts.Burst
	cfg.Wrap(metrics.CountRequests)

	cacheOpts, err := CacheOptions(opts)
	if err != nil {
		return nil, err
	}

	scheme := Scheme()
	webhooks, err := webhookServer(cfg, opts.Webhook, opts.EnableHTTP2)
	if err != nil {
		return nil, err
	}
	lock, err := leaderLock(cfg, opts)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:                        quietStepDown(ctrl.Log),
		WebhookServer:                 webhooks,
		Scheme:                        scheme,
		MapperProvider:                mapperProvider(scheme),
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		// The lock carries opts.LeaderElectionIdentity (see leaderLock).
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &opts.LeaseDuration,
		RenewDeadline:                       &opts.RenewDeadline,
		RetryPeriod:                         &opts.RetryPeriod,
		GracefulShutdownTimeout:             &opts.GracefulShutdownTimeout,
		Cache:                               cacheOpts,
		Client:                              client.Options{FieldOwner: "steward"},
		Controller:                          config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := setupWebhooks(mgr, opts.Webhook); err != nil {
		return nil, err
	}
	for name, check := range readyChecks(mgr, opts) {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return nil, fmt.Errorf("adding the %s ready check: %w", name, err)
		}
	}
	if err := metrics.RegisterConditions(mgr.GetCache(), mgr.Elected()); err != nil {
		return nil, err
	}

	// One recorder for every controller, in bounded memory (see package
	// recorder), instead of the manager's client-go broadcaster.
	eventClient, err := eventsclient.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	rec := recorder.New(scheme, eventClient, "steward", ctrl.Log.WithName("events"))
	if err := mgr.Add(rec); err != nil {
		return nil, fmt.Errorf("adding the event recorder: %w", err)
	}
	events := shortNotes{rec}

	err = (&webapp.Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Recorder:        events,
		StuckPodTimeout: opts.StuckPodTimeout,
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.WebAppConcurrency})
	if err != nil {
		return nil, fmt.Errorf("setting up the WebApp controller: %w", err)
	}
	err = (&database.Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Recorder:        events,
		InstanceImage:   opts.InstanceImage,
		StuckPodTimeout: opts.StuckPodTimeout,
		Instances:       instanceClient(opts),
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.DatabaseConcurrency})
	if err != nil {
		return nil, fmt.Errorf("setting up the Database controller: %w", err)
	}
	err = (&backup.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      events,
		InstanceImage: opts.InstanceImage,
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.DatabaseConcurrency})
	if err != nil {
		return nil, fmt.Errorf("setting up the Backup controller: %w", err)
	}
	err = (&restore.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      events,
		InstanceImage: opts.InstanceImage,
	}).SetupWithManager(mgr, controller.Options{})
	if err != nil {
		return nil, fmt.Errorf("setting up the Restore controller: %w", err)
	}
	err = (&cachecontroller.Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Recorder:        events,
		StuckPodTimeout: opts.StuckPodTimeout,
	}).SetupWithManager(mgr, controller.Options{})
	if err != nil {
		return nil, fmt.Errorf("setting up the Cache controller: %w", err)
	}
	err = (&appconfig.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  events,
		Resync:    opts.AppConfigResync,
	}).SetupWithManager(mgr, controller.Options{})
	if err != nil {
		return nil, fmt.Errorf("setting up the AppConfig controller: %w", err)
	}
	err = (&appstack.Reconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Recorder:     events,
		StatusSettle: v1alpha1.AppStackFirstStatusSettle,
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.AppStackConcurrency})
	if err != nil {
		return nil, fmt.Errorf("setting up the AppStack controller: %w", err)
	}
	err = (&workloadpolicy.Reconciler{
		Client:     mgr.GetClient(),
		Recorder:   events,
		Namespaces: opts.WatchNamespaces,
	}).SetupWithManager(mgr, controller.Options{})
	if err != nil {
		return nil, fmt.Errorf("setting up the WorkloadPolicy controller: %w", err)
	}
	return mgr, nil
}

// metricsOptions serve /metrics: over HTTPS with the API server's
// authentication and authorisation when opts.MetricsSecure, else plain.
func metricsOptions(opts Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if !opts.MetricsSecure {
		return m
	}
	m.SecureServing = true
	m.FilterProvider = metricsAuth
	m.TLSOpts = tlsOptions(opts.EnableHTTP2)
	if opts.MetricsCertDir != "" {
		m.CertDir = opts.MetricsCertDir
	}
	return m
}

// tlsOptions turn HTTP/2 off unless enableHTTP2: the servers then offer
// only HTTP/1.1 in ALPN.
func tlsOptions(enableHTTP2 bool) []func(*tls.Config) {
	if enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// informersSynced is ready once the cache has synced, so a new replica is
// not marked ready while it still knows nothing.
func informersSynced(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}
}

// instanceClient is how the Database controller reaches instances.
func instanceClient(opts Options) database.InstanceClient {
	if opts.DatabaseInstances != nil {
		return opts.DatabaseInstances
	}
	if opts.NoInstanceRequests {
		return database.NoInstances{}
	}
	return database.HTTPInstances{}
}
