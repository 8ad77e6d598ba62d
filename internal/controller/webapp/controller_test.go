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

package webapp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/controller/webapp"
)

const timeout = 20 * time.Second

func createApp(t *testing.T, ns, name string, mutate ...func(*v1alpha1.WebApp)) *v1alpha1.WebApp {
	t.Helper()
	app := &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.WebAppSpec{Image: "registry.example/shop:1"},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := k8s.Create(context.Background(), app); err != nil {
		t.Fatalf("creating WebApp: %v", err)
	}
	return app
}

// waitFor gets obj until it exists and check passes.
func waitFor[T client.Object](t *testing.T, obj T, check func(T) error) T {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), key, obj); err != nil {
			return err
		}
		if check == nil {
			return nil
		}
		return check(obj)
	})
	return obj
}

func gone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, func() error {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%T %s still exists (get: %w)", obj, obj.GetName(), err)
	})
}

func named[T client.Object](obj T, ns, name string) T {
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// markDeploymentReady plays kube-controller-manager's part: the Deployment's
// pods are all up to date and ready.
func markDeploymentReady(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		n := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		return k8s.Status().Update(context.Background(), dep)
	})
}

func condition(app *v1alpha1.WebApp, t string) *metav1.Condition {
	return meta.FindStatusCondition(app.Status.Conditions, t)
}

func controlledBy(obj client.Object, app *v1alpha1.WebApp) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != app.UID || ref.Kind != "WebApp" {
		return fmt.Errorf("%s is not controlled by WebApp %s: %+v", obj.GetName(), app.Name, ref)
	}
	if obj.GetLabels()["app.kubernetes.io/managed-by"] != "steward" {
		return fmt.Errorf("%s lacks the managed-by label: %v", obj.GetName(), obj.GetLabels())
	}
	return nil
}

func eventReasons(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Regarding.Kind == "WebApp" {
			reasons = append(reasons, e.Type+"/"+e.Reason)
		}
	}
	return reasons
}

func hasEvent(t *testing.T, ns, name, typeReason string) {
	t.Helper()
	eventually(t, func() error {
		got := eventReasons(t, ns, name)
		for _, r := range got {
			if r == typeReason {
				return nil
			}
		}
		return fmt.Errorf("no %s event for %s, got %v", typeReason, name, got)
	})
}

func TestCreatesOwnedChildren(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "shop", func(a *v1alpha1.WebApp) {
		a.Spec.Replicas = new(int32(2))
		a.Spec.Ingress = &v1alpha1.WebAppIngress{Host: "shop.example.com"}
	})

	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "shop"), func(d *appsv1.Deployment) error { return controlledBy(d, app) })
	if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.Containers[0].Image != "registry.example/shop:1" {
		t.Errorf("deployment spec = %+v", dep.Spec)
	}
	waitFor(t, named(&corev1.Service{}, ns, "shop"), func(s *corev1.Service) error { return controlledBy(s, app) })
	waitFor(t, named(&networkingv1.Ingress{}, ns, "shop"), func(i *networkingv1.Ingress) error { return controlledBy(i, app) })
	waitFor(t, named(&policyv1.PodDisruptionBudget{}, ns, "shop"), func(p *policyv1.PodDisruptionBudget) error { return controlledBy(p, app) })

	markDeploymentReady(t, dep)
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.ObservedGeneration != a.Generation || a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("status = %+v", a.Status)
		}
		if c := condition(a, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	if app.Status.URL != "http://shop.example.com/" || app.Status.Selector != "steward.dev/webapp=shop" {
		t.Errorf("url/selector = %q/%q", app.Status.URL, app.Status.Selector)
	}
}

func TestBecomesReadyWithItsDeployment(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "web")
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "web"), nil)
	markDeploymentReady(t, dep)

	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		c := condition(a, v1alpha1.ConditionReady)
		if a.Status.Phase != v1alpha1.WebAppRunning || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("phase %s, Ready %+v", a.Status.Phase, c)
		}
		return nil
	})
	if app.Status.ReadyReplicas != 1 || app.Status.DesiredReplicas != 1 {
		t.Errorf("replicas in status = %+v", app.Status)
	}
	hasEvent(t, ns, "web", "Normal/Available")
	if n := histogramCount(t, "steward_time_to_first_ready_seconds", "kind", "WebApp"); n < 1 {
		t.Errorf("steward_time_to_first_ready_seconds{kind=WebApp} has %d observations", n)
	}
	if n := gauge(t, "steward_webapps", "phase", "Running"); n < 1 {
		t.Errorf("steward_webapps{phase=Running} = %v", n)
	}
}

