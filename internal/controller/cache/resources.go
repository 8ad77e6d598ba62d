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

package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/labels"
)

const (
	// containerName is the name of the cache's one container.
	containerName = "cache"
	// portName names the container port and the Service ports.
	portName = "cache"
	// MemcachedConnections is memcached's -c, its connection limit.
	MemcachedConnections = 1024
	// defaultReplicas is used when spec.replicas is unset.
	defaultReplicas = 1
	// memcachedUID is the memcache user of the official memcached image.
	memcachedUID = 11211
	// redisUID is the redis user of the official redis image.
	redisUID = 999
	// redisConfigDir is where the rendered redis.conf is mounted.
	redisConfigDir = "/etc/redis"
	// redisConfigFile is the name of redis.conf in the ConfigMap.
	redisConfigFile = "redis.conf"
	// dataDir is redis' working directory, where it keeps the append-only
	// file and the snapshot a replica loads from its primary. redis.conf
	// leaves dir at its default, the working directory.
	dataDir = "/data"
	// redisAuthDir is where the rendered redis-auth.conf is mounted, apart
	// from redisConfigDir: a mount inside a read-only ConfigMap volume could
	// not be created.
	redisAuthDir = "/etc/redis-auth"
	// redisAuthFile is the name of the rendered password settings, a key of
	// the credentials Secret and a file in redisAuthDir.
	redisAuthFile = "redis-auth.conf"
)

// Memory shares of spec.memory given to the engine; the rest is headroom for
// connection buffers, the allocator and, for redis, replication buffers.
const (
	memcachedMemoryPercent = 90
	redisMemoryPercent     = 75
)

// defaultMemory is used when spec.memory is unset.
var defaultMemory = resource.MustParse("64Mi")

// RedisStartScript starts redis-server with the rendered redis.conf. On every
// node but ordinal 0 of the StatefulSet it adds --replicaof, so nodes 1..n
// replicate node 0. Arguments given to the script are passed on to
// redis-server before --replicaof.
const RedisStartScript = `set -e
ordinal="${HOSTNAME##*-}"
if [ "$ordinal" != "0" ]; then
  set -- "$@" --replicaof "$REDIS_PRIMARY_HOST" "$REDIS_PRIMARY_PORT"
fi
exec redis-server "$REDIS_CONFIG" "$@"
`

// Version is spec.version, or the newest version the engine supports.
func Version(c *v1alpha1.Cache) string {
	if c.Spec.Version != "" {
		return c.Spec.Version
	}
	versions := v1alpha1.CacheVersions[c.EffectiveEngine()]
	return versions[len(versions)-1]
}

// Image is spec.image, or the official image of the engine's version.
func Image(c *v1alpha1.Cache) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	return string(c.EffectiveEngine()) + ":" + Version(c)
}

// DesiredReplicas is spec.replicas, 1 when unset.
func DesiredReplicas(c *v1alpha1.Cache) int32 {
	if c.Spec.Replicas != nil {
		return *c.Spec.Replicas
	}
	return defaultReplicas
}

// Memory is spec.memory, 64Mi when unset.
func Memory(c *v1alpha1.Cache) resource.Quantity {
	if c.Spec.Memory != nil {
		return *c.Spec.Memory
	}
	return defaultMemory
}

// MemcachedMegabytes is memcached's -m: 90% of Memory in MiB, at least 1.
func MemcachedMegabytes(c *v1alpha1.Cache) int64 {
	m := Memory(c)
	return max(percent(m.Value(), memcachedMemoryPercent)/(1<<20), 1)
}

// MemcachedArgs are memcached's arguments.
func MemcachedArgs(c *v1alpha1.Cache) []string {
	return []string{
		"-m", strconv.FormatInt(MemcachedMegabytes(c), 10),
		"-c", strconv.Itoa(MemcachedConnections),
		"-p", strconv.Itoa(v1alpha1.MemcachedPort),
	}
}

// redisMinHeadroom is the least memory left to redis beyond maxmemory, up
// to half of Memory: what redis needs beside its data does not shrink with
// a small Memory. A persistent Cache of 32Mi whose 24 MiB of data left 8 MiB
// was killed for its memory under a burst of writes on real nodes (its
// append-only file's pages count against the container); with 16 MiB it
// was not.
const redisMinHeadroom = 16 << 20

// RedisMaxMemory is redis' maxmemory in bytes: 75% of Memory, leaving at
// least redisMinHeadroom, or half of a Memory under twice that.
func RedisMaxMemory(c *v1alpha1.Cache) int64 {
	q := Memory(c)
	m := q.Value()
	headroom := max(m-percent(m, redisMemoryPercent), min(redisMinHeadroom, m/2))
	return m - headroom
}

