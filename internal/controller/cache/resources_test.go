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
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/labels"
)

func newCache(engine v1alpha1.CacheEngine, mutate ...func(*v1alpha1.Cache)) *v1alpha1.Cache {
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: "prod", UID: "uid-1", Generation: 1},
		Spec:       v1alpha1.CacheSpec{Engine: engine},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func withMemory(q string) func(*v1alpha1.Cache) {
	return func(c *v1alpha1.Cache) { c.Spec.Memory = new(resource.MustParse(q)) }
}

func withReplicas(n int32) func(*v1alpha1.Cache) {
	return func(c *v1alpha1.Cache) { c.Spec.Replicas = new(n) }
}

func withPersistence(c *v1alpha1.Cache) {
	c.Spec.Redis = &v1alpha1.RedisSettings{Persistence: &v1alpha1.RedisPersistence{Enabled: true}}
}

func TestEngineSettings(t *testing.T) {
	tests := []struct {
		name      string
		cache     *v1alpha1.Cache
		image     string
		megabytes int64
		maxmemory int64
		policy    v1alpha1.MaxMemoryPolicy
	}{
		{"memcached defaults", newCache(""), "memcached:1.6", 57, 50331648, "allkeys-lru"},
		{"memcached 256Mi", newCache(v1alpha1.EngineMemcached, withMemory("256Mi")), "memcached:1.6", 230, 201326592, "allkeys-lru"},
		{"memcached 1Gi", newCache(v1alpha1.EngineMemcached, withMemory("1Gi")), "memcached:1.6", 921, 805306368, "allkeys-lru"},
		// redis keeps at least 16 MiB of headroom, or half of a smaller
		// memory: RedisMaxMemory does not depend on the engine.
		{"memcached 16Mi", newCache(v1alpha1.EngineMemcached, withMemory("16Mi")), "memcached:1.6", 14, 8388608, "allkeys-lru"},
		{"redis 32Mi", newCache(v1alpha1.EngineRedis, withMemory("32Mi")), "redis:7.4", 28, 16777216, "allkeys-lru"},
		{"redis 48Mi", newCache(v1alpha1.EngineRedis, withMemory("48Mi")), "redis:7.4", 43, 33554432, "allkeys-lru"},
		{"redis defaults", newCache(v1alpha1.EngineRedis), "redis:7.4", 57, 50331648, "allkeys-lru"},
		{"redis 7.2", newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) { c.Spec.Version = "7.2" }), "redis:7.2", 57, 50331648, "allkeys-lru"},
		{"redis image override", newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) { c.Spec.Image = "mirror.example/redis:7.4.1" }), "mirror.example/redis:7.4.1", 57, 50331648, "allkeys-lru"},
		{"redis persistent", newCache(v1alpha1.EngineRedis, withPersistence, withMemory("1G")), "redis:7.4", 858, 750000000, "noeviction"},
		{"redis policy override", newCache(v1alpha1.EngineRedis, withPersistence, func(c *v1alpha1.Cache) {
			c.Spec.Redis.MaxMemoryPolicy = "volatile-lru"
		}), "redis:7.4", 57, 50331648, "volatile-lru"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Image(tt.cache); got != tt.image {
				t.Errorf("Image = %q, want %q", got, tt.image)
			}
			if got := MemcachedMegabytes(tt.cache); got != tt.megabytes {
				t.Errorf("MemcachedMegabytes = %d, want %d", got, tt.megabytes)
			}
			if got := RedisMaxMemory(tt.cache); got != tt.maxmemory {
				t.Errorf("RedisMaxMemory = %d, want %d", got, tt.maxmemory)
			}
			if got := RedisMaxMemoryPolicy(tt.cache); got != tt.policy {
				t.Errorf("RedisMaxMemoryPolicy = %q, want %q", got, tt.policy)
			}
		})
	}
}