func TestScaleAndImageChangesPropagate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "api")
	markDeploymentReady(t, waitFor(t, named(&appsv1.Deployment{}, ns, "api"), nil))
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("phase = %s", a.Status.Phase)
		}
		return nil
	})

	// kubectl scale goes through the scale subresource.
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	if err := k8s.SubResource("scale").Update(ctx, app, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling: %v", err)
	}
	waitFor(t, named(&appsv1.Deployment{}, ns, "api"), func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas = %d", *d.Spec.Replicas)
		}
		return nil
	})

	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"image":"registry.example/shop:2"}}`))
	if err := k8s.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, named(&appsv1.Deployment{}, ns, "api"), func(d *appsv1.Deployment) error {
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/shop:2" {
			return fmt.Errorf("image = %s", img)
		}
		return nil
	})
	hasEvent(t, ns, "api", "Normal/Scaled")
}

func TestDriftIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createApp(t, ns, "drift", func(a *v1alpha1.WebApp) { a.Spec.Replicas = new(int32(2)) })
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "drift"), nil)

	// Someone edits the Deployment by hand.
	patch := client.RawPatch("application/strategic-merge-patch+json",
		[]byte(`{"spec":{"replicas":7,"template":{"spec":{"containers":[{"name":"app","image":"evil:latest"}]}}}}`))
	if err := k8s.Patch(ctx, dep, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, dep, func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "registry.example/shop:1" {
			return fmt.Errorf("replicas %d, image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
		}
		return nil
	})
}

func TestChildLeavingTheSpecIsDeleted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "trim", func(a *v1alpha1.WebApp) {
		a.Spec.Replicas = new(int32(3))
		a.Spec.Ingress = &v1alpha1.WebAppIngress{Host: "trim.example.com"}
	})
	waitFor(t, named(&networkingv1.Ingress{}, ns, "trim"), nil)
	waitFor(t, named(&policyv1.PodDisruptionBudget{}, ns, "trim"), nil)

	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"ingress":null,"replicas":1}}`))
	if err := k8s.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	gone(t, named(&networkingv1.Ingress{}, ns, "trim"))
	gone(t, named(&policyv1.PodDisruptionBudget{}, ns, "trim"))
	waitFor(t, named(&appsv1.Deployment{}, ns, "trim"), nil)
}

// A Deployment is created with a Create; a field the spec stops asking for
// must still leave it, which server-side apply does only for fields that no
// other field manager owns.
func TestFieldLeavingTheSpecIsRemoved(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "slim", func(a *v1alpha1.WebApp) {
		a.Spec.Env = []corev1.EnvVar{{Name: "KEEP", Value: "1"}, {Name: "DROP", Value: "2"}}
		a.Spec.HealthCheck = &v1alpha1.HealthCheck{Path: "/healthz"}
	})
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "slim"), nil)
	if managers := fieldManagers(dep); !slices.Contains(managers, apply.CreateFieldOwner+"/Update") {
		t.Fatalf("the new Deployment's field managers are %v: it was not made by a Create", managers)
	}

	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"env":[{"name":"KEEP","value":"1"}],"healthCheck":null}}`))
	if err := k8s.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	dep = waitFor(t, dep, func(d *appsv1.Deployment) error {
		c := d.Spec.Template.Spec.Containers[0]
		var names []string
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
		// Without a health check the readiness probe is a TCP check of the port.
		if slices.Contains(names, "DROP") || !slices.Contains(names, "KEEP") ||
			c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet != nil || c.LivenessProbe != nil {
			return fmt.Errorf("env %v, readiness probe %v, liveness probe %v", names, c.ReadinessProbe, c.LivenessProbe)
		}
		return nil
	})
	managers := fieldManagers(dep)
	if slices.Contains(managers, apply.CreateFieldOwner+"/Update") || !slices.Contains(managers, apply.FieldOwner+"/Apply") {
		t.Errorf("field managers after the change = %v, want the Create's handed over to %s/Apply", managers, apply.FieldOwner)
	}
}

// fieldManagers lists obj's field managers of its main resource as manager/operation.
func fieldManagers(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		if m.Subresource == "" {
			out = append(out, m.Manager+"/"+string(m.Operation))
		}
	}
	return out
}

func TestUnchangedReconcileWritesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "quiet", func(a *v1alpha1.WebApp) {
		a.Spec.Replicas = new(int32(2))
		a.Spec.Ingress = &v1alpha1.WebAppIngress{Host: "quiet.example.com", TLSSecretName: "quiet-tls"}
		a.Spec.HealthCheck = &v1alpha1.HealthCheck{Path: "/healthz"}
		a.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	})
	markDeploymentReady(t, waitFor(t, named(&appsv1.Deployment{}, ns, "quiet"), nil))
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("phase = %s", a.Status.Phase)
		}
		return nil
	})
	time.Sleep(time.Second) // let the events of convergence settle

	mark := requests.mark()
	before := reconciles(t)
	// A metadata-only change makes the controller reconcile an unchanged spec.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`))
	if err := k8s.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if reconciles(t) <= before {
			return errors.New("no reconcile yet")
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if writes := requests.writesSince(mark, ns); len(writes) != 0 {
		t.Errorf("reconciling an unchanged WebApp wrote %d times: %v", len(writes), writes)
	}
}

