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

// Command steward runs the Steward operator, configured by flags. One
// subcommand serves the pods it creates:
//
//	steward copy-binary DEST  copies steward-agent, which Steward's image
//	                          carries beside this binary, to DEST (the
//	                          pods' init container; see cmd/steward-agent)
package main

import (
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/manager"
	"github.com/steward-dev/steward/internal/memlimit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "copy-binary" {
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: steward copy-binary DEST")
			os.Exit(2)
		}
		if err := instance.CopyAgent(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "steward:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "steward:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := manager.DefaultOptions()
	fs := flag.CommandLine
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", opts.MetricsAddr, `Address of the /metrics endpoint; "0" turns it off.`)
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", opts.MetricsSecure, "Serve /metrics over HTTPS, only to callers whose bearer token the API server authenticates and allows to get the non-resource URL /metrics; false serves plain HTTP to anyone.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", opts.MetricsCertDir, "Directory of the metrics server's tls.crt and tls.key, reloaded when they change; empty or without them, a self-signed certificate is generated at each start.")
	fs.BoolVar(&opts.EnableHTTP2, "enable-http2", opts.EnableHTTP2, "Let the metrics and webhook servers speak HTTP/2; off, they speak HTTP/1.1 only.")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", opts.ProbeAddr, `Address of /healthz and /readyz; "0" turns them off.`)
	fs.StringVar(&opts.PprofAddr, "pprof-bind-address", "0", `Address of Go's /debug/pprof profiles (heap, CPU, goroutines), served without authentication: bind it to localhost; "0" turns them off.`)
	fs.BoolVar(&opts.LeaderElection, "leader-elect", opts.LeaderElection, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", opts.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace, "Namespace of the Lease; in a pod, the pod's namespace by default.")
	fs.DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", opts.LeaseDuration, "How long a non-leader waits before it may take over an unrenewed lease.")
	fs.DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", opts.RenewDeadline, "How long the leader keeps trying to renew before it gives up leadership.")
	fs.DurationVar(&opts.RetryPeriod, "leader-election-retry-period", opts.RetryPeriod, "How often candidates retry acquiring or renewing the lease.")
	fs.StringVar(&opts.LeaderElectionIdentity, "leader-election-identity", os.Getenv("POD_NAME"), "This process's name in the Lease; a process that finds the Lease held under its own name takes it at once, so two live processes must never share one. Default: $POD_NAME (a container restarted in its pod takes the Lease back without waiting for it to expire), else the host name and a random suffix.")
	fs.DurationVar(&opts.APIServerTimeout, "api-server-timeout", opts.APIServerTimeout, "How long to wait for an unreachable API server, at start-up or after an outage cost the leadership, before exiting.")
	qps := fs.Float64("kube-api-qps", float64(opts.QPS), "Client-side rate limit in queries per second; negative turns it off and leaves protection to API Priority and Fairness.")
	fs.IntVar(&opts.Burst, "kube-api-burst", opts.Burst, "Client-side burst, used when --kube-api-qps is not negative.")
	fs.IntVar(&opts.WebAppConcurrency, "webapp-concurrency", opts.WebAppConcurrency, "Number of WebApps reconciled in parallel.")
	fs.IntVar(&opts.DatabaseConcurrency, "database-concurrency", opts.DatabaseConcurrency, "Number of Databases reconciled in parallel.")
	fs.IntVar(&opts.AppStackConcurrency, "appstack-concurrency", opts.AppStackConcurrency, "Number of AppStacks reconciled in parallel.")
	fs.DurationVar(&opts.AppConfigResync, "appconfig-resync", manager.DefaultAppConfigResync, "How often an AppConfig is looked at without an event: picks up changes of the Secrets its secretData reads and of plain workloads that opt in.")
	fs.StringVar(&opts.InstanceImage, "instance-image", opts.InstanceImage, "Steward's image, from which database pods copy the instance manager; normally the operator's own image.")
	fs.DurationVar(&opts.GracefulShutdownTimeout, "graceful-shutdown-timeout", opts.GracefulShutdownTimeout, "How long reconciles in flight may take to finish on shutdown.")
	fs.BoolVar(&opts.NoInstanceRequests, "no-instance-requests", false, "Do not contact database instances at their pod addresses, for clusters whose pods run no containers (kwok): no failover or switchover then.")
	fs.DurationVar(&opts.StuckPodTimeout, "stuck-pod-timeout", opts.StuckPodTimeout, "How long a pod of a WebApp, Database or Cache may be unable to start (unschedulable, image not pulled, crash loop, failing init container) before the object turns Degraded and a Warning event says why.")
	fs.Var((*manager.NamespaceList)(&opts.WatchNamespaces), "watch-namespaces", "Comma-separated `namespaces` whose objects Steward watches and manages, and no others, so that its RBAC can be granted by RoleBindings in them; empty means every namespace but the protected ones.")
	fs.Var((*manager.NamespaceList)(&opts.ProtectedNamespaces), "protected-namespaces", "Comma-separated `namespaces` Steward never watches nor acts in, in either mode; none may be in --watch-namespaces.")
	opts.Webhook = manager.DefaultWebhookOptions()
	fs.IntVar(&opts.Webhook.Port, "webhook-port", opts.Webhook.Port, "Port of the admission webhook server, which every replica runs; 0 turns the webhooks off.")
	fs.StringVar(&opts.Webhook.Host, "webhook-host", opts.Webhook.Host, "Address the webhook server listens on; empty means every address.")
	fs.StringVar(&opts.Webhook.CertDir, "webhook-cert-dir", opts.Webhook.CertDir, "Directory of the webhook server's tls.crt and tls.key; when they are missing, Steward provisions a self-signed certificate there.")
	fs.StringVar(&opts.Webhook.ConfigurationName, "webhook-configuration-name", opts.Webhook.ConfigurationName, "ValidatingWebhookConfiguration whose caBundle Steward sets when it provisions the certificate.")
	fs.StringVar(&opts.Webhook.ServiceName, "webhook-service-name", opts.Webhook.ServiceName, "Service in front of the webhook server; the provisioned certificate is issued for its DNS names.")
	fs.StringVar(&opts.Webhook.ServiceNamespace, "webhook-service-namespace", opts.Webhook.ServiceNamespace, "Namespace of that Service and of the certificate Secret; in a pod, the pod's namespace by default.")
	fs.StringVar(&opts.Webhook.CertSecretName, "webhook-cert-secret", opts.Webhook.CertSecretName, "Secret through which the replicas share the provisioned certificate; empty makes each replica generate its own.")
	logFormat := fs.String("log-format", "json", "Log format: json or console.")
	logLevel := fs.Int("log-level", 0, "Log verbosity: 0 for info, 1 or more for debug.")
	ctrl.RegisterFlags(fs)
	flag.Parse()
	opts.QPS = float32(*qps)
	if opts.StuckPodTimeout <= 0 {
		return fmt.Errorf("--stuck-pod-timeout must be positive, not %s", opts.StuckPodTimeout)
	}
	if err := opts.ValidateNamespaces(); err != nil {
		return err
	}

	var encoder ctrlzap.Opts
	switch *logFormat {
	case "json":
		encoder = ctrlzap.JSONEncoder()
	case "console":
		encoder = ctrlzap.ConsoleEncoder()
	default:
		return fmt.Errorf("--log-format must be json or console, not %q", *logFormat)
	}
	ctrl.SetLogger(ctrlzap.New(encoder, ctrlzap.Level(zapcore.Level(-*logLevel))))
	log := ctrl.Log.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Before the caches fill: a container's live heap above half its
	// memory limit is otherwise killed for garbage not yet collected.
	mem := memlimit.Set()
	log.Info("Starting", "leaderElection", opts.LeaderElection, "qps", opts.QPS, "webappConcurrency", opts.WebAppConcurrency,
		"webhookPort", opts.Webhook.Port, "softMemoryLimit", mem.String())
	if err := manager.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("Stopped")
	return nil
}
