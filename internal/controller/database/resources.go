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

package database

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/instance"
	"github.com/steward-dev/steward/internal/labels"
)

const (

	// statusPort serves the instance manager's /healthz, /readyz and /status.
	statusPort = 8008
	// dataVolume is the volumeClaimTemplate's name; PVCs are data-<pod>.
	dataVolume  = "data"
	binVolume   = "steward-bin"
	runVolume   = "run"
	configMount = "/etc/steward/config"
	runMount    = "/steward/run"
	// engineUID is the user the official PostgreSQL, MySQL and MariaDB
	// images run their server as.
	engineUID = 999
)

// enginePlan is what differs between engines in the pod.
type enginePlan struct {
	port      int32
	container string
	mount     string // where the volume is mounted
	dataDir   string // a subdirectory: a fresh volume may hold lost+found
	superuser string
	scheme    string // of the connection URI
}

func planFor(e v1alpha1.DatabaseEngine) enginePlan {
	if e == v1alpha1.EnginePostgres {
		return enginePlan{port: e.Port(), container: "postgres", mount: "/var/lib/postgresql/data",
			dataDir: "/var/lib/postgresql/data/pgdata", superuser: "postgres", scheme: "postgresql"}
	}
	return enginePlan{port: e.Port(), container: string(e), mount: "/var/lib/mysql",
		dataDir: "/var/lib/mysql/data", superuser: "root", scheme: "mysql"}
}

// replicationUser is the engines' user for streaming replication.
const replicationUser = "replicator"

// preset is a size's replicas and per-instance resources.
type preset struct {
	replicas    int32
	cpu, memory string
}

var presets = map[v1alpha1.DatabaseSize]preset{
	v1alpha1.SizeSmall:  {1, "500m", "512Mi"},
	v1alpha1.SizeMedium: {2, "1", "1Gi"},
	v1alpha1.SizeLarge:  {3, "2", "2Gi"},
}

func presetOf(db *v1alpha1.Database) preset {
	if p, ok := presets[db.Spec.Size]; ok {
		return p
	}
	return presets[v1alpha1.SizeSmall]
}

// Replicas is the number of instances the Database asks for.
func Replicas(db *v1alpha1.Database) int32 {
	if db.Spec.Replicas != nil {
		return *db.Spec.Replicas
	}
	return presetOf(db).replicas
}

