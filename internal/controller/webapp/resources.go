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

package webapp

import (
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv2ac "k8s.io/client-go/applyconfigurations/autoscaling/v2"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/labels"
)

const (
	// containerName is the name of the WebApp's one container.
	containerName = "app"
	// portName names the container port and the Service port.
	portName = "http"
	// servicePort is the port the Service exposes.
	servicePort = 80
	// defaultReplicas is used when spec.replicas is unset.
	defaultReplicas = 1
	// drainSeconds is how long a pod that is being stopped keeps serving
	// before its server gets SIGTERM: the time Service endpoints and every
	// node's proxy rules take to stop sending it new connections. Without
	// it a rollout or scale-down drops the requests that still reach a
	// pod whose server has already exited.
	drainSeconds = 5
)

// SelectorLabels select a WebApp's pods. They never change for the life of
// the WebApp, as a Deployment's selector is immutable.
func SelectorLabels(app *v1alpha1.WebApp) map[string]string {
	return map[string]string{labels.WebApp: app.Name}
}

// Labels are put on every child of a WebApp.
func Labels(app *v1alpha1.WebApp) map[string]string {
	l := labels.Common(app.Name, "webapp")
	for k, v := range SelectorLabels(app) {
		l[k] = v
	}
	return l
}

// DesiredReplicas is the replica count the WebApp asks for when it does not
// autoscale.
func DesiredReplicas(app *v1alpha1.WebApp) int32 {
	if app.Spec.Replicas != nil {
		return *app.Spec.Replicas
	}
	return defaultReplicas
}

// ownerReference makes the WebApp the controller of a child it applies.
func ownerReference(app *v1alpha1.WebApp) *metav1ac.OwnerReferenceApplyConfiguration {
	return apply.ControllerReference(v1alpha1.GroupVersion.WithKind("WebApp"), app)
}

// Deployment runs the WebApp's pods. With autoscaling on it leaves replicas
// to the HorizontalPodAutoscaler. b holds what the WebApp's bindings resolve to.
func Deployment(app *v1alpha1.WebApp, b Bindings) *appsv1ac.DeploymentApplyConfiguration {
	spec := appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(app))).
		WithTemplate(podTemplate(app, b))
	if app.Spec.Autoscaling == nil {
		spec.WithReplicas(DesiredReplicas(app))
	}
	return appsv1ac.Deployment(app.Name, app.Namespace).
		WithLabels(Labels(app)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(spec)
}

func podTemplate(app *v1alpha1.WebApp, b Bindings) *corev1ac.PodTemplateSpecApplyConfiguration {
	container := corev1ac.Container().
		WithName(containerName).
		WithImage(app.Spec.Image).
		WithPorts(corev1ac.ContainerPort().WithName(portName).WithContainerPort(app.Spec.Port).WithProtocol(corev1.ProtocolTCP)).
		WithSecurityContext(containerSecurityContext(app.Spec.SecurityContext)).
		WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithSleep(corev1ac.SleepAction().WithSeconds(drainSeconds))))
	for i := range app.Spec.Env {
		container.WithEnv(apply.Convert[corev1ac.EnvVarApplyConfiguration](&app.Spec.Env[i]))
	}
	env, envFrom := configEnv(app, b.Config)
	container.WithEnv(firstOfEach(append(bindingEnv(app, b), env...))...).WithEnvFrom(envFrom...)
	vols, mounts := configVolumes(b.Config)
	container.WithVolumeMounts(mounts...)
	if app.Spec.Resources != nil {
		container.WithResources(apply.Convert[corev1ac.ResourceRequirementsApplyConfiguration](app.Spec.Resources))
	}
	if hc := app.Spec.HealthCheck; hc != nil {
		container.WithReadinessProbe(probe(hc, 0)).WithLivenessProbe(probe(hc, hc.InitialDelaySeconds))
	} else {
		// A pod gets traffic once its server accepts connections, not
		// as soon as its container has started.
		container.WithReadinessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(portName))).
			WithPeriodSeconds(5))
	}
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(vols...).
		WithSecurityContext(podSecurityContext(app.Spec.PodSecurityContext))
	for _, s := range app.Spec.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	tmpl := corev1ac.PodTemplateSpec().
		WithLabels(Labels(app)).
		WithSpec(pod)
	if len(app.Spec.PodAnnotations) > 0 {
		tmpl.WithAnnotations(app.Spec.PodAnnotations)
	}
	if a := configAnnotations(b.Config); a != nil {
		tmpl.WithAnnotations(a)
	}
	return tmpl
}

// firstOfEach keeps the first variable of each name, as server-side apply
// refuses a container with two variables alike (with an internal error): a
// binding's wins over a config key's, and an earlier config use's over a
// later one's. spec.env's win over both, which leave them out.
func firstOfEach(env []*corev1ac.EnvVarApplyConfiguration) []*corev1ac.EnvVarApplyConfiguration {
	seen := map[string]bool{}
	return slices.DeleteFunc(env, func(e *corev1ac.EnvVarApplyConfiguration) bool {
		dup := seen[*e.Name]
		seen[*e.Name] = true
		return dup
	})
}

