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
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

// cacheName is the schema's rule on a Cache's name.
var cacheName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// policies are the values the schema admits for redis.maxMemoryPolicy.
var policies = []v1alpha1.MaxMemoryPolicy{"", "noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// fuzzCache is a Cache the schema admits, or nil: named name, of the
// engine, version and policy chosen, with replicas, memory (at least 16Mi)
// and, for redis, persistence of size.
func fuzzCache(name string, choice uint8, replicas int32, memory, size, image string) *v1alpha1.Cache {
	if len(name) > 54 || !cacheName.MatchString(name) || strings.Contains(image, " ") || len(image) > 1024 {
		return nil
	}
	c := &v1alpha1.Cache{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: "uid-cache"},
		Spec:       v1alpha1.CacheSpec{Engine: []v1alpha1.CacheEngine{"", v1alpha1.EngineMemcached, v1alpha1.EngineRedis}[choice%3], Image: image},
	}
	if versions := v1alpha1.CacheVersions[c.EffectiveEngine()]; choice&4 != 0 {
		c.Spec.Version = versions[int(choice>>3)%len(versions)]
	}
	if replicas >= 0 {
		c.Spec.Replicas = new(replicas % 101)
	}
	if memory != "" {
		// Memory beyond what an int64 counts in bytes (8Ei) has no
		// byte value to derive the engine's limit from; no node has it.
		q, err := resource.ParseQuantity(memory)
		if _, fits := q.AsInt64(); err != nil || q.Cmp(resource.MustParse("16Mi")) < 0 || (!fits && q.Cmp(resource.MustParse("8Ei")) >= 0) {
			return nil
		}
		c.Spec.Memory = &q
	}
	if c.EffectiveEngine() == v1alpha1.EngineRedis && choice&0x80 != 0 {
		c.Spec.Redis = &v1alpha1.RedisSettings{MaxMemoryPolicy: policies[int(choice>>3)%len(policies)]}
		if size != "" {
			q, err := resource.ParseQuantity(size)
			if err != nil || q.Sign() <= 0 {
				return nil
			}
			c.Spec.Redis.Persistence = &v1alpha1.RedisPersistence{Enabled: choice&0x40 != 0, Size: &q, StorageClassName: new("fast")}
		}
	}
	return c
}

// FuzzChildren checks the children of any Cache the schema admits: the
// same every time, with valid names and labels, owned by the Cache; an
// engine memory below the container's and above zero; and a disruption
// budget exactly when there are several nodes.
func FuzzChildren(f *testing.F) {
	f.Add("sessions", uint8(1), int32(3), "256Mi", "", "")
	f.Add("store", uint8(2|4|3<<3|0x80|0x40), int32(3), "512Mi", "2Gi", "")
	f.Add("cache", uint8(2|0x80), int32(-1), "", "1Gi", "mirror.example/redis:7.4")
	f.Add("a-very-long-cache-name-that-is-exactly-fifty-four-chars", uint8(0), int32(100), "16Mi", "", "")
	f.Add("big", uint8(2|0x80|0x40), int32(1), "1Ei", "1Pi", "")
	f.Add("big", uint8(1), int32(2), "7Ei", "", "")
	f.Fuzz(func(t *testing.T, name string, choice uint8, replicas int32, memory, size, image string) {
		c := fuzzCache(name, choice, replicas, memory, size, image)
		if c == nil {
			t.Skip("refused by the schema")
		}
		type child struct {
			name, namespace string
			labels          map[string]string
			refs            []metav1ac.OwnerReferenceApplyConfiguration
		}
		var children []child
		var built []any
		if c.EffectiveEngine() == v1alpha1.EngineRedis {
			cm, sts := RedisConfigMap(c), RedisStatefulSet(c)
			children = append(children, child{*cm.Name, *cm.Namespace, cm.Labels, cm.OwnerReferences},
				child{*sts.Name, *sts.Namespace, sts.Labels, sts.OwnerReferences})
			for _, svc := range []*corev1ac.ServiceApplyConfiguration{RedisHeadlessService(c), RedisService(c), RedisReadOnlyService(c)} {
				children = append(children, child{*svc.Name, *svc.Namespace, svc.Labels, svc.OwnerReferences})
			}
			built = []any{cm, sts, RedisHeadlessService(c), RedisService(c), RedisReadOnlyService(c)}
			checkRedis(t, c)
		} else {
			dep, svc := MemcachedDeployment(c), MemcachedService(c)
			children = append(children, child{*dep.Name, *dep.Namespace, dep.Labels, dep.OwnerReferences},
				child{*svc.Name, *svc.Namespace, svc.Labels, svc.OwnerReferences})
			built = []any{dep, svc}
			checkMemcached(t, c)
		}
		pdb := PodDisruptionBudget(c)
		if (pdb != nil) != (DesiredReplicas(c) > 1) {
			t.Fatalf("PodDisruptionBudget %v for %d nodes", pdb, DesiredReplicas(c))
		}
		if pdb != nil {
			children = append(children, child{*pdb.Name, *pdb.Namespace, pdb.Labels, pdb.OwnerReferences})
		}
		for _, ch := range children {
			if errs := validation.IsDNS1035Label(ch.name); len(errs) > 0 || ch.namespace != c.Namespace {
				t.Fatalf("child %s/%s: %v", ch.namespace, ch.name, errs)
			}
			if err := fuzzcheck.Labels(ch.labels); err != nil {
				t.Fatalf("%s: %v", ch.name, err)
			}
			if len(ch.refs) != 1 || *ch.refs[0].UID != c.UID || !*ch.refs[0].Controller || *ch.refs[0].Kind != "Cache" {
				t.Fatalf("%s: owner references %+v", ch.name, ch.refs)
			}
		}
		if again := fuzzCache(name, choice, replicas, memory, size, image); !equality.Semantic.DeepEqual(built, rebuild(again)) {
			t.Fatal("the children differ from one build to the next")
		}
	})
}

