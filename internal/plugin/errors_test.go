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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func TestUnknownObject(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"status", "webapp/x"},
		{"logs", "webapp/x"},
	} {
		h.run(args...).fails(t, fmt.Sprintf(`webapp "x" not found in namespace %q`, h.ns))
	}
	for _, args := range [][]string{
		{"switchover", "x"},
		{"psql", "x"},
		{"mysql", "database/x"},
	} {
		h.run(args...).fails(t, fmt.Sprintf(`database "x" not found in namespace %q`, h.ns))
	}
	h.run("backup", "x").fails(t, fmt.Sprintf(`no backup or database "x" in namespace %q`, h.ns))
	h.run("backup", "backup/x").fails(t, fmt.Sprintf(`backup "x" not found in namespace %q`, h.ns))
	h.run("restore", "x", "--to", "y").fails(t, fmt.Sprintf(`backup "x" not found in namespace %q`, h.ns))
	h.run("config", "diff", "x", "-f", "-").fails(t, fmt.Sprintf(`appconfig "x" not found in namespace %q`, h.ns))
	h.run("status", "workloadpolicy/x").fails(t, `workloadpolicy "x" not found`)
	h.run("status", "gadget/x").fails(t, `"gadget/x": unknown kind "gadget" (Steward's kinds: appstack, database, cache, appconfig, webapp, backup, restore, workloadpolicy)`)
	h.run("status", "orders").fails(t, `"orders": give KIND/NAME, e.g. database/orders`)
}

// TestForbidden impersonates bob (--as, which sets rest.Config's
// Impersonate), who may read Databases of the namespace and nothing else.
func TestForbidden(t *testing.T) {
	h := newHarness(t)
	h.orders()
	as := func(args ...string) result {
		return h.run(append([]string{"--as", "bob"}, args...)...)
	}
	as("status", "backup/orders-backup").fails(t, fmt.Sprintf(
		`forbidden: you may not get backups.steward.dev "orders-backup" in namespace %q (user "bob") (RBAC needs the verb "get" on "backups.steward.dev")`, h.ns))
	as("status").fails(t, fmt.Sprintf(`forbidden: you may not list appstacks.steward.dev in namespace %q (user "bob")`, h.ns))

	h.grant("bob", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"databases"}, Verbs: []string{"get", "list"}})
	out := as("status", "database/orders").ok(t)
	for _, want := range []string{
		fmt.Sprintf(`Note: Backups not shown: forbidden: you may not list backups.steward.dev in namespace %q (user "bob")`, h.ns),
		fmt.Sprintf(`Note: Warning events not shown: forbidden: you may not list events in namespace %q (user "bob")`, h.ns),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	as("switchover", "orders").fails(t, fmt.Sprintf(
		`forbidden: you may not patch databases.steward.dev "orders" in namespace %q (user "bob") (RBAC needs the verb "patch" on "databases.steward.dev")`, h.ns))
	as("psql", "orders").fails(t, fmt.Sprintf(`forbidden: you may not get pods "orders-0" in namespace %q (user "bob")`, h.ns))
	as("backup", "orders").fails(t, fmt.Sprintf(`forbidden: you may not get backups.steward.dev "orders" in namespace %q`, h.ns))
}

// grant gives the user the rule in the harness' namespace.
func (h *harness) grant(user string, rules ...rbacv1.PolicyRule) {
	h.t.Helper()
	name := fmt.Sprintf("%s-%d", user, time.Now().UnixNano())
	h.create(
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}},
	)
}

func TestKubeconfigFlags(t *testing.T) {
	h := newHarness(t)
	h.orders()
	// The context's namespace, when -n is not given.
	out := h.runWith([]string{"--kubeconfig", kubeconfig, "--context", "elsewhere", "status", "database/orders"})
	out.fails(t, `database "orders" not found in namespace "elsewhere"`)
	// -n wins over the context's.
	h.runWith([]string{"--kubeconfig", kubeconfig, "--context", "elsewhere", "-n", h.ns, "status", "database/orders"}).ok(t)
	h.runWith([]string{"--kubeconfig", kubeconfig, "--namespace=" + h.ns, "status", "database/orders"}).ok(t)
	h.runWith([]string{"--kubeconfig", kubeconfig, "--context", "nowhere", "status"}).fails(t, `context "nowhere" does not exist`)
	h.runWith([]string{"--kubeconfig", "/nonexistent/kubeconfig", "status"}).fails(t, "reading the kubeconfig")
}

