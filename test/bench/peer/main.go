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

// Command peer is the benchmark's reference operator: it runs WebApps the way
// the kubebuilder and operator-sdk tutorials teach, so that `make bench` can
// set Steward beside another operator doing the same job. For each WebApp it
// gets its Deployment and its Service and creates the one that is missing or
// updates the one that exists, and it updates the WebApp's status on every
// reconcile; its manager caches WebApps, Deployments and Services in every
// namespace, with the scaffold's defaults (no namespace restriction, no label
// selector, no transform).
//
// Only what the benchmark needs to measure it is added: its API requests are
// counted in steward_api_requests_total, as Steward's are, its /metrics is
// served over plain HTTP on loopback, and /readyz answers once it leads.
package main

import (
	"errors"
	"flag"
	"net/http"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/metrics"
)

// LeaderElectionID is the peer's Lease, apart from Steward's.
const LeaderElectionID = "peer.bench.steward.dev"

func main() {
	var (
		metricsAddr, probeAddr, pprofAddr, leaderElectionNamespace string
		leaderElect                                                bool
		concurrency                                                int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "The address /metrics is served on (plain HTTP).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "The address /healthz and /readyz are served on.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", `The address /debug/pprof is served on; "0" turns it off.`)
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader before reconciling, as Steward does in the benchmark.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "default", "The namespace of the Lease (out of cluster there is no default).")
	flag.IntVar(&concurrency, "concurrency", 10, "Concurrent reconciles (the tutorials keep controller-runtime's 1; the benchmark uses Steward's 10).")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	cfg := ctrl.GetConfigOrDie()
	cfg.Wrap(metrics.CountRequests)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		PprofBindAddress:        pprofAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: leaderElectionNamespace,
	})
	if err != nil {
		log.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	r := &WebAppReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := r.SetupWithManager(mgr, concurrency); err != nil {
		log.Error(err, "Unable to create the controller", "controller", "WebApp")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Unable to set up the health check")
		os.Exit(1)
	}
	// Ready once elected, so that the benchmark's clock does not start
	// while the peer still waits for its Lease.
	elected := func(*http.Request) error {
		select {
		case <-mgr.Elected():
			return nil
		default:
			return errors.New("not leading yet")
		}
	}
	if err := mgr.AddReadyzCheck("elected", elected); err != nil {
		log.Error(err, "Unable to set up the ready check")
		os.Exit(1)
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Problem running the manager")
		os.Exit(1)
	}
}
