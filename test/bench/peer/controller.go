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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// WebAppReconciler reconciles a WebApp object, as the tutorials' Memcached
// reconciler does: one function, children got and then created or updated,
// the status updated at the end.
type WebAppReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=steward.dev,resources=webapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=webapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create;update;patch;delete

// Reconcile makes the WebApp's Deployment and Service match its spec and
// reports the Deployment's readiness in the WebApp's status.
func (r *WebAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	app := &v1alpha1.WebApp{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: the garbage collector removes the children.
			return ctrl.Result{}, nil
		}
		log.Error(err, "Failed to get the WebApp")
		return ctrl.Result{}, err
	}

	// The Deployment: create it if it is missing, else update it.
	dep, err := r.deploymentForWebApp(app)
	if err != nil {
		return ctrl.Result{}, err
	}
	found := &appsv1.Deployment{}
	err = r.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, found)
	switch {
	case apierrors.IsNotFound(err):
		log.Info("Creating a new Deployment", "Deployment.Name", dep.Name)
		if err := r.Create(ctx, dep); err != nil {
			log.Error(err, "Failed to create the Deployment", "Deployment.Name", dep.Name)
			return ctrl.Result{}, err
		}
		found = dep
	case err != nil:
		log.Error(err, "Failed to get the Deployment")
		return ctrl.Result{}, err
	default:
		found.Spec.Replicas = dep.Spec.Replicas
		found.Spec.Template = dep.Spec.Template
		if err := r.Update(ctx, found); err != nil {
			log.Error(err, "Failed to update the Deployment", "Deployment.Name", found.Name)
			return ctrl.Result{}, err
		}
	}

	// The Service, the same way.
	svc, err := r.serviceForWebApp(app)
	if err != nil {
		return ctrl.Result{}, err
	}
	foundSvc := &corev1.Service{}
	err = r.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, foundSvc)
	switch {
	case apierrors.IsNotFound(err):
		log.Info("Creating a new Service", "Service.Name", svc.Name)
		if err := r.Create(ctx, svc); err != nil {
			log.Error(err, "Failed to create the Service", "Service.Name", svc.Name)
			return ctrl.Result{}, err
		}
	case err != nil:
		log.Error(err, "Failed to get the Service")
		return ctrl.Result{}, err
	default:
		foundSvc.Spec.Selector = svc.Spec.Selector
		foundSvc.Spec.Ports = svc.Spec.Ports
		if err := r.Update(ctx, foundSvc); err != nil {
			log.Error(err, "Failed to update the Service", "Service.Name", foundSvc.Name)
			return ctrl.Result{}, err
		}
	}

	// The status, on every reconcile.
	replicas := *dep.Spec.Replicas
	ready := found.Status.ObservedGeneration >= found.Generation &&
		found.Status.ReadyReplicas == replicas && found.Status.UpdatedReplicas == replicas
	app.Status.ObservedGeneration = app.Generation
	app.Status.DesiredReplicas = replicas
	app.Status.Replicas = found.Status.Replicas
	app.Status.ReadyReplicas = found.Status.ReadyReplicas
	app.Status.UpdatedReplicas = found.Status.UpdatedReplicas
	cond := metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: app.Generation,
		Reason: v1alpha1.ReasonCreating, Message: fmt.Sprintf("%d of %d replicas ready", found.Status.ReadyReplicas, replicas),
	}
	app.Status.Phase = v1alpha1.WebAppDeploying
	if ready {
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonAvailable
		app.Status.Phase = v1alpha1.WebAppRunning
	}
	meta.SetStatusCondition(&app.Status.Conditions, cond)
	if err := r.Status().Update(ctx, app); err != nil {
		log.Error(err, "Failed to update the WebApp status")
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// labelsForWebApp are the labels of a WebApp's children and pods.
func labelsForWebApp(app *v1alpha1.WebApp) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "webapp",
		"app.kubernetes.io/instance":   app.Name,
		"app.kubernetes.io/managed-by": "peer",
	}
}

// port is the WebApp's container port.
func port(app *v1alpha1.WebApp) int32 {
	if app.Spec.Port != 0 {
		return app.Spec.Port
	}
	return 8080
}

// deploymentForWebApp returns the WebApp's Deployment, owned by it.
func (r *WebAppReconciler) deploymentForWebApp(app *v1alpha1.WebApp) (*appsv1.Deployment, error) {
	ls := labelsForWebApp(app)
	replicas := int32(1)
	if app.Spec.Replicas != nil {
		replicas = *app.Spec.Replicas
	}
	// The pod carries what Steward's does for the same spec (a readiness
	// probe on the port, a preStop sleep, the restricted security
	// contexts, as the operator-sdk tutorial's pods also have), so that
	// the two operators' pods cost the cluster the same.
	container := corev1.Container{
		Name:  "app",
		Image: app.Spec.Image,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port(app), Protocol: corev1.ProtocolTCP}},
		Env:   app.Spec.Env,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds: 5,
		},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	podSecurity := app.Spec.PodSecurityContext
	if podSecurity == nil {
		podSecurity = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	}
	if app.Spec.Resources != nil {
		container.Resources = *app.Spec.Resources
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Labels: ls},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: ls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ls},
				Spec: corev1.PodSpec{
					Containers:       []corev1.Container{container},
					ImagePullSecrets: app.Spec.ImagePullSecrets,
					SecurityContext:  podSecurity,
				},
			},
		},
	}
	if err := ctrl.SetControllerReference(app, dep, r.Scheme); err != nil {
		return nil, fmt.Errorf("owning the Deployment: %w", err)
	}
	return dep, nil
}

// serviceForWebApp returns the WebApp's Service, owned by it.
func (r *WebAppReconciler) serviceForWebApp(app *v1alpha1.WebApp) (*corev1.Service, error) {
	ls := labelsForWebApp(app)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace, Labels: ls},
		Spec: corev1.ServiceSpec{
			Selector: ls,
			Ports: []corev1.ServicePort{{
				Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http"),
			}},
		},
	}
	if err := ctrl.SetControllerReference(app, svc, r.Scheme); err != nil {
		return nil, fmt.Errorf("owning the Service: %w", err)
	}
	return svc, nil
}

// SetupWithManager sets up the controller with the Manager: WebApps, and
// the Deployments and Services they own, from the manager's cluster-wide
// cache.
func (r *WebAppReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.WebApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}