// Redis' replication timeouts, in seconds. repl-timeout bounds every wait
// of a replica on its primary: for an answer while it connects, for the
// next byte of a transfer, for a ping once streaming; and its primary's
// wait for the replica's acknowledgements. Redis' default, 60 s, is what a
// replica waited on real nodes before it replicated again from a restarted
// primary: its connection went to the old pod's address, which answers
// nothing. A replica loading a transfer answers nothing either, for as long
// as the load takes, so the timeout grows with the data: the floor, and
// redisReplTimeoutPerGiB for each GiB of Memory, up to redis' default.
const (
	redisReplTimeoutFloor  = 15
	redisReplTimeoutPerGiB = 15
	redisReplTimeoutMax    = 60
	// redisReplPingPeriod is repl-ping-replica-period: a primary pings its
	// replicas this often, three times within the floor of repl-timeout.
	redisReplPingPeriod = 5
)

// RedisReplTimeout is redis' repl-timeout in seconds: 15 s, and 15 s more
// for each whole GiB of Memory, at most 60 s.
func RedisReplTimeout(c *v1alpha1.Cache) int64 {
	m := Memory(c)
	return min(redisReplTimeoutFloor+redisReplTimeoutPerGiB*(m.Value()>>30), redisReplTimeoutMax)
}

// percent is p% of n bytes, rounded down, without the overflow of n*p
// beyond 92 PiB.
func percent(n, p int64) int64 {
	return n/100*p + n%100*p/100
}

// persistent reports whether redis keeps its data on a volume.
func persistent(c *v1alpha1.Cache) bool {
	r := c.Spec.Redis
	return r != nil && r.Persistence != nil && r.Persistence.Enabled
}

// RedisMaxMemoryPolicy is spec.redis.maxMemoryPolicy, or its default:
// allkeys-lru, or noeviction with persistence.
func RedisMaxMemoryPolicy(c *v1alpha1.Cache) v1alpha1.MaxMemoryPolicy {
	if r := c.Spec.Redis; r != nil && r.MaxMemoryPolicy != "" {
		return r.MaxMemoryPolicy
	}
	if persistent(c) {
		return "noeviction"
	}
	return "allkeys-lru"
}

// RedisConfig renders redis.conf.
func RedisConfig(c *v1alpha1.Cache) string {
	appendonly := "no"
	if persistent(c) {
		appendonly = "yes"
	}
	lines := []string{
		fmt.Sprintf("# Rendered by Steward from Cache %s/%s; edits are overwritten.", c.Namespace, c.Name),
		"bind * -::*",
		"protected-mode no",
		fmt.Sprintf("port %d", v1alpha1.RedisPort),
		fmt.Sprintf("maxmemory %d", RedisMaxMemory(c)),
		"maxmemory-policy " + string(RedisMaxMemoryPolicy(c)),
		`save ""`,
		"appendonly " + appendonly,
		"appendfsync everysec",
		"replica-read-only yes",
		"replica-serve-stale-data yes",
		fmt.Sprintf("repl-ping-replica-period %d", redisReplPingPeriod),
		fmt.Sprintf("repl-timeout %d", RedisReplTimeout(c)),
	}
	if c.RedisAuthEnabled() {
		// requirepass and masterauth, from the credentials Secret: the
		// password never is in a ConfigMap.
		lines = append(lines, "include "+redisAuthDir+"/"+redisAuthFile)
	}
	return strings.Join(lines, "\n") + "\n"
}

// RedisAuthConfig renders the password settings redis.conf includes:
// clients must authenticate (requirepass), and replicas authenticate to
// their primary (masterauth), with the same password.
func RedisAuthConfig(password string) string {
	q := redisQuote(password)
	return "# Rendered by Steward from the key password of this Secret; edits are overwritten.\n" +
		"requirepass " + q + "\nmasterauth " + q + "\n"
}

// redisQuote quotes s as a double-quoted argument of redis.conf: a quote
// and a backslash are escaped with a backslash, and every byte that is not
// printable ASCII is written as \xHH, which redis reads back byte for
// byte. Any password survives, spaces, quotes and UTF-8 included.
func redisQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CredentialsData is the content of a redis Cache's credentials Secret:
// the password, the primary's address, a redis:// uri and the rendered
// settings the nodes include.
func CredentialsData(c *v1alpha1.Cache, password string) map[string][]byte {
	host, port, _ := net.SplitHostPort(c.Endpoint())
	uri := url.URL{Scheme: "redis", User: url.UserPassword("default", password), Host: net.JoinHostPort(host, port)}
	return map[string][]byte{
		"password":    []byte(password),
		"host":        []byte(host),
		"port":        []byte(port),
		"uri":         []byte(uri.String()),
		redisAuthFile: []byte(RedisAuthConfig(password)),
	}
}