func probe(hc *v1alpha1.HealthCheck, initialDelay int32) *corev1ac.ProbeApplyConfiguration {
	p := corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(hc.Path).WithPort(intstr.FromString(portName))).
		WithPeriodSeconds(hc.PeriodSeconds).
		WithFailureThreshold(hc.FailureThreshold)
	if initialDelay > 0 {
		p.WithInitialDelaySeconds(initialDelay)
	}
	return p
}

// podSecurityContext is Steward's default (seccomp RuntimeDefault) with the
// user's override laid over it field by field.
func podSecurityContext(override *corev1.PodSecurityContext) *corev1ac.PodSecurityContextApplyConfiguration {
	sc := corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	overlay(&sc, override)
	return apply.Convert[corev1ac.PodSecurityContextApplyConfiguration](&sc)
}

// containerSecurityContext is Steward's default (no privilege escalation, all
// capabilities dropped) with the user's override laid over it field by field.
func containerSecurityContext(override *corev1.SecurityContext) *corev1ac.SecurityContextApplyConfiguration {
	sc := corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	overlay(&sc, override)
	return apply.Convert[corev1ac.SecurityContextApplyConfiguration](&sc)
}

// Service gives the WebApp a stable in-cluster address on port 80.
func Service(app *v1alpha1.WebApp) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(app.Name, app.Namespace).
		WithLabels(Labels(app)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(app)).
			WithPorts(corev1ac.ServicePort().
				WithName(portName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(servicePort).
				WithTargetPort(intstr.FromString(portName))))
}

// Ingress routes spec.ingress.host and path to the Service, or is nil when
// the WebApp has no ingress.
func Ingress(app *v1alpha1.WebApp) *networkingv1ac.IngressApplyConfiguration {
	in := app.Spec.Ingress
	if in == nil {
		return nil
	}
	path := in.Path
	if path == "" {
		path = "/"
	}
	spec := networkingv1ac.IngressSpec().
		WithRules(networkingv1ac.IngressRule().
			WithHost(in.Host).
			WithHTTP(networkingv1ac.HTTPIngressRuleValue().
				WithPaths(networkingv1ac.HTTPIngressPath().
					WithPath(path).
					WithPathType(networkingv1.PathTypePrefix).
					WithBackend(networkingv1ac.IngressBackend().
						WithService(networkingv1ac.IngressServiceBackend().
							WithName(app.Name).
							WithPort(networkingv1ac.ServiceBackendPort().WithName(portName)))))))
	if in.ClassName != nil {
		spec.WithIngressClassName(*in.ClassName)
	}
	if in.TLSSecretName != "" {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(in.Host).WithSecretName(in.TLSSecretName))
	}
	return networkingv1ac.Ingress(app.Name, app.Namespace).
		WithLabels(Labels(app)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(spec)
}

// HorizontalPodAutoscaler scales the Deployment on CPU, or is nil when the
// WebApp does not autoscale.
func HorizontalPodAutoscaler(app *v1alpha1.WebApp) *autoscalingv2ac.HorizontalPodAutoscalerApplyConfiguration {
	as := app.Spec.Autoscaling
	if as == nil {
		return nil
	}
	return autoscalingv2ac.HorizontalPodAutoscaler(app.Name, app.Namespace).
		WithLabels(Labels(app)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(autoscalingv2ac.HorizontalPodAutoscalerSpec().
			WithScaleTargetRef(autoscalingv2ac.CrossVersionObjectReference().
				WithAPIVersion(appsv1.SchemeGroupVersion.String()).
				WithKind("Deployment").
				WithName(app.Name)).
			WithMinReplicas(max(as.MinReplicas, 1)).
			WithMaxReplicas(as.MaxReplicas).
			WithMetrics(autoscalingv2ac.MetricSpec().
				WithType("Resource").
				WithResource(autoscalingv2ac.ResourceMetricSource().
					WithName(corev1.ResourceCPU).
					WithTarget(autoscalingv2ac.MetricTarget().
						WithType("Utilization").
						WithAverageUtilization(as.TargetCPUUtilizationPercentage)))))
}

// PodDisruptionBudget keeps all but one pod up during voluntary disruptions
// such as node drains. It is nil when the WebApp can run a single pod, where
// a budget would block drains forever.
func PodDisruptionBudget(app *v1alpha1.WebApp) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	lowest := DesiredReplicas(app)
	if as := app.Spec.Autoscaling; as != nil {
		lowest = as.MinReplicas
	}
	if lowest <= 1 {
		return nil
	}
	return policyv1ac.PodDisruptionBudget(app.Name, app.Namespace).
		WithLabels(Labels(app)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(app))))
}

// URL is where the WebApp answers.
func URL(app *v1alpha1.WebApp) string {
	if in := app.Spec.Ingress; in != nil {
		scheme := "http"
		if in.TLSSecretName != "" {
			scheme = "https"
		}
		path := in.Path
		if path == "" {
			path = "/"
		}
		return fmt.Sprintf("%s://%s%s", scheme, in.Host, path)
	}
	return fmt.Sprintf("http://%s.%s.svc", app.Name, app.Namespace)
}

// overlay copies the fields that are set in override onto base. Both must be
// the same struct type; JSON merging gives exactly "set fields win".
func overlay[T any](base *T, override *T) {
	if override == nil {
		return
	}
	raw, err := json.Marshal(override)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", override, err))
	}
	if err := json.Unmarshal(raw, base); err != nil {
		panic(fmt.Sprintf("decoding into %T: %v", base, err))
	}
}
