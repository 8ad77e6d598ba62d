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

package plugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/instance"
)

// No kubelet runs here: psql, mysql and logs are tested up to the request
// they make of the API server (the pod, the container, the command), and
// the real exec and log requests only up to the API server's answer for a
// pod that no node runs. Running them against real pods is left to a
// test on real nodes.

// pod is a pod with labels and containers, Running unless phase says
// otherwise.
func pod(name string, labels map[string]string, phase corev1.PodPhase, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.PodStatus{Phase: phase}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "img"})
	}
	return p
}

// secretValue is the owner's password in the tests' credentials Secrets:
// no request may carry it.
const secretValue = "s3cr3t-Pa55w0rd"

func TestShell(t *testing.T) {
	h := newHarness(t)
	h.orders()
	h.create(decode[v1alpha1.Database](t, `
metadata: {name: payments}
spec: {engine: mariadb, version: "11.4", replicas: 2}
`))
	sel := func(db string) map[string]string { return map[string]string{v1alpha1.LabelDatabase: db} }
	h.create(
		pod("orders-0", sel("orders"), corev1.PodRunning, "postgres"),
		pod("orders-1", sel("orders"), corev1.PodRunning, "postgres"),
		pod("orders-2", sel("orders"), corev1.PodRunning, "postgres"),
		pod("payments-0", sel("payments"), corev1.PodPending, "mariadb"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-credentials"}, StringData: map[string]string{"username": "app", "password": secretValue}},
	)
	last := func() execRequest {
		t.Helper()
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.execs) == 0 {
			t.Fatal("no exec")
		}
		return h.execs[len(h.execs)-1]
	}
	psql := `PGPASSWORD="$STEWARD_OWNER_PASSWORD" exec psql -h "$STEWARD_RUN_DIR" -p "$STEWARD_PORT" -U "$STEWARD_OWNER_USERNAME" -d "$STEWARD_DATABASE" "$@"`

	h.run("psql", "orders").ok(t)
	want := execRequest{Namespace: h.ns, Pod: "orders-0", Container: "postgres", Command: []string{"sh", "-c", psql, "psql"}, Stdin: true}
	if got := last(); !equalExec(got, want) {
		t.Errorf("psql orders:\n got %+v\nwant %+v", got, want)
	}
	// The first ready replica; orders-2 is not ready.
	h.run("psql", "orders", "--replica", "--", "-c", "select count(*) from orders").ok(t)
	want.Pod, want.Command = "orders-1", []string{"sh", "-c", psql, "psql", "-c", "select count(*) from orders"}
	if got := last(); !equalExec(got, want) {
		t.Errorf("psql orders --replica:\n got %+v\nwant %+v", got, want)
	}
	h.run("psql", "orders", "--superuser").ok(t)
	if got := last().Command[2]; !strings.Contains(got, `PGPASSWORD="$STEWARD_SUPERUSER_PASSWORD"`) || !strings.Contains(got, `-U "$STEWARD_SUPERUSER_USERNAME"`) {
		t.Errorf("psql --superuser: %s", got)
	}

	h.run("psql", "payments").fails(t, `database "payments" runs mariadb: use kubectl steward mysql`)
	h.run("mysql", "orders").fails(t, `database "orders" runs postgres: use kubectl steward psql`)
	h.run("mysql", "payments").fails(t, `pod "payments-0" is Pending, not Running`)
	h.run("mysql", "payments", "--replica").fails(t, `database "payments" has no ready replica`)
	h.run("psql", "orders", "extra").fails(t, "psql takes one Database; put the client's arguments after --")

	// The exec request of the API server: the command is in its URL, and no
	// credential is.
	c := h.cli()
	for _, req := range h.execs {
		u := c.execURL(req, false).String()
		if strings.Contains(u, secretValue) || strings.Contains(strings.Join(req.Command, " "), secretValue) {
			t.Errorf("the exec request carries the password: %s", u)
		}
		if !strings.Contains(u, "/namespaces/"+h.ns+"/pods/"+req.Pod+"/exec?") || !strings.Contains(u, "container=postgres") ||
			!strings.Contains(u, "command=sh&command=-c") || !strings.Contains(u, "stdin=true") {
			t.Errorf("exec URL %s", u)
		}
	}
	// The real exec, through the API server: no node runs the pod.
	err := c.streamExec(context.Background(), execRequest{Namespace: h.ns, Pod: "orders-0", Container: "postgres", Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "orders-0") {
		t.Errorf("exec in a pod no node runs: %v", err)
	}
	bob := h.cliAs("bob")
	err = bob.streamExec(context.Background(), execRequest{Namespace: h.ns, Pod: "orders-0", Container: "postgres", Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`forbidden: you may not create pods/exec "orders-0" in namespace %q (user "bob")`, h.ns)) {
		t.Errorf("exec as a user without rights: %v", err)
	}
}

// TestShellEnvironment: the names the shell reads are those the Database
// controller sets in the container.
func TestShellEnvironment(t *testing.T) {
	for mine, theirs := range map[string]string{
		envOwnerUsername: instance.EnvOwnerUsername, envOwnerPassword: instance.EnvOwnerPassword,
		envSuperuserUsername: instance.EnvSuperuserUsername, envSuperuserPassword: instance.EnvSuperuserPassword,
		envRunDir: instance.EnvRunDir, envPort: instance.EnvPort, envDatabase: instance.EnvDatabase,
	} {
		if mine != theirs {
			t.Errorf("the shell reads %s, the container has %s", mine, theirs)
		}
	}
}

func equalExec(a, b execRequest) bool {
	return a.Namespace == b.Namespace && a.Pod == b.Pod && a.Container == b.Container && a.Stdin == b.Stdin && slices.Equal(a.Command, b.Command)
}

func TestMySQLShell(t *testing.T) {
	h := newHarness(t)
	db := decode[v1alpha1.Database](t, `
metadata: {name: payments}
spec: {engine: mariadb, version: "11.4", replicas: 2}
`)
	db.Status = v1alpha1.DatabaseStatus{Phase: v1alpha1.DatabaseRunning, Replicas: 2, ReadyReplicas: 2, Primary: "payments-1",
		Instances: []v1alpha1.DatabaseInstance{{Name: "payments-0", Role: "replica", Ready: true}, {Name: "payments-1", Role: "primary", Ready: true}}}
	h.create(db)
	h.create(pod("payments-0", nil, corev1.PodRunning, "mariadb"), pod("payments-1", nil, corev1.PodRunning, "mariadb"))
	h.run("mysql", "payments", "--", "-e", "select 1").ok(t)
	got := h.execs[len(h.execs)-1]
	script := `client=$(command -v mariadb || command -v mysql) || { echo "no mysql or mariadb client in the container" >&2; exit 127; }
MYSQL_PWD="$STEWARD_OWNER_PASSWORD" exec "$client" --socket="$STEWARD_RUN_DIR/mysqld.sock" -u "$STEWARD_OWNER_USERNAME" "$STEWARD_DATABASE" "$@"`
	want := execRequest{Namespace: h.ns, Pod: "payments-1", Container: "mariadb", Command: []string{"sh", "-c", script, "mysql", "-e", "select 1"}, Stdin: true}
	if !equalExec(got, want) {
		t.Errorf("mysql payments:\n got %+v\nwant %+v", got, want)
	}
	h.run("mysql", "payments", "--replica").ok(t)
	if got := h.execs[len(h.execs)-1].Pod; got != "payments-0" {
		t.Errorf("mysql --replica went to %s", got)
	}
}

// cli is a cli of the harness' namespace, its clients set up, as the
// admin.
func (h *harness) cli() *cli {
	return h.cliAs("")
}

// cliAs is cli as the user, impersonated.
func (h *harness) cliAs(user string) *cli {
	h.t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.Namespace, flags.Impersonate = &kubeconfig, &h.ns, &user
	var out, errOut bytes.Buffer
	c := &cli{flags: flags, streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		now: func() time.Time { return testNow }, poll: 20 * time.Millisecond}
	if err := c.setUp(); err != nil {
		h.t.Fatal(err)
	}
	return c
}

func TestLogs(t *testing.T) {
	h := newHarness(t)
	h.create(decode[v1alpha1.WebApp](t, `
metadata: {name: web}
spec: {image: "nginx:1.27"}
`))
	h.orders()
	h.create(
		pod("web-7f9c-b2x", map[string]string{"steward.dev/webapp": "web"}, corev1.PodRunning, "app"),
		pod("web-7f9c-a1q", map[string]string{"steward.dev/webapp": "web"}, corev1.PodRunning, "app", "proxy"),
		pod("web-other", map[string]string{"steward.dev/webapp": "webshop"}, corev1.PodRunning, "app"),
		pod("orders-0", map[string]string{v1alpha1.LabelDatabase: "orders"}, corev1.PodRunning, "postgres"),
		pod("orders-backup-now-1a2b3c4d-x9", map[string]string{v1alpha1.LabelBackup: "orders-backup"}, corev1.PodSucceeded, "backup"),
		pod("orders-backup-check-9f8e7d-z1", map[string]string{v1alpha1.LabelBackupCheck: "orders-backup"}, corev1.PodSucceeded, "check"),
	)
	h.logs["web-7f9c-b2x/app"] = "2026-12-01T11:00:01.5Z GET /\n2026-12-01T11:00:03Z GET /cart\n"
	h.logs["web-7f9c-a1q/app"] = "2026-12-01T11:00:01.25Z GET /health\n2026-12-01T11:00:02Z POST /order\n"
	h.logs["web-7f9c-a1q/proxy"] = "2026-12-01T11:00:00Z proxy started\n"

	out := h.run("logs", "webapp/web").ok(t)
	want := `[web-7f9c-a1q/proxy] proxy started
[web-7f9c-a1q/app] GET /health
[web-7f9c-b2x] GET /
[web-7f9c-a1q/app] POST /order
[web-7f9c-b2x] GET /cart
`
	if out != want {
		t.Errorf("logs webapp/web:\n%s\nwant:\n%s", out, want)
	}
	if out := h.run("logs", "webapp/web", "--timestamps", "-c", "proxy").ok(t); out != "[web-7f9c-a1q/proxy] 2026-12-01T11:00:00Z proxy started\n" {
		t.Errorf("logs -c proxy --timestamps:\n%s", out)
	}
	out = h.run("logs", "webapp/web", "-f").ok(t)
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("logs -f: no %q in\n%s", line, out)
		}
	}

	// Each kind's pods, by Steward's labels.
	opened := func(args ...string) []string {
		t.Helper()
		h.opened = nil
		h.run(args...).ok(t)
		slices.Sort(h.opened)
		return h.opened
	}
	if got := opened("logs", "database/orders"); !slices.Equal(got, []string{"orders-0/postgres"}) {
		t.Errorf("database/orders: %v", got)
	}
	if got := opened("logs", "backup/orders-backup"); !slices.Equal(got, []string{"orders-backup-check-9f8e7d-z1/check", "orders-backup-now-1a2b3c4d-x9/backup"}) {
		t.Errorf("backup/orders-backup: %v", got)
	}
	h.shop("shop", "staging")
	h.create(pod("shop-orders-0", map[string]string{v1alpha1.LabelDatabase: "shop-orders"}, corev1.PodRunning, "postgres"),
		pod("shop-sessions-0", map[string]string{"steward.dev/cache": "shop-sessions"}, corev1.PodRunning, "redis"),
		pod("shop-backend-5d-k2", map[string]string{"steward.dev/webapp": "shop-backend"}, corev1.PodRunning, "app"))
	if got := opened("logs", "appstack/shop"); !slices.Equal(got, []string{"shop-backend-5d-k2/app", "shop-orders-0/postgres", "shop-sessions-0/redis"}) {
		t.Errorf("appstack/shop: %v", got)
	}

	h.run("logs", "webapp/web", "-c", "sidecar").fails(t, `no pod has a container "sidecar"`)
	h.run("logs", "restore/none").fails(t, fmt.Sprintf(`restore "none" not found in namespace %q`, h.ns))
	h.create(decode[v1alpha1.AppConfig](t, `
metadata: {name: shop-config}
spec: {application: shop, environment: dev}
`), decode[v1alpha1.Cache](t, `
metadata: {name: idle}
spec: {engine: memcached, version: "1.6"}
`))
	h.run("logs", "appconfig/shop-config").fails(t, "appconfig/shop-config runs no pods of its own")
	h.run("logs", "cache/idle").fails(t, "cache/idle has no pods")

	// The real log request, through the API server: no node runs the pod.
	c := h.cli()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: h.ns}}
	// The API server answers an empty log for a pod that no node runs.
	r, err := c.apiLog(context.Background(), p, "postgres", logOptions{tail: 10})
	if err != nil {
		t.Fatalf("the log of a pod no node runs: %v", err)
	}
	if b, err := io.ReadAll(r); err != nil || len(b) > 0 {
		t.Errorf("the log of a pod no node runs: %q, %v", b, err)
	}
	if _, err := h.cliAs("bob").apiLog(context.Background(), p, "postgres", logOptions{tail: 10}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf(`forbidden: you may not get pods/log "orders-0" in namespace %q (user "bob")`, h.ns)) {
		t.Errorf("the log as a user without rights: %v", err)
	}
}

