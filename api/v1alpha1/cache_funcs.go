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

package v1alpha1

import "fmt"

// Ports of the cache engines, and the annotation that restarts redis nodes.
const (
	// MemcachedPort is memcached's port.
	MemcachedPort = 11211
	// RedisPort is redis' port.
	RedisPort = 6379
	// AnnotationConfigHash on a redis pod template restarts the nodes when
	// redis.conf changes: redis reads it only at start.
	AnnotationConfigHash = "steward.dev/config-hash"
)

// EffectiveEngine is spec.engine, memcached when unset.
func (c *Cache) EffectiveEngine() CacheEngine {
	if c.Spec.Engine == "" {
		return EngineMemcached
	}
	return c.Spec.Engine
}

// Port is the engine's port, on which its Services listen.
func (c *Cache) Port() int32 {
	if c.EffectiveEngine() == EngineRedis {
		return RedisPort
	}
	return MemcachedPort
}

// HeadlessServiceName names the Service that gives each redis node a DNS
// name.
func (c *Cache) HeadlessServiceName() string { return c.Name + "-headless" }

// ReadOnlyServiceName names the redis Service that spreads reads over every
// node.
func (c *Cache) ReadOnlyServiceName() string { return c.Name + "-ro" }

// PrimaryPod is the redis primary: ordinal 0 of the StatefulSet.
func (c *Cache) PrimaryPod() string { return c.Name + "-0" }

// RedisPrimaryHost is the DNS name of the redis primary.
func (c *Cache) RedisPrimaryHost() string {
	return fmt.Sprintf("%s.%s.%s.svc", c.PrimaryPod(), c.HeadlessServiceName(), c.Namespace)
}

// Endpoint is where clients connect: the memcached headless Service, which
// resolves to every node, or the redis primary's Service.
func (c *Cache) Endpoint() string {
	return fmt.Sprintf("%s.%s.svc:%d", c.Name, c.Namespace, c.Port())
}

// CredentialsName names the Secret with the redis password and the
// connection details: password, host, port, uri and redis-auth.conf.
func (c *Cache) CredentialsName() string { return CacheCredentialsName(c.Name) }

// CacheCredentialsName names the credentials Secret of the Cache of that
// name.
func CacheCredentialsName(cache string) string { return cache + "-credentials" }

// RedisAuthEnabled reports whether the Cache is redis and asks its clients
// for a password: spec.redis.auth.enabled, true when unset.
func (c *Cache) RedisAuthEnabled() bool {
	if c.EffectiveEngine() != EngineRedis {
		return false
	}
	if r := c.Spec.Redis; r != nil && r.Auth != nil && r.Auth.Enabled != nil {
		return *r.Auth.Enabled
	}
	return true
}
