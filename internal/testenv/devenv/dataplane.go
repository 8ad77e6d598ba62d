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

package devenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// ClientCheck is a pod that uses a sample the way an application would,
// with a real client, and prints what it saw; it fails when the sample
// does not work.
type ClientCheck struct {
	// What says what the check shows.
	What string
	// Want is in the output of a check that saw the data plane work.
	Want  string
	name  string
	image string
	uid   int
	// env are the pod's variables from Secrets.
	env    []secretEnv
	script string
	// in, when set, selects a running pod of an application (a label
	// selector) in which the script runs with kubectl exec, with what
	// Steward bound into that pod, instead of a pod of the check's own.
	in string
}

// secretEnv is an environment variable from a key of a Secret.
type secretEnv struct{ name, secret, key string }

// DataPlaneChecks use the samples of config/samples-real-node once they are
// Ready, on a cluster with real nodes: a row written to a PostgreSQL
// Database and read back from its replica, a key set in a Redis Cache and
// read back from its replica, the AppStack's backend using its database and
// cache and its frontend reaching the backend, a WebApp's page.
var DataPlaneChecks = []ClientCheck{
	{
		What:  "PostgreSQL: a row written through the Database orders' read-write Service, read back through its read-only Service from the streaming replica",
		Want:  "a replica: true",
		name:  "demo-psql",
		image: "postgres:15",
		uid:   999,
		// The application's view: the connection details of the
		// credentials Secret, never printed.
		env: []secretEnv{
			{"DATABASE_URL", "orders-credentials", "uri"},
			{"PGUSER", "orders-credentials", "username"},
			{"PGPASSWORD", "orders-credentials", "password"},
			{"PGDATABASE", "orders-credentials", "database"},
		},
		script: `set -e
psql "$DATABASE_URL" -qc "create table if not exists demo (id serial primary key, note text)"
psql "$DATABASE_URL" -qAtc "insert into demo (note) values ('hello from the demo') returning 'wrote row ' || id || ' on ' || host(inet_server_addr()) || ', a primary: ' || not pg_is_in_recovery()"
for i in $(seq 1 50); do
  out=$(psql -h orders-ro.default.svc -Atc "select 'read row ' || id || ' (' || note || ') on ' || host(inet_server_addr()) || ', a replica: ' || pg_is_in_recovery() from demo order by id desc limit 1")
  [ -n "$out" ] && break
  sleep 0.2
done
echo "$out"`,
	},
	{
		What:  "Redis: a key set through the Cache store's Service, which selects the primary, read back from the replica store-1 by its DNS name, with the password of the credentials Secret; without it the primary refuses",
		Want:  "from the slave",
		name:  "demo-redis",
		image: "redis:7.0",
		uid:   999,
		// redis-cli reads REDISCLI_AUTH.
		env: []secretEnv{{"REDISCLI_AUTH", "store-credentials", "password"}},
		script: `set -e
refused=$(env -u REDISCLI_AUTH redis-cli -h store.default.svc get demo-key 2>&1)
case "$refused" in
  *NOAUTH*) echo "without the password: $refused" ;;
  *) echo "without the password the primary answered: $refused"; exit 1 ;;
esac
echo "set demo-key: $(redis-cli -h store.default.svc set demo-key 'hello from the demo') on the $(redis-cli -h store.default.svc role | head -1)"
replica=store-1.store-headless.default.svc
for i in $(seq 1 50); do
  out=$(redis-cli -h $replica get demo-key)
  [ -n "$out" ] && break
  sleep 0.2
done
echo "get demo-key: $out from the $(redis-cli -h $replica role | head -1) $replica"`,
	},
	{
		What:  "MariaDB: a row written and read through the Database wiki's Service, with the credentials Secret",
		Want:  "read row 1 (hello from the demo)",
		name:  "demo-mariadb",
		image: "mariadb:10.11",
		uid:   999,
		env: []secretEnv{
			{"DB_HOST", "wiki-credentials", "host"},
			{"DB_USER", "wiki-credentials", "username"},
			{"MYSQL_PWD", "wiki-credentials", "password"},
			{"DB_NAME", "wiki-credentials", "database"},
		},
		script: `set -e
db() { mariadb -h "$DB_HOST" -u "$DB_USER" -N "$DB_NAME" -e "$1"; }
db "create table if not exists demo (id int auto_increment primary key, note text)"
db "insert into demo (note) values ('hello from the demo')"
db "select concat('read row ', id, ' (', note, ') from ', @@hostname, ', MariaDB ', version()) from demo order by id desc limit 1"`,
	},
	{
		What:  "memcached: a key set and read through the Cache sessions' Service, which lists every node",
		Want:  "VALUE demo-key",
		name:  "demo-memcached",
		image: "memcached:1.6",
		uid:   11211,
		// bash's /dev/tcp is the client: the image has no other.
		script: `exec 3<>/dev/tcp/sessions.default.svc/11211
printf 'set demo-key 0 0 19\r\nhello from the demo\r\nget demo-key\r\nquit\r\n' >&3
tr -d '\r' <&3`,
	},
	{
		What: "AppStack: from inside the e-commerce backend's pod, with the variables Steward bound into it, its PostgreSQL database and its Redis cache answer",
		Want: "cache: PONG",
		in:   "steward.dev/webapp=ecommerce-backend",
		script: `set -e
psql "$DATABASE_URL" -Atc "select 'database: ' || current_database() || ' as ' || current_user || ', on the primary: ' || not pg_is_in_recovery()"
echo "cache: $(REDISCLI_AUTH="$CACHE_PASSWORD" redis-cli -h "$CACHE_HOST" -p "$CACHE_PORT" ping) from $CACHE_HOST:$CACHE_PORT"`,
	},
	{
		What: "AppStack: the e-commerce frontend reaches the backend through its Service",
		Want: "200 OK",
		in:   "steward.dev/webapp=ecommerce-frontend",
		script: `set -e
curl -fsS -D /tmp/headers -o /dev/null http://ecommerce-backend.default.svc/
head -1 /tmp/headers | tr -d '\r'`,
	},
	{
		What:  "WebApp: the page of the WebApp hello, through its Service",
		Want:  "200 OK",
		name:  "demo-curl",
		image: "nginxinc/nginx-unprivileged:1.22",
		uid:   101,
		script: `set -e
curl -fsS -D /tmp/headers -o /tmp/page http://hello.default.svc/
head -1 /tmp/headers | tr -d '\r'
grep -i '^server:' /tmp/headers | tr -d '\r'
grep -o '<title>.*</title>' /tmp/page`,
	},
}