// Resources are each instance's requests and limits: spec.resources, or
// the size preset's CPU and memory as both requests and limits (the
// Guaranteed QoS class, so the engine's memory tuning holds).
func Resources(db *v1alpha1.Database) corev1.ResourceRequirements {
	if db.Spec.Resources != nil {
		return *db.Spec.Resources.DeepCopy()
	}
	p := presetOf(db)
	list := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(p.cpu),
		corev1.ResourceMemory: resource.MustParse(p.memory),
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// Tuning is the input of the engine's configuration rendering.
func Tuning(db *v1alpha1.Database) engine.Tuning {
	res := Resources(db)
	t := engine.Tuning{Version: db.Spec.Version, Port: int(planFor(db.Spec.Engine).port), Parameters: db.Spec.Parameters,
		SynchronousReplicas: int(db.SynchronousReplicas())}
	for _, list := range []corev1.ResourceList{res.Limits, res.Requests} {
		if m, ok := list[corev1.ResourceMemory]; ok && t.MemoryBytes == 0 {
			t.MemoryBytes = m.Value()
		}
		if c, ok := list[corev1.ResourceCPU]; ok && t.MilliCPU == 0 {
			t.MilliCPU = c.MilliValue()
		}
	}
	return t
}

// Major is the part of a version whose change needs a dump and restore:
// the first number for PostgreSQL ("16" of "16.4"), the first two for
// MySQL and MariaDB ("8.4" of "8.4.3").
func Major(e v1alpha1.DatabaseEngine, version string) string {
	parts := strings.Split(version, ".")
	n := 1
	if e != v1alpha1.EnginePostgres {
		n = 2
	}
	if len(parts) < n {
		return version
	}
	return strings.Join(parts[:n], ".")
}

// SelectorLabels select a Database's pods; they never change.
func SelectorLabels(db *v1alpha1.Database) map[string]string {
	return map[string]string{v1alpha1.LabelDatabase: db.Name}
}

// Labels are put on every child of a Database.
func Labels(db *v1alpha1.Database) map[string]string {
	l := labels.Common(db.Name, "database")
	l[v1alpha1.LabelDatabase] = db.Name
	return l
}

// ownerReference makes the Database the controller of a child it applies.
func ownerReference(db *v1alpha1.Database) *metav1ac.OwnerReferenceApplyConfiguration {
	return apply.ControllerReference(v1alpha1.GroupVersion.WithKind("Database"), db)
}

// Endpoint is host:port of the read-write Service.
func Endpoint(db *v1alpha1.Database) string {
	return net.JoinHostPort(db.Host(), strconv.Itoa(int(planFor(db.Spec.Engine).port)))
}

// ReadEndpoint is host:port of the read-only Service, or "" with a single
// instance.
func ReadEndpoint(db *v1alpha1.Database) string {
	if Replicas(db) < 2 {
		return ""
	}
	host := fmt.Sprintf("%s.%s.svc", db.ReadOnlyServiceName(), db.Namespace)
	return net.JoinHostPort(host, strconv.Itoa(int(planFor(db.Spec.Engine).port)))
}

// ConfigMap holds the engine configuration rendered for the Database.
func ConfigMap(db *v1alpha1.Database, files map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(db.ConfigMapName(), db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithData(files)
}

// CredentialsData are the keys of the owner's credentials Secret.
func CredentialsData(db *v1alpha1.Database, username, password string) map[string][]byte {
	plan := planFor(db.Spec.Engine)
	uri := url.URL{
		Scheme: plan.scheme,
		User:   url.UserPassword(username, password),
		Host:   Endpoint(db),
		Path:   "/" + db.Spec.DatabaseName,
	}
	return map[string][]byte{
		"username": []byte(username),
		"password": []byte(password),
		"host":     []byte(db.Host()),
		"port":     []byte(strconv.Itoa(int(plan.port))),
		"database": []byte(db.Spec.DatabaseName),
		"uri":      []byte(uri.String()),
	}
}

// SuperuserData are the keys of the superuser Secret, which also holds the
// replication user's credentials.
func SuperuserData(db *v1alpha1.Database, password, replicationPassword string) map[string][]byte {
	return map[string][]byte{
		"username":             []byte(planFor(db.Spec.Engine).superuser),
		"password":             []byte(password),
		"replication-username": []byte(replicationUser),
		"replication-password": []byte(replicationPassword),
	}
}

// Secret is a credentials Secret with the given data.
func Secret(db *v1alpha1.Database, name string, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// Services are the headless Service for pod DNS, the read-write Service
// that selects the primary and the read-only Service that selects replicas.
func Services(db *v1alpha1.Database) []*corev1ac.ServiceApplyConfiguration {
	plan := planFor(db.Spec.Engine)
	port := func() *corev1ac.ServicePortApplyConfiguration {
		return corev1ac.ServicePort().WithName(plan.container).WithPort(plan.port).
			WithTargetPort(intstr.FromString(plan.container)).WithProtocol(corev1.ProtocolTCP)
	}
	svc := func(name string, role string) *corev1ac.ServiceApplyConfiguration {
		sel := SelectorLabels(db)
		if role != "" {
			sel[v1alpha1.LabelRole] = role
		}
		return corev1ac.Service(name, db.Namespace).
			WithLabels(Labels(db)).
			WithOwnerReferences(ownerReference(db)).
			WithSpec(corev1ac.ServiceSpec().WithSelector(sel).WithPorts(port()))
	}
	headless := svc(db.HeadlessServiceName(), "")
	// Replicas resolve the primary by its pod name before it is ready.
	headless.Spec.WithClusterIP(corev1.ClusterIPNone).WithPublishNotReadyAddresses(true)
	return []*corev1ac.ServiceApplyConfiguration{
		headless,
		svc(db.Name, string(engine.RolePrimary)),
		svc(db.ReadOnlyServiceName(), string(engine.RoleReplica)),
	}
}

// RestartHash covers the settings that take effect only after a restart,
// so that changing one of them rolls the pods while a reloadable change
// does not.
func RestartHash(db *v1alpha1.Database, eng engine.Engine) string {
	keys := make([]string, 0, len(db.Spec.Parameters))
	for k := range db.Spec.Parameters {
		if eng.NeedsRestart(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, db.Spec.Parameters[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// StatefulSet runs the instances. claimSize is the size of its volume claim
// template: the spec's size at creation, and then the size the StatefulSet
// was created with, as the template cannot change (volumes grow by
// patching each claim).
func StatefulSet(db *v1alpha1.Database, eng engine.Engine, instanceImage string, claimSize resource.Quantity) *appsv1ac.StatefulSetApplyConfiguration {
	plan := planFor(db.Spec.Engine)
	retainScaled := appsv1RetentionPolicy(db.Spec.DeletionPolicy)
	// Name only: no kind, apiVersion or namespace, which the API server
	// does not keep in a claim template. Were they applied, the live
	// StatefulSet would never contain the desired one, and every reconcile
	// would apply it again.
	claim := (&corev1ac.PersistentVolumeClaimApplyConfiguration{}).
		WithName(dataVolume).
		WithLabels(Labels(db)).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: claimSize})))
	if db.Spec.Storage.StorageClassName != nil {
		claim.Spec.WithStorageClassName(*db.Spec.Storage.StorageClassName)
	}
	spec := appsv1ac.StatefulSetSpec().
		WithReplicas(Replicas(db)).
		WithServiceName(db.HeadlessServiceName()).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(db))).
		// One at a time, each ready before the next: a replica clones from
		// a running primary. A rolling update goes from the highest
		// ordinal down, so replicas update before the primary; where the
		// primary can move, Steward rolls the pods itself (see restart.go).
		WithPodManagementPolicy(appsv1.OrderedReadyPodManagement).
		WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(updateStrategy(db))).
		WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
			WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).WithWhenScaled(retainScaled)).
		WithVolumeClaimTemplates(claim).
		WithTemplate(podTemplate(db, eng, instanceImage, plan))
	return appsv1ac.StatefulSet(db.Name, db.Namespace).
		WithLabels(Labels(db)).
		WithAnnotations(map[string]string{v1alpha1.AnnotationVersion: db.Spec.Version}).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(spec)
}

