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

package realnode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// TestRedis runs the redis Caches' checks side by side: they mostly wait
// for pods, and their pods are small.
func TestRedis(t *testing.T) {
	requireClusterBeside(t)
	t.Run("password and persistence", func(t *testing.T) {
		t.Parallel()
		redisPasswordAndPersistence(t)
	})
	t.Run("memory pressure", func(t *testing.T) {
		t.Parallel()
		redisUnderMemoryPressure(t)
	})
}

// redisPasswordAndPersistence runs a redis Cache of a primary and a
// replica with persistence, and checks with redis-cli in its pods, across
// the network: the primary refuses a client without the password, serves
// one with the password of the credentials Secret, and the replica
// replicates (it authenticates to the primary). Then a password of the
// user's, with characters redis.conf must quote, is put in the Secret and
// the nodes restarted, as the docs say: the new password is asked, the old
// one refused, the replica replicates again, and the key written before
// the restart is still there, from the append-only file. The test never
// prints a password: they reach the pods on standard input.
func redisPasswordAndPersistence(t *testing.T) {
	const manifest = `apiVersion: steward.dev/v1alpha1
kind: Cache
metadata:
  name: vault
  namespace: default
spec:
  engine: redis
  version: "7.0"
  replicas: 2
  redis:
    persistence:
      enabled: true
      size: 256Mi
`
	deleteCacheAtEnd(t, "vault", 2)
	began := time.Now()
	if out, err := devenv.Kubectl(t.Context(), cluster, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kubectl(t, "wait", "--for=condition=Ready", "cache/vault", "--timeout=300s")
	t.Logf("Cache vault Ready %v after kubectl apply", time.Since(began).Round(time.Millisecond))
	if got := kubectl(t, "get", "cache", "vault", "-o", "jsonpath={.status.credentialsSecret}"); got != "vault-credentials" {
		t.Errorf("status.credentialsSecret = %q, want vault-credentials", got)
	}
	generated := secretKey(t, "password")
	if len(generated) != 32 {
		t.Fatalf("the generated password has %d characters, want 32", len(generated))
	}

	// try runs redis-cli in the replica's pod against the primary's
	// Service: with a password, that on standard input; with an empty one,
	// none; with nil, the container's own REDISCLI_AUTH. cli fails the test
	// when kubectl does.
	try := func(password *string, args string) (string, error) {
		script := `redis-cli -h vault.default.svc ` + args
		var stdin []byte
		switch {
		case password != nil && *password == "":
			script = `env -u REDISCLI_AUTH ` + script
		case password != nil:
			script = `IFS= read -r pw; REDISCLI_AUTH="$pw" ` + script
			stdin = []byte(*password + "\n")
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out, err := devenv.Kubectl(ctx, cluster, stdin, "exec", "-i", "vault-1", "-c", "cache", "--", "sh", "-c", script+" 2>&1")
		return strings.TrimSpace(out), err
	}
	cli := func(password *string, args string) string {
		t.Helper()
		out, err := try(password, args)
		if err != nil {
			t.Fatalf("redis-cli %s: %v: %s", args, err, out)
		}
		return out
	}
	none := ""
	// The Service's address reaches the node's proxy a moment after the
	// pods are ready; until then the connection is refused.
	ready := time.Now()
	eventually(t, 2*time.Minute, "the primary answering through its Service", func() error {
		if out, err := try(&none, "ping"); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	t.Logf("the primary answered through its Service %v after the Cache was Ready", time.Since(ready).Round(time.Millisecond))
	if out := cli(&none, "get greeting"); !strings.Contains(out, "NOAUTH") {
		t.Errorf("without a password the primary answered: %q", out)
	}
	if out := cli(nil, "set greeting 'written before the restart'"); out != "OK" {
		t.Fatalf("SET with the container's REDISCLI_AUTH: %q", out)
	}
	if out := cli(&generated, "get greeting"); out != "written before the restart" {
		t.Errorf("GET with the Secret's password: %q", out)
	}
	replicaLinkUp(t, "with the generated password")
	mode := kubectl(t, "exec", "vault-0", "-c", "cache", "--", "stat", "-L", "-c", "%a %u:%g", "/etc/redis-auth/redis-auth.conf")
	if strings.TrimSpace(mode) != "440 0:999" {
		t.Errorf("redis-auth.conf in the pod: mode, owner and group %q, want 440 0:999", mode)
	}

	// The user's own password, with what redis.conf must quote.
	mine := `it's "mine" \ #1 é`
	patch, err := json.Marshal(map[string]any{"stringData": map[string]string{"password": mine}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := devenv.Kubectl(t.Context(), cluster, patch, "patch", "secret", "vault-credentials", "--type=merge", "--patch-file=/dev/stdin"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually(t, time.Minute, "redis-auth.conf rendered from the new password", func() error {
		conf := secretKey(t, "redis-auth.conf")
		if !strings.Contains(conf, `requirepass "it's \"mine\" \\ #1 \xc3\xa9"`) {
			return errNotYet
		}
		return nil
	})
	restarted := time.Now()
	kubectl(t, "rollout", "restart", "statefulset/vault")
	kubectl(t, "rollout", "status", "statefulset/vault", "--timeout=300s")
	kubectl(t, "wait", "--for=condition=Ready", "cache/vault", "--timeout=300s")
	t.Logf("both nodes restarted with the new password, Ready %v after the restart began", time.Since(restarted).Round(time.Millisecond))

	// The Service's new address for the restarted primary reaches the
	// node's proxy a moment after the pod is ready.
	ready = time.Now()
	tries := 0
	eventually(t, 2*time.Minute, "the key written before the restart, read with the new password", func() error {
		tries++
		out, err := try(&mine, "get greeting")
		if err != nil {
			if tries%10 == 1 {
				t.Logf("%v after Ready: %s; the Service's endpoints: %s", time.Since(ready).Round(time.Millisecond), out,
					kubectl(t, "get", "endpointslices", "-l", "kubernetes.io/service-name=vault", "-o", `jsonpath={range .items[*].endpoints[*]}{.addresses[0]} {.conditions.ready} {.targetRef.name}; {end}`))
			}
			return fmt.Errorf("%w: %s", err, out)
		}
		if out != "written before the restart" {
			return fmt.Errorf("GET greeting = %q", out)
		}
		return nil
	})
	t.Logf("the key read back with the new password %v after the Cache was Ready again", time.Since(ready).Round(time.Millisecond))
	if out := cli(nil, "ping"); out != "PONG" {
		t.Errorf("after the restart, the container's REDISCLI_AUTH: %q", out)
	}
	if out := cli(&generated, "get greeting"); !strings.Contains(out, "WRONGPASS") && !strings.Contains(out, "NOAUTH") {
		t.Errorf("after the restart, the old password was not refused: %q", out)
	}
	replicaLinkUp(t, "with the new password")
}

// errNotYet is what a poll returns until its state is reached.
var errNotYet = errors.New("not yet")

// secretKey returns a key of vault-credentials, decoded.
func secretKey(t *testing.T, key string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(kubectl(t, "get", "secret", "vault-credentials", "-o", "jsonpath={.data."+strings.ReplaceAll(key, ".", `\.`)+"}"))
	if err != nil {
		t.Fatalf("decoding key %s: %v", key, err)
	}
	return string(b)
}

// deleteCacheAtEnd deletes the redis Cache name and the volume claims of
// its nodes when the test ends: a Cache's claims outlive it.
func deleteCacheAtEnd(t *testing.T, name string, nodes int) {
	objects := []string{"cache/" + name}
	for i := range nodes {
		objects = append(objects, fmt.Sprintf("pvc/data-%s-%d", name, i))
	}
	deleteAtEnd(t, objects...)
}

// replicaLinkUp waits until vault-1 replicates from vault-0.
func replicaLinkUp(t *testing.T, when string) {
	t.Helper()
	began := time.Now()
	eventually(t, 2*time.Minute, "the replica vault-1 streaming from the primary "+when, func() error {
		out, err := devenv.Kubectl(t.Context(), cluster, nil, "exec", "vault-1", "-c", "cache", "--", "redis-cli", "info", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "role:slave") || !strings.Contains(out, "master_link_status:up") {
			return errNotYet
		}
		return nil
	})
	t.Logf("vault-1 replicates from vault-0 %s, %v after the check began", when, time.Since(began).Round(time.Millisecond))
	if time.Since(began) > 10*time.Second {
		t.Logf("vault-1's log:\n%s", kubectl(t, "logs", "vault-1", "-c", "cache", "--tail=80"))
	}
}

// redisUnderMemoryPressure writes twice a Cache's memory into redis, in
// batches, and checks that the share of it Steward gives redis (maxmemory,
// 75%) holds it inside the container's limit: a cache evicts keys
// (allkeys-lru), a store with persistence refuses writes (noeviction), and
// neither container is killed for its memory or restarts.
func redisUnderMemoryPressure(t *testing.T) {
	const manifest = `apiVersion: steward.dev/v1alpha1
kind: Cache
metadata:
  name: %s
  namespace: default
spec:
  engine: redis
  version: "7.0"
  memory: 32Mi
%s`
	cases := []struct {
		name, extra string
		// full is in the output of a batch once redis is full.
		full string
	}{
		{"squeezed", "", ""},
		{"squeezed-store", "  redis:\n    persistence: {enabled: true, size: 256Mi}\n", "OOM command not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			deleteCacheAtEnd(t, c.name, 1)
			if out, err := devenv.Kubectl(t.Context(), cluster, []byte(fmt.Sprintf(manifest, c.name, c.extra)), "apply", "-f", "-"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			kubectl(t, "wait", "--for=condition=Ready", "cache/"+c.name, "--timeout=300s")
			pod := c.name + "-0"
			// 64 batches of 1,000 values of 1 KiB: 64 MiB into 32Mi.
			script := `for b in $(seq 1 64); do
  out=$(redis-cli eval "for i = 1, 1000 do redis.call('SET', 'k' .. ARGV[1] .. ':' .. i, string.rep('x', 1024)) end return 1" 0 $b 2>&1)
  case "$out" in 1) ;; *) echo "batch $b: $out"; break ;; esac
done
redis-cli info memory | grep -E '^(used_memory|maxmemory):'
redis-cli info stats | grep -E '^evicted_keys:'
redis-cli dbsize`
			out, err := devenv.Kubectl(t.Context(), cluster, nil, "exec", pod, "-c", "cache", "--", "sh", "-c", script)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Logf("%s:\n%s", pod, out)
			fields := map[string]int64{}
			for line := range strings.Lines(out) {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "batch") {
					n, err := strconv.ParseInt(v, 10, 64)
					if err == nil {
						fields[k] = n
					}
				}
			}
			if fields["maxmemory"] != 16<<20 {
				t.Errorf("maxmemory %d, want 32Mi less 16 MiB of headroom", fields["maxmemory"])
			}
			if c.full == "" {
				if !strings.Contains(out, "evicted_keys:") || fields["evicted_keys"] == 0 || strings.Contains(out, "batch ") {
					t.Errorf("a cache evicts: every batch written and keys evicted; got:\n%s", out)
				}
			} else if !strings.Contains(out, c.full) || fields["evicted_keys"] != 0 {
				t.Errorf("a store refuses writes (%q) and evicts nothing; got:\n%s", c.full, out)
			}
			// The container was not killed: no restart, no OOMKilled.
			time.Sleep(5 * time.Second) // the kubelet reports a kill with its next status
			state := jsonpath(t, "pod "+pod, `{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].lastState.terminated.reason}`)
			if strings.TrimSpace(state) != "0" {
				t.Errorf("the container restarted: restartCount and last termination %q", state)
			}
			if ready := jsonpath(t, "cache/"+c.name, `{.status.conditions[?(@.type=="Ready")].status}`); ready != "True" {
				t.Errorf("the Cache is not Ready after the writes: %s", ready)
			}
		})
	}
}