// clientPod is the manifest of a check's pod: restricted, run once.
func clientPod(c ClientCheck) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: %d
    runAsGroup: %d
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: client
      image: %s
      imagePullPolicy: Never
      securityContext:
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
      command: [bash, -c, %q]
      env:%s
`, c.name, c.uid, c.uid, c.image, c.script, env(c.env))
}

// env renders environment variables from Secrets as a YAML list.
func env(vars []secretEnv) string {
	if len(vars) == 0 {
		return " []"
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "\n        - {name: %s, valueFrom: {secretKeyRef: {name: %s, key: %s}}}", v.name, v.secret, v.key)
	}
	return b.String()
}

// Run runs the check's pod in namespace default to completion, and
// returns its output.
func (c ClientCheck) Run(ctx context.Context, cluster *localcluster.Cluster) (string, error) {
	if c.in != "" {
		pod, err := Kubectl(ctx, cluster, nil, "get", "pods", "-l", c.in, "--field-selector=status.phase=Running",
			"-o", "jsonpath={.items[0].metadata.name}")
		if err != nil {
			return "", err
		}
		return Kubectl(ctx, cluster, nil, "exec", pod, "--", "bash", "-c", c.script)
	}
	if _, err := Kubectl(ctx, cluster, []byte(clientPod(c)), "apply", "-f", "-"); err != nil {
		return "", err
	}
	defer func() {
		_, _ = Kubectl(context.WithoutCancel(ctx), cluster, nil, "delete", "pod", c.name, "--wait=false")
	}()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		phase, err := Kubectl(ctx, cluster, nil, "get", "pod", c.name, "-o", "jsonpath={.status.phase}")
		if err != nil {
			return "", err
		}
		if phase == "Succeeded" || phase == "Failed" {
			out, err := Kubectl(ctx, cluster, nil, "logs", c.name)
			if err != nil {
				return "", err
			}
			if phase == "Failed" {
				return "", fmt.Errorf("the client failed:\n%s", out)
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the client pod is still %s after 3m", phase)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