func TestOperatorNotRunning(t *testing.T) {
	h := newHarness(t)
	h.orders()
	check := func(args ...string) string {
		t.Helper()
		return h.run(append(args, "--operator-namespace="+h.ns)...).fails(t, "the Steward operator is not running")
	}
	msg := check("backup", "orders", "--wait")
	want := fmt.Sprintf(`not asking for a backup that nobody would run: the Steward operator is not running: no Lease steward.steward.dev in namespace %q; no pod labelled app.kubernetes.io/name=steward,app.kubernetes.io/component=manager in namespace %q (start it, or pass --operator-namespace or --skip-operator-check if it runs elsewhere)`, h.ns, h.ns)
	if msg != want {
		t.Errorf("error:\n%s\nwant:\n%s", msg, want)
	}
	check("restore", "orders-backup", "--to", "orders-copy")
	check("switchover", "orders")
	// Nothing was asked of nobody: no annotation, no Restore, no Database.
	b := &v1alpha1.Backup{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "orders-backup"}, b); err != nil || b.Annotations[v1alpha1.AnnotationBackupNow] != "" {
		t.Errorf("the Backup was asked for a run: %v %v", b.Annotations, err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "orders-copy"}, &v1alpha1.Database{}); !isNotFound(err) {
		t.Errorf("orders-copy was created: %v", err)
	}

	// A Lease its holder stopped renewing ten minutes ago.
	holder, renewed, secs := "steward-manager-7d4-x2k", metav1.NewMicroTime(testNow.Add(-10*time.Minute)), int32(15)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "steward.steward.dev"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, LeaseDurationSeconds: &secs}}
	h.create(lease)
	msg = check("backup", "orders", "--wait")
	if !strings.Contains(msg, fmt.Sprintf("the Lease %s/steward.steward.dev was last renewed 10m ago, by steward-manager-7d4-x2k", h.ns)) {
		t.Errorf("error: %s", msg)
	}
	// Looking in every namespace, for a Lease of another name.
	msg = h.run("backup", "orders", "--wait", "--operator-lease=steward-elsewhere").fails(t, "the Steward operator is not running")
	if !strings.Contains(msg, "no Lease steward-elsewhere in any namespace") {
		t.Errorf("error: %s", msg)
	}

	// A ready pod of the operator (leader election off) counts as running.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steward-manager", Labels: map[string]string{"app.kubernetes.io/name": "steward", "app.kubernetes.io/component": "manager"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "steward"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	h.create(pod)
	defer func() { _ = k8s.Delete(context.Background(), pod) }()
	if err := h.runOperatorCheck(); err != nil {
		t.Errorf("with a ready operator pod: %v", err)
	}
	// A user who may read neither Leases nor pods gets a warning, and the
	// command goes on.
	if err := k8s.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h.grant("carol", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"backups", "databases"}, Verbs: []string{"get", "list", "patch"}})
	r := h.run("--as", "carol", "--operator-namespace="+h.ns, "backup", "orders", "--wait", "--timeout=100ms")
	r.fails(t, "gave up waiting for Job orders-backup-now-")
	if !strings.Contains(r.errOut, "Warning: cannot tell whether the Steward operator runs: forbidden: you may not list leases.coordination.k8s.io") {
		t.Errorf("no warning in stderr:\n%s", r.errOut)
	}
	// --skip-operator-check skips it.
	h.run("--operator-namespace="+h.ns, "--skip-operator-check", "backup", "orders", "--wait", "--timeout=100ms").fails(t, "gave up waiting")
}

// runOperatorCheck runs the operator check alone, as the harness' user.
func (h *harness) runOperatorCheck() error {
	c := &cli{flags: nil, now: func() time.Time { return testNow }, operator: operatorFlags{namespace: h.ns, lease: defaultOperatorLease}}
	c.c = k8s
	return c.checkOperator(context.Background())
}