// TestOwnStatusEchoIsNotReconciled checks that the echo of the operator's
// own status write, the version of the WebApp it made, is not enqueued,
// while a status written by someone else is, and is corrected.
func TestOwnStatusEchoIsNotReconciled(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "echo", func(a *v1alpha1.WebApp) { a.Spec.Replicas = new(int32(2)) })
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "echo"), nil)
	markDeploymentReady(t, dep)
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("phase = %s", a.Status.Phase)
		}
		return nil
	})
	before := app.DeepCopy()

	// One replica becomes unready; the operator writes that.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 1, 1
	if err := k8s.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.ReadyReplicas != 1 {
			return fmt.Errorf("readyReplicas = %d", a.Status.ReadyReplicas)
		}
		return nil
	})
	echoes := webapp.NotOwnStatusEcho()
	if echoes.Update(event.UpdateEvent{ObjectOld: before, ObjectNew: app}) {
		t.Errorf("the echo of the operator's status write (resourceVersion %s) is enqueued", app.ResourceVersion)
	}

	// Someone else's status write is enqueued and corrected: the operator
	// writes back what its children show.
	written := app.DeepCopy()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"readyReplicas":7}}`))
	if err := k8s.Status().Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	if !echoes.Update(event.UpdateEvent{ObjectOld: written, ObjectNew: app}) {
		t.Errorf("a status written by someone else (resourceVersion %s) is not enqueued", app.ResourceVersion)
	}
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.ReadyReplicas != 1 {
			return fmt.Errorf("readyReplicas = %d, want 1 again", a.Status.ReadyReplicas)
		}
		return nil
	})
}

func TestProgressDeadlineMakesItDegraded(t *testing.T) {
	ns := namespace(t)
	app := createApp(t, ns, "stuck")
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "stuck"), nil)
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "stuck-1" has timed out progressing.`,
			}},
		}
		return k8s.Status().Update(context.Background(), dep)
	})
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		c := condition(a, v1alpha1.ConditionDegraded)
		if a.Status.Phase != v1alpha1.WebAppDegraded || c == nil || c.Status != metav1.ConditionTrue || c.Reason != "ProgressDeadlineExceeded" {
			return fmt.Errorf("phase %s, Degraded %+v", a.Status.Phase, c)
		}
		if !strings.Contains(c.Message, "timed out progressing") {
			return fmt.Errorf("message %q does not carry the Deployment's", c.Message)
		}
		return nil
	})
	hasEvent(t, ns, "stuck", "Warning/ProgressDeadlineExceeded")

	// The metric the alerts read follows the condition, from the
	// informer's events, and forgets the WebApp once it is gone.
	eventually(t, func() error {
		if got := problemSeries(t, ns, "stuck"); !slices.Equal(got, []string{"Degraded/ProgressDeadlineExceeded", "Stalled/ProgressDeadlineExceeded"}) {
			return fmt.Errorf("steward_condition_true_since_timestamp_seconds of the WebApp: %v", got)
		}
		return nil
	})
	if err := k8s.Delete(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if got := problemSeries(t, ns, "stuck"); len(got) > 0 {
			return fmt.Errorf("a deleted WebApp keeps its series: %v", got)
		}
		return nil
	})
}

func TestNeverTakesOverAForeignObject(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "other:1"}}},
			},
		},
	}
	if err := k8s.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	app := createApp(t, ns, "taken")
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		c := condition(a, v1alpha1.ConditionReady)
		if c == nil || c.Reason != "NameConflict" || a.Status.Phase != v1alpha1.WebAppDegraded {
			return fmt.Errorf("phase %s, Ready %+v", a.Status.Phase, c)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if len(foreign.OwnerReferences) != 0 || foreign.Spec.Template.Spec.Containers[0].Image != "other:1" {
		t.Errorf("the foreign Deployment was modified: %+v", foreign)
	}
	hasEvent(t, ns, "taken", "Warning/NameConflict")
}

