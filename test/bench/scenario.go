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
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/controller/webapp"
)

// Scenario is one kind's part of the benchmark. A new kind adds an
// implementation and a line in scenarios.
type Scenario interface {
	// Kind names the kind, e.g. "WebApp".
	Kind() string
	// New returns the i-th object to create in namespace ns. With invalid,
	// the object can never become Ready (it waits for something missing).
	New(ns string, i int, invalid bool) client.Object
	// Empty returns an empty object of the kind, for informers.
	Empty() client.Object
	// Converged reports whether obj is Ready at its current generation.
	Converged(obj client.Object) bool
	// Waiting reports whether an invalid obj has said what it waits for.
	Waiting(obj client.Object) bool
	// Raw returns the children a plain client creates for the i-th object:
	// the physical limit the operator is compared with.
	Raw(ns string, i int) []client.Object
	// RawConverged reports whether a raw child is ready; children for which
	// it is not defined return true.
	RawConverged(obj client.Object) bool
	// Edit returns a merge patch that changes the spec in a way that must
	// reach the first raw child's kind (e.g. the Deployment), tagged with
	// mark, and Applied reports whether a child carries mark.
	Edit(mark int) []byte
	Applied(child client.Object, mark int) bool
	// Child returns an empty object of the kind of child Edit reaches.
	Child() client.Object
}

// scenarios are the kinds the benchmark knows.
var scenarios = []Scenario{webAppScenario{}, databaseScenario{}, stackScenario{}}

// scenario returns the scenario of kind.
func scenario(kind string) (Scenario, error) {
	for _, s := range scenarios {
		if strings.EqualFold(s.Kind(), kind) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no scenario for kind %q; known: %s", kind, kinds())
}

// kinds lists the scenarios' kinds.
func kinds() string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.Kind())
	}
	return strings.Join(names, ", ")
}

// webAppScenario measures WebApps against a Deployment and a Service each.
type webAppScenario struct{}

const editEnv = "BENCH_EDIT"

func (webAppScenario) Kind() string { return "WebApp" }

func (webAppScenario) Empty() client.Object { return &v1alpha1.WebApp{} }

func (webAppScenario) Child() client.Object { return &appsv1.Deployment{} }

func (webAppScenario) New(ns string, i int, invalid bool) client.Object {
	app := &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
		Spec: v1alpha1.WebAppSpec{
			Image: "registry.example/app:1",
			Env:   []corev1.EnvVar{{Name: editEnv, Value: "0"}},
		},
	}
	if invalid {
		app.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "does-not-exist"}}
	}
	return app
}

func (webAppScenario) Converged(obj client.Object) bool {
	app, ok := obj.(*v1alpha1.WebApp)
	return ok && app.Status.ObservedGeneration == app.Generation &&
		meta.IsStatusConditionTrue(app.Status.Conditions, v1alpha1.ConditionReady)
}

func (webAppScenario) Waiting(obj client.Object) bool {
	app, ok := obj.(*v1alpha1.WebApp)
	if !ok {
		return false
	}
	c := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == v1alpha1.ReasonWaitingForPullSecret
}

// Raw builds the children with the controller's own builders, as the
// Database scenario does: the plain client creates the Deployment and the
// Service Steward creates for the WebApp New returns (with the port the API
// server defaults), rewritten by rawApplied (no owner reference, the bench's
// label in place of the managed-by label). Both create with one request
// each; comparing with smaller objects would count the pods' readiness
// probe, security contexts and labels as the operator's cost, though a
// client creating that workload directly creates them too.
func (s webAppScenario) Raw(ns string, i int) []client.Object {
	app := s.New(ns, i, false).(*v1alpha1.WebApp)
	app.Name = fmt.Sprintf("raw-%05d", i)
	app.Spec.Port = webAppDefaultPort
	dep := &appsv1.Deployment{}
	svc := &corev1.Service{}
	for _, c := range []struct {
		ac  runtime.ApplyConfiguration
		obj client.Object
	}{{webapp.Deployment(app, webapp.Bindings{}), dep}, {webapp.Service(app), svc}} {
		u := rawApplied(c.ac, app.Name)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c.obj); err != nil {
			panic(err) // built from a typed apply configuration
		}
	}
	return []client.Object{dep, svc}
}

// webAppDefaultPort is the port the WebApp CRD defaults (+kubebuilder:default).
const webAppDefaultPort = 8080

func (webAppScenario) RawConverged(obj client.Object) bool {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return true
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == want && d.Status.UpdatedReplicas == want
}

func (webAppScenario) Edit(mark int) []byte {
	return fmt.Appendf(nil, `{"spec":{"env":[{"name":%q,"value":"%d"}]}}`, editEnv, mark)
}

func (webAppScenario) Applied(child client.Object, mark int) bool {
	d, ok := child.(*appsv1.Deployment)
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == editEnv {
			return e.Value == strconv.Itoa(mark)
		}
	}
	return false
}