// rebuild builds c's children as FuzzChildren does.
func rebuild(c *v1alpha1.Cache) []any {
	if c.EffectiveEngine() == v1alpha1.EngineRedis {
		return []any{RedisConfigMap(c), RedisStatefulSet(c), RedisHeadlessService(c), RedisService(c), RedisReadOnlyService(c)}
	}
	return []any{MemcachedDeployment(c), MemcachedService(c)}
}

// memoryBytes is the Cache's memory, in bytes.
func memoryBytes(c *v1alpha1.Cache) int64 {
	m := Memory(c)
	return m.Value()
}

func checkMemcached(t *testing.T, c *v1alpha1.Cache) {
	t.Helper()
	mb := MemcachedMegabytes(c)
	if mb < 1 || mb > max(memoryBytes(c)>>20, 1) {
		t.Fatalf("memcached -m %d for a memory of %v", mb, Memory(c))
	}
	args := MemcachedArgs(c)
	for i := 1; i < len(args); i += 2 {
		if n, err := strconv.ParseInt(args[i], 10, 64); err != nil || n < 1 {
			t.Fatalf("memcached %s %s", args[i-1], args[i])
		}
	}
	dep := MemcachedDeployment(c)
	if *dep.Spec.Replicas != DesiredReplicas(c) || *dep.Spec.Template.Spec.Containers[0].Image != Image(c) {
		t.Fatalf("Deployment replicas %d image %s", *dep.Spec.Replicas, *dep.Spec.Template.Spec.Containers[0].Image)
	}
	checkSelector(t, dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels)
}

func checkRedis(t *testing.T, c *v1alpha1.Cache) {
	t.Helper()
	if mm := RedisMaxMemory(c); mm < 1 || mm >= memoryBytes(c) {
		t.Fatalf("redis maxmemory %d for a memory of %v", mm, Memory(c))
	}
	conf := RedisConfig(c)
	if !strings.Contains(conf, fmt.Sprintf("\nmaxmemory %d\n", RedisMaxMemory(c))) ||
		!strings.Contains(conf, "\nmaxmemory-policy "+string(RedisMaxMemoryPolicy(c))+"\n") {
		t.Fatalf("redis.conf lacks maxmemory or its policy:\n%s", conf)
	}
	sts := RedisStatefulSet(c)
	if *sts.Spec.Replicas != DesiredReplicas(c) || *sts.Spec.ServiceName != c.HeadlessServiceName() {
		t.Fatalf("StatefulSet replicas %d service %s", *sts.Spec.Replicas, *sts.Spec.ServiceName)
	}
	if persistent(c) != (len(sts.Spec.VolumeClaimTemplates) == 1) {
		t.Fatalf("%d claim templates with persistence %v", len(sts.Spec.VolumeClaimTemplates), persistent(c))
	}
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		if size := (*claim.Spec.Resources.Requests)[corev1.ResourceStorage]; size.Sign() <= 0 {
			t.Fatalf("claim of %v", size)
		}
	}
	checkSelector(t, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
	if sel := RedisService(c).Spec.Selector; sel["statefulset.kubernetes.io/pod-name"] != c.PrimaryPod() {
		t.Fatalf("the redis Service selects %v, not the primary", sel)
	}
}

// checkSelector checks that a workload's selector selects its pods.
func checkSelector(t *testing.T, selector, podLabels map[string]string) {
	t.Helper()
	for k, v := range selector {
		if podLabels[k] != v {
			t.Fatalf("selector %v does not select the pods' labels %v", selector, podLabels)
		}
	}
}