func TestRedisConfig(t *testing.T) {
	plain := RedisConfig(newCache(v1alpha1.EngineRedis, withMemory("256Mi")))
	for _, line := range []string{"maxmemory 201326592", "maxmemory-policy allkeys-lru", "appendonly no", `save ""`, "port 6379",
		"repl-ping-replica-period 5", "repl-timeout 15"} {
		if !strings.Contains(plain, "\n"+line+"\n") {
			t.Errorf("redis.conf lacks %q:\n%s", line, plain)
		}
	}
	persistent := RedisConfig(newCache(v1alpha1.EngineRedis, withPersistence))
	if !strings.Contains(persistent, "\nappendonly yes\n") || !strings.Contains(persistent, "\nmaxmemory-policy noeviction\n") {
		t.Errorf("persistent redis.conf:\n%s", persistent)
	}
}

func TestRedisReplTimeout(t *testing.T) {
	for _, c := range []struct {
		memory string
		want   int64
	}{
		{"32Mi", 15}, {"1023Mi", 15}, {"1Gi", 30}, {"2560Mi", 45}, {"3Gi", 60}, {"64Gi", 60},
	} {
		if got := RedisReplTimeout(newCache(v1alpha1.EngineRedis, withMemory(c.memory))); got != c.want {
			t.Errorf("memory %s: repl-timeout %d, want %d", c.memory, got, c.want)
		}
	}
}

func TestMemcachedDeployment(t *testing.T) {
	c := newCache(v1alpha1.EngineMemcached, withReplicas(3), withMemory("128Mi"))
	d := MemcachedDeployment(c)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d", *d.Spec.Replicas)
	}
	tmpl := d.Spec.Template
	for k, v := range labels.Common("sessions", "cache") {
		if tmpl.Labels[k] != v || d.Labels[k] != v {
			t.Errorf("label %s missing on Deployment or pods", k)
		}
	}
	if got := d.Spec.Selector.MatchLabels[labels.Cache]; got != "sessions" {
		t.Errorf("selector = %v", d.Spec.Selector.MatchLabels)
	}
	ctr := tmpl.Spec.Containers[0]
	if got := strings.Join(ctr.Args, " "); got != "-m 115 -c 1024 -p 11211" {
		t.Errorf("args = %q", got)
	}
	if *ctr.Image != "memcached:1.6" || ctr.Command[0] != "memcached" {
		t.Errorf("image %q, command %v", *ctr.Image, ctr.Command)
	}
	if lim := (*ctr.Resources.Limits)[corev1.ResourceMemory]; lim.String() != "128Mi" {
		t.Errorf("memory limit = %s", lim.String())
	}
	checkRestricted(t, tmpl.Spec.SecurityContext, ctr.SecurityContext, memcachedUID)
	if ctr.ReadinessProbe == nil || ctr.ReadinessProbe.TCPSocket == nil {
		t.Errorf("no tcp readiness probe")
	}

	svc := MemcachedService(c)
	if *svc.Spec.ClusterIP != corev1.ClusterIPNone || *svc.Spec.Ports[0].Port != 11211 {
		t.Errorf("service = %+v", svc.Spec)
	}
}

func TestResourcesOverride(t *testing.T) {
	c := newCache(v1alpha1.EngineMemcached, withMemory("128Mi"), func(c *v1alpha1.Cache) {
		c.Spec.Resources = &corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
		}
	})
	r := resources(c)
	lim, req := *r.Limits, *r.Requests
	if q := lim[corev1.ResourceCPU]; q.String() != "1" {
		t.Errorf("cpu limit = %s", q.String())
	}
	if q := lim[corev1.ResourceMemory]; q.String() != "128Mi" {
		t.Errorf("memory limit = %s, want the default kept", q.String())
	}
	if q := req[corev1.ResourceCPU]; q.String() != "200m" {
		t.Errorf("cpu request = %s", q.String())
	}
}