// appsv1RetentionPolicy: scaled-down replicas' volumes follow the
// deletion policy. Deleting the Database itself is the finalizer's job, so
// that Retain can keep the primary's volume too.
func appsv1RetentionPolicy(p v1alpha1.DeletionPolicy) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p == v1alpha1.DeletionDelete {
		return appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

func podTemplate(db *v1alpha1.Database, eng engine.Engine, instanceImage string, plan enginePlan) *corev1ac.PodTemplateSpecApplyConfiguration {
	secretEnv := func(name, secret, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
	}
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		value(instance.EnvEngine, string(db.Spec.Engine)),
		value(instance.EnvDataDir, plan.dataDir),
		value(instance.EnvConfigDir, configMount),
		value(instance.EnvRunDir, runMount),
		value(instance.EnvPort, strconv.Itoa(int(plan.port))),
		value(instance.EnvStatusAddr, fmt.Sprintf(":%d", statusPort)),
		corev1ac.EnvVar().WithName(instance.EnvPodName).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
		value(instance.EnvPrimaryPort, strconv.Itoa(int(plan.port))),
		value(instance.EnvDatabase, db.Spec.DatabaseName),
		secretEnv(instance.EnvSuperuserUsername, db.SuperuserName(), "username"),
		secretEnv(instance.EnvSuperuserPassword, db.SuperuserName(), "password"),
		secretEnv(instance.EnvOwnerUsername, db.CredentialsName(), "username"),
		secretEnv(instance.EnvOwnerPassword, db.CredentialsName(), "password"),
		secretEnv(instance.EnvReplicationUsername, db.SuperuserName(), "replication-username"),
		secretEnv(instance.EnvReplicationPassword, db.SuperuserName(), "replication-password"),
	}
	noEscalation := corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	status := intstr.FromInt32(statusPort)
	probe := func(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(status)).
			WithPeriodSeconds(period).WithTimeoutSeconds(5).WithFailureThreshold(failures)
	}
	main := corev1ac.Container().
		WithName(plan.container).
		WithImage(engine.ImageFor(db, eng)).
		WithCommand(instance.BinaryPath, "instance").
		WithEnv(env...).
		WithPorts(
			corev1ac.ContainerPort().WithName(plan.container).WithContainerPort(plan.port).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("status").WithContainerPort(statusPort).WithProtocol(corev1.ProtocolTCP),
		).
		WithResources(resourcesAC(Resources(db))).
		// A replica's first start clones the primary, which may take hours
		// for a large database: the startup probe allows a day.
		WithStartupProbe(probe("/healthz", 10, 8640)).
		WithLivenessProbe(probe("/healthz", 10, 6)).
		WithReadinessProbe(probe("/readyz", 5, 3)).
		// A server that refuses a setting at start (PostgreSQL's "FATAL:
		// invalid value for parameter") says so in its log, not in a
		// termination message file: the log's last lines become the
		// termination message, which the Degraded condition shows.
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(noEscalation).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(dataVolume).WithMountPath(plan.mount),
			corev1ac.VolumeMount().WithName("config").WithMountPath(configMount).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(binVolume).WithMountPath(instance.BinaryDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(runVolume).WithMountPath(runMount),
		)
	copyBinary := instance.CopyBinaryContainer(instanceImage, binVolume, noEscalation)
	pod := corev1ac.PodSpec().
		WithInitContainers(copyBinary).
		WithContainers(main).
		WithTerminationGracePeriodSeconds(60).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(engineUID).
			WithRunAsGroup(engineUID).
			WithFSGroup(engineUID).
			WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			// Preferred, not required: a one-node cluster still runs
			// every instance.
			WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
				WithWeight(100).
				WithPodAffinityTerm(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(db))))))).
		WithVolumes(
			corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(db.ConfigMapName())),
			corev1ac.Volume().WithName(binVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName(runVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		)
	return corev1ac.PodTemplateSpec().
		WithLabels(Labels(db)).
		WithAnnotations(map[string]string{v1alpha1.AnnotationRestartHash: RestartHash(db, eng)}).
		WithSpec(pod)
}

func resourcesAC(r corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	ac := corev1ac.ResourceRequirements()
	if len(r.Requests) > 0 {
		ac.WithRequests(r.Requests)
	}
	if len(r.Limits) > 0 {
		ac.WithLimits(r.Limits)
	}
	return ac
}

// PodDisruptionBudget lets voluntary disruptions take one instance at a
// time. A single instance gets none: it would block node drains forever.
func PodDisruptionBudget(db *v1alpha1.Database) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	if Replicas(db) < 2 {
		return nil
	}
	return policyv1ac.PodDisruptionBudget(db.Name, db.Namespace).
		WithLabels(Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(db))))
}