// CredentialsSecret is the credentials Secret of a redis Cache.
func CredentialsSecret(c *v1alpha1.Cache, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(c.CredentialsName(), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// SelectorLabels select a Cache's pods. They never change for the life of
// the Cache, as a workload's selector is immutable.
func SelectorLabels(c *v1alpha1.Cache) map[string]string {
	return map[string]string{labels.Cache: c.Name}
}

// Labels are put on every child of a Cache and on its pods.
func Labels(c *v1alpha1.Cache) map[string]string {
	l := labels.Common(c.Name, "cache")
	for k, v := range SelectorLabels(c) {
		l[k] = v
	}
	return l
}

// ownerReference makes the Cache the controller of a child it applies.
func ownerReference(c *v1alpha1.Cache) *metav1ac.OwnerReferenceApplyConfiguration {
	return apply.ControllerReference(v1alpha1.GroupVersion.WithKind("Cache"), c)
}

// MemcachedDeployment runs the memcached nodes.
func MemcachedDeployment(c *v1alpha1.Cache) *appsv1ac.DeploymentApplyConfiguration {
	container := baseContainer(c, v1alpha1.MemcachedPort).
		WithCommand("memcached").
		WithArgs(MemcachedArgs(c)...).
		WithReadinessProbe(tcpProbe(5)).
		WithLivenessProbe(tcpProbe(10))
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithSecurityContext(podSecurityContext(memcachedUID))
	return appsv1ac.Deployment(c.Name, c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(DesiredReplicas(c)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c))).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(Labels(c)).WithSpec(pod)))
}

// MemcachedService is a headless Service: its DNS name resolves to every
// node, which is how memcached clients find the nodes to shard keys across.
func MemcachedService(c *v1alpha1.Cache) *corev1ac.ServiceApplyConfiguration {
	return service(c, c.Name, SelectorLabels(c), v1alpha1.MemcachedPort, true)
}

// RedisConfigMap holds the rendered redis.conf.
func RedisConfigMap(c *v1alpha1.Cache) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(c.Name, c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithData(map[string]string{redisConfigFile: RedisConfig(c)})
}

// RedisHeadlessService gives each redis node a DNS name,
// <pod>.<name>-headless.<namespace>.svc, also before it is ready, so
// replicas can reach a starting primary.
func RedisHeadlessService(c *v1alpha1.Cache) *corev1ac.ServiceApplyConfiguration {
	return service(c, c.HeadlessServiceName(), SelectorLabels(c), v1alpha1.RedisPort, true)
}

// RedisService is the clients' Service: it selects the primary, ordinal 0.
func RedisService(c *v1alpha1.Cache) *corev1ac.ServiceApplyConfiguration {
	sel := SelectorLabels(c)
	sel["statefulset.kubernetes.io/pod-name"] = c.PrimaryPod()
	return service(c, c.Name, sel, v1alpha1.RedisPort, false)
}

// RedisReadOnlyService selects every redis node, primary and replicas, for reads.
func RedisReadOnlyService(c *v1alpha1.Cache) *corev1ac.ServiceApplyConfiguration {
	return service(c, c.ReadOnlyServiceName(), SelectorLabels(c), v1alpha1.RedisPort, false)
}

func service(c *v1alpha1.Cache, name string, selector map[string]string, port int32, headless bool) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().
		WithType(corev1.ServiceTypeClusterIP).
		WithSelector(selector).
		WithPorts(corev1ac.ServicePort().
			WithName(portName).
			WithProtocol(corev1.ProtocolTCP).
			WithPort(port).
			WithTargetPort(intstr.FromString(portName)))
	if headless {
		spec.WithClusterIP(corev1.ClusterIPNone).WithPublishNotReadyAddresses(true)
	}
	return corev1ac.Service(name, c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec)
}