func TestRedisChildren(t *testing.T) {
	c := newCache(v1alpha1.EngineRedis, withReplicas(3))
	sts := RedisStatefulSet(c)
	if *sts.Spec.ServiceName != "sessions-headless" || *sts.Spec.Replicas != 3 {
		t.Errorf("serviceName %q replicas %d", *sts.Spec.ServiceName, *sts.Spec.Replicas)
	}
	ctr := sts.Spec.Template.Spec.Containers[0]
	if ctr.Command[2] != RedisStartScript {
		t.Errorf("command = %v", ctr.Command)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		if e.Value != nil {
			env[*e.Name] = *e.Value
		} else {
			ref := e.ValueFrom.SecretKeyRef
			env[*e.Name] = "secret " + *ref.Name + " " + *ref.Key
		}
	}
	if env["REDISCLI_AUTH"] != "secret sessions-credentials password" {
		t.Errorf("REDISCLI_AUTH = %q, want the credentials Secret's password", env["REDISCLI_AUTH"])
	}
	if env["REDIS_PRIMARY_HOST"] != "sessions-0.sessions-headless.prod.svc" || env["REDIS_PRIMARY_PORT"] != "6379" || env["REDIS_CONFIG"] != "/etc/redis/redis.conf" {
		t.Errorf("env = %v", env)
	}
	if *ctr.WorkingDir != "/data" {
		t.Errorf("workingDir = %q, want the data volume", *ctr.WorkingDir)
	}
	if ctr.ReadinessProbe == nil || ctr.ReadinessProbe.Exec == nil {
		t.Errorf("no redis-cli readiness probe")
	}
	checkRestricted(t, sts.Spec.Template.Spec.SecurityContext, ctr.SecurityContext, redisUID)
	if fs := sts.Spec.Template.Spec.SecurityContext.FSGroup; fs == nil || *fs != redisUID {
		t.Errorf("fsGroup = %v", fs)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 0 || !hasEmptyDir(sts.Spec.Template.Spec.Volumes, "data") {
		t.Errorf("without persistence /data must be an emptyDir and no claim templates")
	}
	if sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash] == "" {
		t.Errorf("no config hash on the pod template")
	}

	persistent := RedisStatefulSet(newCache(v1alpha1.EngineRedis, withPersistence, func(c *v1alpha1.Cache) {
		c.Spec.Redis.Persistence.Size = new(resource.MustParse("5Gi"))
		c.Spec.Redis.Persistence.StorageClassName = new("fast")
	}))
	if len(persistent.Spec.VolumeClaimTemplates) != 1 || hasEmptyDir(persistent.Spec.Template.Spec.Volumes, "data") {
		t.Fatalf("with persistence /data must be a claim")
	}
	pvc := persistent.Spec.VolumeClaimTemplates[0]
	if q := (*pvc.Spec.Resources.Requests)[corev1.ResourceStorage]; q.String() != "5Gi" || *pvc.Spec.StorageClassName != "fast" {
		t.Errorf("claim = %s %v", q.String(), *pvc.Spec.StorageClassName)
	}
	if a, b := persistent.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash], sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]; a == b {
		t.Errorf("config hash does not follow redis.conf")
	}

	primary := RedisService(c)
	if primary.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "sessions-0" || primary.Spec.ClusterIP != nil {
		t.Errorf("primary service selector = %v", primary.Spec.Selector)
	}
	ro := RedisReadOnlyService(c)
	if *ro.Name != "sessions-ro" || len(ro.Spec.Selector) != 1 {
		t.Errorf("read-only service %s selector = %v", *ro.Name, ro.Spec.Selector)
	}
	headless := RedisHeadlessService(c)
	if *headless.Spec.ClusterIP != corev1.ClusterIPNone || !*headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless service = %+v", headless.Spec)
	}
	if cm := RedisConfigMap(c); cm.Data["redis.conf"] != RedisConfig(c) {
		t.Errorf("ConfigMap does not hold redis.conf")
	}
	if got := c.Endpoint(); got != "sessions.prod.svc:6379" {
		t.Errorf("Endpoint = %q", got)
	}
}

