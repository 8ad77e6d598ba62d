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

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const database = `
apiVersion: steward.dev/v1alpha1
kind: Database
metadata:
  name: orders
  namespace: e2e-database
spec:
  engine: postgres
  version: "16"
  storage:
    size: 1Gi
`

// TestDatabaseLifecycle runs a Database on the full local cluster, where
// the StatefulSet controller creates pods and kwok binds their volumes:
// create, scale to 3, delete keeping the data, re-create adopting it,
// delete with the data.
func TestDatabaseLifecycle(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-database")
	ns := "--namespace=e2e-database"

	// 1. Create: all children, bound volume, Ready.
	kubectl(t, database, "apply", "-f", "-")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders", "--timeout=90s")
	kubectl(t, "", ns, "get", "statefulset/orders", "configmap/orders-config", "service/orders", "service/orders-ro",
		"service/orders-headless", "secret/orders-credentials", "secret/orders-superuser")
	if phase := kubectl(t, "", ns, "get", "pvc", "data-orders-0", "-o", "jsonpath={.status.phase}"); phase != "Bound" {
		t.Errorf("volume claim phase = %q, want Bound", phase)
	}
	eventually(t, 30*time.Second, func() error {
		if role := kubectl(t, "", ns, "get", "pod", "orders-0", "-o", "jsonpath={.metadata.labels.steward\\.dev/role}"); role != "primary" {
			return fmt.Errorf("orders-0 role = %q", role)
		}
		return nil
	})
	password := kubectl(t, "", ns, "get", "secret", "orders-credentials", "-o", "jsonpath={.data.password}")
	if got := kubectl(t, "", ns, "get", "database", "orders", "-o", "jsonpath={.status.endpoint}"); got != "orders.e2e-database.svc:5432" {
		t.Errorf("endpoint = %q", got)
	}

	// 2. Scale from 1 to 3: each replica gets its own bound volume and the
	// replica role; a PodDisruptionBudget appears.
	kubectl(t, "", ns, "patch", "database", "orders", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	kubectl(t, "", ns, "wait", "--for=jsonpath={.status.readyReplicas}=3", "database/orders", "--timeout=90s")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders", "--timeout=60s")
	eventually(t, 30*time.Second, func() error {
		roles := kubectl(t, "", ns, "get", "pods", "-l", "steward.dev/database=orders", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.steward\.dev/role} {end}`)
		if strings.TrimSpace(roles) != "orders-0=primary orders-1=replica orders-2=replica" {
			return fmt.Errorf("roles: %s", roles)
		}
		return nil
	})
	if phases := kubectl(t, "", ns, "get", "pvc", "-l", "steward.dev/database=orders", "-o", "jsonpath={.items[*].status.phase}"); phases != "Bound Bound Bound" {
		t.Errorf("volume claims: %q, want three Bound", phases)
	}
	kubectl(t, "", ns, "get", "pdb", "orders")

	// Scale down to 2: the highest ordinal goes, never the primary, and its
	// volume stays (deletionPolicy Retain).
	kubectl(t, "", ns, "patch", "database", "orders", "--type=merge", "-p", `{"spec":{"replicas":2}}`)
	eventually(t, 60*time.Second, func() error {
		pods := kubectl(t, "", ns, "get", "pods", "-l", "steward.dev/database=orders", "-o", "jsonpath={.items[*].metadata.name}")
		if pods != "orders-0 orders-1" {
			return fmt.Errorf("pods: %q", pods)
		}
		return nil
	})
	kubectl(t, "", ns, "wait", "--for=jsonpath={.status.replicas}=2", "database/orders", "--timeout=60s")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders", "--timeout=60s")
	kubectl(t, "", ns, "get", "pvc", "data-orders-2")

	// 3. Delete with the default policy, Retain: the garbage collector takes
	// the StatefulSet, pods and Services; volumes and Secrets stay.
	kubectl(t, "", ns, "delete", "database", "orders", "--wait=true", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		left := kubectl(t, "", ns, "get", "statefulsets,services,configmaps,pods", "-l", "steward.dev/database=orders", "-o", "name")
		if strings.TrimSpace(left) != "" {
			return fmt.Errorf("still present: %s", strings.Join(strings.Fields(left), ", "))
		}
		return nil
	})
	if claims := kubectl(t, "", ns, "get", "pvc", "-l", "steward.dev/database=orders", "-o", "name"); strings.Count(claims, "persistentvolumeclaim/") != 3 {
		t.Fatalf("volume claims after a Retain delete: %q, want 3", claims)
	}
	kubectl(t, "", ns, "get", "secret", "orders-credentials", "orders-superuser")

	// 4. Re-create: the volumes and the password are adopted.
	kubectl(t, database, "apply", "-f", "-")
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "database/orders", "--timeout=90s")
	if got := kubectl(t, "", ns, "get", "secret", "orders-credentials", "-o", "jsonpath={.data.password}"); got != password {
		t.Error("the re-created Database has a new password; it should have adopted the kept one")
	}
	if uid := kubectl(t, "", ns, "get", "secret", "orders-credentials", "-o", "jsonpath={.metadata.ownerReferences[0].uid}"); uid != kubectl(t, "", ns, "get", "database", "orders", "-o", "jsonpath={.metadata.uid}") {
		t.Errorf("the kept Secret is not owned by the new Database (owner %q)", uid)
	}

	// 5. Delete with policy Delete: the volumes and Secrets go too.
	kubectl(t, "", ns, "patch", "database", "orders", "--type=merge", "-p", `{"spec":{"deletionPolicy":"Delete"}}`)
	kubectl(t, "", ns, "delete", "database", "orders", "--wait=true", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		left := kubectl(t, "", ns, "get", "pvc,secrets", "-l", "steward.dev/database=orders", "-o", "name")
		if strings.TrimSpace(left) != "" {
			return fmt.Errorf("still present: %s", strings.Join(strings.Fields(left), ", "))
		}
		return nil
	})
}

const memcached = `
apiVersion: steward.dev/v1alpha1
kind: Cache
metadata:
  name: sessions
  namespace: e2e-cache
spec:
  engine: memcached
  replicas: 1
`

// TestCacheNodesFollowScaling checks status.nodes against the pods the
// Deployment controller really creates and deletes.
func TestCacheNodesFollowScaling(t *testing.T) {
	kubectl(t, "", "create", "namespace", "e2e-cache")
	ns := "--namespace=e2e-cache"
	kubectl(t, memcached, "apply", "-f", "-")
	for _, n := range []int{1, 3, 2} {
		kubectl(t, "", ns, "patch", "cache", "sessions", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		eventually(t, 60*time.Second, func() error {
			pods := strings.Fields(kubectl(t, "", ns, "get", "pods", "-l", "steward.dev/cache=sessions",
				"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"))
			nodes := strings.Fields(kubectl(t, "", ns, "get", "cache", "sessions", "-o", "jsonpath={.status.nodes[*]}"))
			if len(pods) != n || strings.Join(pods, " ") != strings.Join(nodes, " ") {
				return fmt.Errorf("%d replicas: pods %v, status.nodes %v", n, pods, nodes)
			}
			return nil
		})
	}
	kubectl(t, "", ns, "wait", "--for=condition=Ready", "cache/sessions", "--timeout=60s")
}
