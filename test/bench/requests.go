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

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/controller/webapp"
	"github.com/steward-dev/steward/internal/status"
)

// requestCost is what the API server and etcd spend on one kind of request,
// in CPU milliseconds per request, the watches of the bench's informers
// served included.
type requestCost struct {
	Request     string  `json:"request"`
	Requests    int     `json:"requests"`
	APIServerMs float64 `json:"apiServerMsPerRequest"`
	EtcdMs      float64 `json:"etcdMsPerRequest"`
	// APIServerSeconds is the API server's CPU time over the requests and
	// the wait after them, its idle CPU not taken off: on a few requests
	// beside other work, that idle CPU can be all the difference, and the
	// figures per request 0.
	APIServerSeconds float64 `json:"apiServerSeconds"`
}

// requestsNamespace prefixes the namespace of the requests measure's WebApps,
// which no operator sees: the measure runs before any starts, and deletes
// it.
const requestsNamespace = "bench-requests"

// measureRequests sends, with no operator running, N of each request that
// Steward's WebApps cost the API server over the plain client's two creates
// (the WebApp's create, its status patches as Steward writes them, its
// event), and creates of its Deployment as typed protobuf and as
// unstructured JSON, dry run (no pods follow), and reads the CPU time of the
// API server and etcd around each. The cluster's other components keep
// running: their idle CPU, read first, is taken off.
func (b *bench) measureRequests(ctx context.Context, res *results) error {
	nss, err := b.namespaces(ctx, requestsNamespace, 1)
	if err != nil {
		return err
	}
	n := b.cfg.N
	apps := make([]*v1alpha1.WebApp, n)
	for i := range apps {
		apps[i] = b.sc.New(nss[0], i, false).(*v1alpha1.WebApp)
	}
	pids := map[string]int{"kube-apiserver": b.procs["kube-apiserver"], "etcd": b.procs["etcd"]}
	idle := processCPU(pids)
	idleStart := time.Now()
	time.Sleep(5 * time.Second)
	idleRate := processCPU(pids).since(idle)
	idleSeconds := time.Since(idleStart).Seconds()

	deployment := func(app *v1alpha1.WebApp, typed bool) client.Object {
		u := rawApplied(webapp.Deployment(app, webapp.Bindings{}), app.Name)
		if !typed {
			return u
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			panic(err) // built from a typed apply configuration
		}
		return d
	}
	steps := []struct {
		name string
		send func(i int) error
	}{
		{"create webapps", func(i int) error { return b.c.Create(ctx, apps[i]) }},
		{"patch webapps/status, deploying", func(i int) error {
			return status.Write(ctx, b.c, apps[i], &apps[i].Status, deployingStatus(apps[i]))
		}},
		{"patch webapps/status, Ready", func(i int) error {
			return status.Write(ctx, b.c, apps[i], &apps[i].Status, runningStatus(apps[i]))
		}},
		{"create events (events.k8s.io)", func(i int) error { return b.c.Create(ctx, availableEvent(apps[i])) }},
		{"create deployments, protobuf, dry run", func(i int) error {
			return b.c.Create(ctx, deployment(apps[i], true), client.DryRunAll)
		}},
		{"create deployments, JSON, dry run", func(i int) error {
			return b.c.Create(ctx, deployment(apps[i], false), client.DryRunAll)
		}},
	}
	for _, s := range steps {
		before := processCPU(pids)
		start := time.Now()
		if err := inParallel(n, b.cfg.Concurrency, s.send); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		// The watch events of the last requests reach the informers.
		time.Sleep(2 * time.Second)
		used := processCPU(pids).since(before)
		idleShare := time.Since(start).Seconds() / idleSeconds
		res.Requests = append(res.Requests, requestCost{
			Request: s.name, Requests: n,
			APIServerMs:      1000 * max(used["kube-apiserver"]-idleShare*idleRate["kube-apiserver"], 0) / float64(n),
			EtcdMs:           1000 * max(used["etcd"]-idleShare*idleRate["etcd"], 0) / float64(n),
			APIServerSeconds: used["kube-apiserver"],
		})
		b.logf("Requests: %s, %d in %.1fs", s.name, n, time.Since(start).Seconds())
	}
	return b.deleteNamespaces(ctx, "the requests measure's", nss)
}

// deployingStatus is the status Steward writes for a new WebApp whose
// Deployment is rolling out.
func deployingStatus(app *v1alpha1.WebApp) v1alpha1.WebAppStatus {
	st := app.Status
	st.ObservedGeneration, st.Phase, st.DesiredReplicas = app.Generation, v1alpha1.WebAppDeploying, 1
	st.Selector, st.URL = k8slabels.SelectorFromSet(webapp.SelectorLabels(app)).String(), webapp.URL(app)
	msg := "0 of 1 pods updated, 0 ready"
	conditions.Set(&st.Conditions, app.Generation, conditions.False(v1alpha1.ReasonCreating, msg),
		conditions.True(v1alpha1.ReasonCreating, msg), conditions.False(v1alpha1.ReasonHealthy, ""))
	return st
}

// runningStatus is the status Steward writes for a WebApp of one replica
// once it is Ready.
func runningStatus(app *v1alpha1.WebApp) v1alpha1.WebAppStatus {
	st := deployingStatus(app)
	st.Phase, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = v1alpha1.WebAppRunning, 1, 1, 1
	conditions.Set(&st.Conditions, app.Generation, conditions.True(v1alpha1.ReasonAvailable, "1/1 pods ready"),
		conditions.False(v1alpha1.ReasonRolloutComplete, ""), conditions.False(v1alpha1.ReasonHealthy, ""))
	return st
}

// availableEvent is the event Steward emits when a WebApp is first Ready.
func availableEvent(app *v1alpha1.WebApp) *eventsv1.Event {
	now := time.Now()
	return &eventsv1.Event{
		// Named as the event recorder names them.
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: fmt.Sprintf("%s.%x", app.Name, now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now), ReportingController: "steward.dev/steward", ReportingInstance: "steward-bench",
		Action: "Deploy", Reason: v1alpha1.EventAvailable, Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WebApp",
			Namespace: app.Namespace, Name: app.Name, UID: app.UID, ResourceVersion: app.ResourceVersion},
		Note: "WebApp is available at " + webapp.URL(app) + ": 1/1 pods ready",
	}
}

// printRequests writes the requests measure's part of the report.
func (r *results) printRequests(out io.Writer) {
	fmt.Fprintf(out, "\n11. API server and etcd CPU per request, %d of each, no operator running (the bench's informers watching):\n", r.Settings.N)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "   request\tkube-apiserver\tetcd\t")
	for _, c := range r.Requests {
		fmt.Fprintf(w, "   %s\t%.2f ms\t%.2f ms\t\n", c.Request, c.APIServerMs, c.EtcdMs)
	}
	_ = w.Flush()
}