// RedisStatefulSet runs the redis nodes: ordinal 0 is the primary, the others
// replicate it. With persistence each node has a volume claim.
func RedisStatefulSet(c *v1alpha1.Cache) *appsv1ac.StatefulSetApplyConfiguration {
	container := baseContainer(c, v1alpha1.RedisPort).
		WithCommand("sh", "-c", RedisStartScript, "redis-server").
		WithWorkingDir(dataDir).
		WithEnv(
			corev1ac.EnvVar().WithName("REDIS_CONFIG").WithValue(redisConfigDir+"/"+redisConfigFile),
			corev1ac.EnvVar().WithName("REDIS_PRIMARY_HOST").WithValue(c.RedisPrimaryHost()),
			corev1ac.EnvVar().WithName("REDIS_PRIMARY_PORT").WithValue(strconv.Itoa(v1alpha1.RedisPort)),
		).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(redisConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("data").WithMountPath(dataDir),
		).
		// redis-cli reads REDISCLI_AUTH: the probe, and anyone who runs
		// it in the container, authenticates.
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand("redis-cli", "-p", strconv.Itoa(v1alpha1.RedisPort), "ping")).
			WithPeriodSeconds(5).WithTimeoutSeconds(2).WithFailureThreshold(3)).
		WithLivenessProbe(tcpProbe(10))
	if c.RedisAuthEnabled() {
		container.
			WithEnv(corev1ac.EnvVar().WithName("REDISCLI_AUTH").WithValueFrom(corev1ac.EnvVarSource().
				WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(c.CredentialsName()).WithKey("password")))).
			WithVolumeMounts(corev1ac.VolumeMount().WithName("auth").WithMountPath(redisAuthDir).WithReadOnly(true))
	}
	// WithContainers copies the container: it is complete by now.
	pod := corev1ac.PodSpec().
		WithContainers(container).
		WithSecurityContext(podSecurityContext(redisUID).WithFSGroup(redisUID)).
		WithVolumes(corev1ac.Volume().WithName("config").
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(c.Name)))
	if c.RedisAuthEnabled() {
		// Readable by the redis group only: fsGroup makes it the file's group.
		pod.WithVolumes(corev1ac.Volume().WithName("auth").
			WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(c.CredentialsName()).
				WithItems(corev1ac.KeyToPath().WithKey(redisAuthFile).WithPath(redisAuthFile)).
				WithDefaultMode(0o440)))
	}
	spec := appsv1ac.StatefulSetSpec().
		WithReplicas(DesiredReplicas(c)).
		WithServiceName(c.HeadlessServiceName()).
		WithPodManagementPolicy("Parallel").
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c)))
	if persistent(c) {
		p := c.Spec.Redis.Persistence
		size := resource.MustParse("1Gi")
		if p.Size != nil {
			size = *p.Size
		}
		pvc := corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: size}))
		if p.StorageClassName != nil {
			pvc.WithStorageClassName(*p.StorageClassName)
		}
		spec.WithVolumeClaimTemplates(corev1ac.PersistentVolumeClaim("data", "").
			WithLabels(Labels(c)).
			WithSpec(pvc))
	} else {
		pod.WithVolumes(corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	return appsv1ac.StatefulSet(c.Name, c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec.WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(c)).
			WithAnnotations(map[string]string{v1alpha1.AnnotationConfigHash: configHash(RedisConfig(c))}).
			WithSpec(pod)))
}

// PodDisruptionBudget keeps all but one node up during voluntary disruptions
// such as node drains. It is nil for a single node, where a budget would
// block drains forever.
func PodDisruptionBudget(c *v1alpha1.Cache) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	if DesiredReplicas(c) <= 1 {
		return nil
	}
	return policyv1ac.PodDisruptionBudget(c.Name, c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c))))
}

// baseContainer is what both engines' containers share: image, port,
// resources and the restricted security context.
func baseContainer(c *v1alpha1.Cache, port int32) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(containerName).
		WithImage(Image(c)).
		WithPorts(corev1ac.ContainerPort().WithName(portName).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		WithResources(resources(c)).
		// A server that refuses its configuration at start says why in
		// its log; its last lines become the termination message, which
		// the Cache's Degraded condition shows.
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
}

// resources are requests of 50m CPU and Memory and a limit of Memory, with
// spec.resources laid over them key by key.
func resources(c *v1alpha1.Cache) *corev1ac.ResourceRequirementsApplyConfiguration {
	mem := Memory(c)
	rr := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
	}
	if o := c.Spec.Resources; o != nil {
		for k, v := range o.Requests {
			rr.Requests[k] = v
		}
		for k, v := range o.Limits {
			rr.Limits[k] = v
		}
		rr.Claims = o.Claims
	}
	return apply.Convert[corev1ac.ResourceRequirementsApplyConfiguration](&rr)
}

// podSecurityContext runs as the image's own non-root user under the
// RuntimeDefault seccomp profile, which the restricted Pod Security
// Standard asks for.
func podSecurityContext(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(uid).
		WithRunAsGroup(uid).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

func tcpProbe(period int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(portName))).
		WithPeriodSeconds(period).
		WithFailureThreshold(3)
}

func configHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