func TestInvalidSpecsAreRejected(t *testing.T) {
	ns := namespace(t)
	tests := []struct {
		name    string
		spec    map[string]any
		message string
	}{
		{"negative replicas", map[string]any{"image": "a:1", "replicas": -1}, "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"},
		{"port 0", map[string]any{"image": "a:1", "port": 0}, "spec.port in body should be greater than or equal to 1"},
		{"port above 65535", map[string]any{"image": "a:1", "port": 65536}, "spec.port in body should be less than or equal to 65535"},
		{"empty image", map[string]any{"image": ""}, "spec.image in body should be at least 1 chars long"},
		{"missing image", map[string]any{}, "spec.image: Required value"},
		{"autoscaling max below min", map[string]any{
			"image": "a:1", "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"minReplicas": 5, "maxReplicas": 2},
		}, "autoscaling.maxReplicas must be greater than or equal to autoscaling.minReplicas"},
		{"replicas while autoscaling", map[string]any{
			"image": "a:1", "replicas": 2, "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"maxReplicas": 4},
		}, "replicas must not be set while autoscaling is enabled"},
		{"autoscaling without a CPU request", map[string]any{
			"image": "a:1", "autoscaling": map[string]any{"maxReplicas": 4},
		}, "autoscaling needs resources.requests.cpu"},
		{"ingress path without a slash", map[string]any{
			"image": "a:1", "ingress": map[string]any{"host": "a.example.com", "path": "api"},
		}, "spec.ingress.path in body should match '^/'"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "steward.dev/v1alpha1", "kind": "WebApp",
				"metadata": map[string]any{"name": fmt.Sprintf("bad-%d", i), "namespace": ns},
				"spec":     tt.spec,
			}}
			err := k8s.Create(context.Background(), u)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("message %q does not contain %q", err.Error(), tt.message)
			}
		})
	}
}

func TestCacheHoldsOnlyManagedObjects(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	unrelated := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "unrelated"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "unrelated"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}},
			},
		},
	}
	if err := k8s.Create(ctx, unrelated); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, "cached")
	cache := mgr.GetCache()
	eventually(t, func() error {
		return cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cached"}, &appsv1.Deployment{})
	})
	// The managed Deployment arrived, so the unrelated one, created before
	// it, would have too if the cache held it.
	if err := cache.Get(ctx, client.ObjectKeyFromObject(unrelated), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("unrelated Deployment in the cache: %v", err)
	}
	managed := &appsv1.Deployment{}
	if err := cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cached"}, managed); err != nil {
		t.Fatal(err)
	}
	if len(managed.ManagedFields) != 0 {
		t.Errorf("managedFields kept in the cache: %d entries", len(managed.ManagedFields))
	}
	// Kinds Steward does not manage have no informer at all.
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &corev1.LimitRange{}} {
		err := cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, obj)
		if apierrors.IsNotFound(err) || err == nil {
			t.Errorf("%T is cached: %v", obj, err)
		}
	}
}

func TestWaitsForAMissingPullSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	app := createApp(t, ns, "private", func(a *v1alpha1.WebApp) {
		a.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	})
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		c := condition(a, v1alpha1.ConditionReady)
		if a.Status.Phase != v1alpha1.WebAppPending || c == nil || c.Reason != v1alpha1.ReasonWaitingForPullSecret {
			return fmt.Errorf("phase %s, Ready %+v", a.Status.Phase, c)
		}
		if !strings.Contains(c.Message, "registry") {
			return fmt.Errorf("message %q does not name the Secret", c.Message)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "private"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment created before its pull Secret exists: %v", err)
	}
	hasEvent(t, ns, "private", "Warning/WaitingForPullSecret")

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// The WebApp is not told (Steward does not watch Secrets); it looks again
	// after a few seconds.
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "private"), nil)
	if got := dep.Spec.Template.Spec.ImagePullSecrets; len(got) != 1 || got[0].Name != "registry" {
		t.Errorf("imagePullSecrets = %v", got)
	}
}

// TestFirstRolloutWritesStatusOnce checks that a new WebApp reads as in
// progress to kstatus before it is Ready, though its status is not written
// yet (the CRD's default observedGeneration -1 says so), and that its first
// rollout costs one status write, at Ready.
func TestFirstRolloutWritesStatusOnce(t *testing.T) {
	ns := namespace(t)
	mark := requests.mark()
	app := createApp(t, ns, "settle")
	dep := waitFor(t, named(&appsv1.Deployment{}, ns, "settle"), nil)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("WebApp"))
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(app), u); err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(u.GetCreationTimestamp().Time); age < v1alpha1.FirstRolloutSettle-5*time.Second && res.Status != kstatus.InProgressStatus {
		t.Errorf("creating, %v old: kstatus %s (%s), want InProgress; status %v", age, res.Status, res.Message, u.Object["status"])
	}
	markDeploymentReady(t, dep)
	waitFor(t, app, func(a *v1alpha1.WebApp) error {
		if a.Status.Phase != v1alpha1.WebAppRunning {
			return fmt.Errorf("phase = %s", a.Status.Phase)
		}
		return nil
	})
	statusWrites := 0
	for _, w := range requests.writesSince(mark, ns) {
		if strings.Contains(w, "/webapps/settle/status") {
			statusWrites++
		}
	}
	if statusWrites != 1 {
		t.Errorf("first rollout wrote status %d times, want 1", statusWrites)
	}
}