func TestCompletion(t *testing.T) {
	h := newHarness(t)
	db, _ := h.orders()
	complete := func(args ...string) []string {
		t.Helper()
		out := h.run(append([]string{"__complete"}, args...)...).ok(t)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[:len(lines)-1] // the last is the directive
	}
	if got := complete("status", ""); !slices.Contains(got, "database/") || !slices.Contains(got, "appstack/") || len(got) != len(kinds) {
		t.Errorf("status kinds: %v", got)
	}
	if got := complete("status", "db/"); !slices.Equal(got, []string{"db/orders"}) {
		t.Errorf("status db/: %v", got)
	}
	if got := complete("backup", ""); !slices.Equal(got, []string{"orders", "orders-backup"}) {
		t.Errorf("backup: %v", got)
	}
	if got := complete("psql", ""); !slices.Equal(got, []string{db.Name}) {
		t.Errorf("psql: %v", got)
	}
	if got := complete("switchover", "orders", "--to", ""); !slices.Equal(got, []string{"orders-2", "orders-1"}) {
		t.Errorf("switchover --to: %v", got)
	}
	if got := complete("stack", "graph", "shop", "-o", ""); !slices.Equal(got, []string{"dot", "json", "yaml"}) {
		t.Errorf("stack graph -o: %v", got)
	}
}