// TestRedisAuth checks what a password asks of the children: redis.conf
// includes the password settings from the credentials Secret, mounted
// apart from the ConfigMap, readable by the redis group only; and nothing
// of it with auth turned off, or for memcached.
func TestRedisAuth(t *testing.T) {
	c := newCache(v1alpha1.EngineRedis)
	if !c.RedisAuthEnabled() || c.CredentialsName() != "sessions-credentials" {
		t.Fatalf("a redis Cache asks for a password by default: %t, %s", c.RedisAuthEnabled(), c.CredentialsName())
	}
	if conf := RedisConfig(c); !strings.HasSuffix(conf, "\ninclude /etc/redis-auth/redis-auth.conf\n") {
		t.Errorf("redis.conf does not end with the include:\n%s", conf)
	}
	pod := RedisStatefulSet(c).Spec.Template.Spec
	var auth *corev1ac.VolumeApplyConfiguration
	for i := range pod.Volumes {
		if *pod.Volumes[i].Name == "auth" {
			auth = &pod.Volumes[i]
		}
	}
	if auth == nil || auth.Secret == nil || *auth.Secret.SecretName != "sessions-credentials" ||
		len(auth.Secret.Items) != 1 || *auth.Secret.Items[0].Key != "redis-auth.conf" || *auth.Secret.DefaultMode != 0o440 {
		t.Fatalf("auth volume = %+v", auth)
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[*m.Name] = *m.MountPath
	}
	if mounts["auth"] != "/etc/redis-auth" || mounts["config"] != "/etc/redis" {
		t.Errorf("mounts = %v", mounts)
	}

	data := CredentialsData(c, testPassword)
	if string(data["password"]) != testPassword || string(data["host"]) != "sessions.prod.svc" || string(data["port"]) != "6379" {
		t.Errorf("credentials = password %t, host %s, port %s", string(data["password"]) == testPassword, data["host"], data["port"])
	}
	u, err := url.Parse(string(data["uri"]))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := u.User.Password(); u.Scheme != "redis" || u.User.Username() != "default" || p != testPassword || u.Host != "sessions.prod.svc:6379" {
		t.Errorf("uri: scheme %s, user %s, password kept %t, host %s", u.Scheme, u.User.Username(), p == testPassword, u.Host)
	}
	want := `requirepass "p\"a\\ss w0rd\x09# $HOME '\xc3\xa9'"`
	if conf := string(data["redis-auth.conf"]); !strings.Contains(conf, "\n"+want+"\n") {
		t.Errorf("redis-auth.conf lacks %s", want)
	}
	if s := CredentialsSecret(c, data); *s.Name != "sessions-credentials" || s.OwnerReferences[0].UID == nil {
		t.Errorf("Secret %s, owners %v", *s.Name, s.OwnerReferences)
	}

	off := newCache(v1alpha1.EngineRedis, func(c *v1alpha1.Cache) {
		c.Spec.Redis = &v1alpha1.RedisSettings{Auth: &v1alpha1.RedisAuth{Enabled: new(false)}}
	})
	if off.RedisAuthEnabled() || strings.Contains(RedisConfig(off), "include") {
		t.Errorf("auth turned off, redis.conf:\n%s", RedisConfig(off))
	}
	offPod := RedisStatefulSet(off).Spec.Template.Spec
	for _, v := range offPod.Volumes {
		if *v.Name == "auth" {
			t.Errorf("auth turned off, and still an auth volume")
		}
	}
	for _, e := range offPod.Containers[0].Env {
		if *e.Name == "REDISCLI_AUTH" {
			t.Errorf("auth turned off, and still REDISCLI_AUTH")
		}
	}
	if a, b := RedisStatefulSet(off).Spec.Template.Annotations[v1alpha1.AnnotationConfigHash], RedisStatefulSet(c).Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]; a == b {
		t.Errorf("turning auth off does not restart the nodes: the config hash is the same")
	}
	if newCache(v1alpha1.EngineMemcached).RedisAuthEnabled() {
		t.Errorf("memcached asks for a password")
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	for _, tt := range []struct {
		replicas int32
		want     bool
	}{{0, false}, {1, false}, {2, true}, {5, true}} {
		got := PodDisruptionBudget(newCache(v1alpha1.EngineRedis, withReplicas(tt.replicas))) != nil
		if got != tt.want {
			t.Errorf("replicas %d: PDB = %t, want %t", tt.replicas, got, tt.want)
		}
	}
}

func checkRestricted(t *testing.T, pod *corev1ac.PodSecurityContextApplyConfiguration, ctr *corev1ac.SecurityContextApplyConfiguration, uid int64) {
	t.Helper()
	if !*pod.RunAsNonRoot || *pod.RunAsUser != uid || *pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v", pod)
	}
	if *ctr.AllowPrivilegeEscalation || ctr.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context = %+v", ctr)
	}
}

func hasEmptyDir(volumes []corev1ac.VolumeApplyConfiguration, name string) bool {
	for _, v := range volumes {
		if *v.Name == name && v.EmptyDir != nil {
			return true
		}
	}
	return false
}
