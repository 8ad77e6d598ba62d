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
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The namespaces of TestRBAC: two that the namespaced install watches and
// one it does not.
const (
	rbacWatched   = "rbac-team-a"
	rbacWatched2  = "rbac-team-b"
	rbacUnwatched = "rbac-other"
)

// rbacMode is one way to install the chart: its release (named as its
// namespace) and values.
type rbacMode struct {
	name    string
	release string
	set     []string
}

// sa is the operator's ServiceAccount, for kubectl --as.
func (m rbacMode) sa() string {
	return "system:serviceaccount:" + m.release + ":" + m.release + "-steward"
}

// canIRow is one question to the API server's authorizer, and its answer
// in each mode, with why. The namespace "release" is the mode's release
// namespace, "" a cluster-scoped resource; WEBHOOK-CERT stands for the
// name of the mode's webhook certificate Secret.
type canIRow struct {
	verb, resource, namespace string
	extra                     []string
	clusterWide               answer
	namespaced                answer
}

type answer struct {
	yes bool
	why string
}

// TestRBAC installs the chart's RBAC and protection policies, rendered
// for the cluster-wide (default) and the namespaced mode
// (watchNamespaces), each as its own release with its own ServiceAccount,
// and asks the API server with kubectl auth can-i what that ServiceAccount
// may do. RBAC cannot leave namespaces out of a cluster-wide grant, so in
// that mode the ValidatingAdmissionPolicy must refuse the writes in the
// protected namespaces that RBAC allows.
func TestRBAC(t *testing.T) {
	for _, ns := range []string{rbacWatched, rbacWatched2, rbacUnwatched} {
		kubectl(t, "", "create", "namespace", ns)
	}
	modes := []rbacMode{
		{name: "cluster-wide", release: "rbac-cw"},
		{name: "namespaced", release: "rbac-nsd", set: []string{"--set", "watchNamespaces={" + rbacWatched + "," + rbacWatched2 + "}"}},
	}
	rows := []canIRow{
		{"list", "secrets", rbacWatched, nil, answer{true, "ClusterRoleBinding"}, answer{true, "RoleBinding in a watched namespace"}},
		{"list", "secrets", rbacUnwatched, nil, answer{true, "ClusterRoleBinding"}, answer{false, "not watched"}},
		{"list", "secrets", "kube-system", nil, answer{true, "RBAC cannot exclude it; the cache does"}, answer{false, "not watched"}},
		{"create", "secrets", "kube-system", nil, answer{true, "RBAC; the admission policy denies it (below)"}, answer{false, "not watched"}},
		{"patch", "deployments", "kube-system", nil, answer{true, "RBAC; the admission policy denies it (below)"}, answer{false, "not watched"}},
		{"update", "configmaps", "kube-system", nil, answer{true, "RBAC; the admission policy denies it (below)"}, answer{false, "not watched"}},
		{"delete", "leases", "kube-node-lease", nil, answer{false, "Leases only in its own namespace"}, answer{false, "Leases only in its own namespace"}},
		{"get", "leases", "release", nil, answer{true, "leader election Role"}, answer{true, "leader election Role"}},
		{"update", "leases", "release", nil, answer{true, "leader election Role"}, answer{true, "leader election Role"}},
		{"update", "leases", rbacWatched, nil, answer{false, "Leases only in its own namespace"}, answer{false, "Leases only in its own namespace"}},
		{"get", "secrets/WEBHOOK-CERT", "release", nil, answer{true, "certificate Role, by name"}, answer{true, "certificate Role, by name"}},
		{"update", "secrets/WEBHOOK-CERT", "release", nil, answer{true, "certificate Role, by name"}, answer{true, "certificate Role, by name"}},
		{"update", "secrets/other", "release", nil, answer{true, "ClusterRoleBinding: every Secret"}, answer{false, "only the certificate's name"}},
		{"create", "secrets", "release", nil, answer{true, "create cannot be limited to a name"}, answer{true, "create cannot be limited to a name"}},
		{"create", "deployments", rbacWatched2, nil, answer{true, "ClusterRoleBinding"}, answer{true, "RoleBinding in a watched namespace"}},
		{"create", "deployments", rbacUnwatched, nil, answer{true, "ClusterRoleBinding"}, answer{false, "not watched"}},
		{"create", "tokenreviews", "", nil, answer{true, "authenticated /metrics"}, answer{true, "authenticated /metrics"}},
		{"create", "subjectaccessreviews", "", nil, answer{true, "authorised /metrics"}, answer{true, "authorised /metrics"}},
		{"list", "namespaces", "", nil, answer{true, "WorkloadPolicy environments"}, answer{true, "WorkloadPolicy environments"}},
		{"delete", "namespaces", "", nil, answer{false, ""}, answer{false, ""}},
		{"list", "workloadpolicies", "", nil, answer{true, "the reporter"}, answer{true, "the reporter"}},
		{"patch", "workloadpolicies", "", []string{"--subresource=status"}, answer{true, "the reporter's status"}, answer{true, "the reporter's status"}},
		{"update", "workloadpolicies", "", nil, answer{false, ""}, answer{false, ""}},
		{"get", "storageclasses", "", nil, answer{true, "volume expansion"}, answer{true, "volume expansion"}},
		{"list", "storageclasses", "", nil, answer{false, ""}, answer{false, ""}},
		{"create", "clusterrolebindings", "", nil, answer{false, ""}, answer{false, ""}},
		{"patch", "validatingwebhookconfigurations/steward-validating-webhook-configuration", "", nil, answer{true, "its caBundle"}, answer{true, "its caBundle"}},
		{"patch", "validatingwebhookconfigurations/other", "", nil, answer{false, ""}, answer{false, ""}},
		{"delete", "validatingadmissionpolicies", "", nil, answer{false, "cannot lift its guard"}, answer{false, "cannot lift its guard"}},
		{"delete", "validatingadmissionpolicybindings", "", nil, answer{false, "cannot lift its guard"}, answer{false, "cannot lift its guard"}},
	}

	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			kubectl(t, "", "create", "namespace", m.release)
			rendered, err := renderRelease(t, m.release, append([]string{
				"--show-only", "templates/serviceaccount.yaml", "--show-only", "templates/rbac.yaml",
				"--show-only", "templates/protected-namespaces.yaml"}, m.set...)...)
			if err != nil {
				t.Fatal(err)
			}
			kubectl(t, rendered, "apply", "--server-side", "-f", "-")
			// The cluster-scoped objects would outlive the namespace.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, _ = devenv.Kubectl(ctx, cluster, []byte(rendered), "delete", "--ignore-not-found", "--wait=false", "-f", "-")
			})
			sa := "--as=" + m.sa()
			canI := func(r canIRow) string {
				args := []string{"auth", "can-i", sa, r.verb, strings.ReplaceAll(r.resource, "WEBHOOK-CERT", m.release+"-steward-webhook-cert")}
				switch r.namespace {
				case "":
				case "release":
					args = append(args, "--namespace="+m.release)
				default:
					args = append(args, "--namespace="+r.namespace)
				}
				out, _ := kubectlMayFail(append(args, r.extra...)...)
				return strings.TrimSpace(out)
			}
			// The authorizer sees new bindings a moment after they are written.
			eventually(t, time.Minute, func() error {
				if got := canI(canIRow{verb: "get", resource: "leases.coordination.k8s.io", namespace: "release"}); got != "yes" {
					return fmt.Errorf("the Lease Role is not in force yet: %s", got)
				}
				return nil
			})

			t.Logf("%s mode, as %s:", m.name, m.sa())
			t.Logf("%-7s %-76s %-16s %-4s %-4s %s", "VERB", "RESOURCE", "NAMESPACE", "GOT", "WANT", "WHY")
			for _, r := range rows {
				a := r.clusterWide
				if m.name == "namespaced" {
					a = r.namespaced
				}
				want := yesNo(a.yes)
				got := canI(r)
				ns := r.namespace
				switch ns {
				case "":
					ns = "(cluster)"
				case "release":
					ns = m.release
				}
				resource := strings.Join(append([]string{strings.ReplaceAll(r.resource, "WEBHOOK-CERT", m.release+"-steward-webhook-cert")}, r.extra...), " ")
				mark := ""
				if got != want {
					mark = "  <-- WRONG"
					t.Errorf("can-i %s %s in %s: %s, want %s", r.verb, resource, ns, got, want)
				}
				t.Logf("%-7s %-76s %-16s %-4s %-4s %s%s", r.verb, resource, ns, got, want, a.why, mark)
			}

			// What RBAC allows in the protected namespaces cluster-wide,
			// the API server refuses; namespaced, RBAC refuses it already.
			denied := "may not %s %s in namespace kube-system: it is protected (protectedNamespaces)"
			for _, w := range []struct {
				args    []string
				op, res string
			}{
				{[]string{"create", "secret", "generic", "rbac-probe"}, "CREATE", "secrets"},
				{[]string{"create", "configmap", "rbac-probe"}, "CREATE", "configmaps"},
				{[]string{"create", "deployment", "rbac-probe", "--image=registry.k8s.io/pause:3.10"}, "CREATE", "deployments"},
				{[]string{"label", "configmap", "kube-root-ca.crt", "rbac=probe"}, "UPDATE", "configmaps"},
				{[]string{"delete", "configmap", "kube-root-ca.crt"}, "DELETE", "configmaps"},
			} {
				args := slices.Concat(w.args, []string{"--namespace=kube-system", "--dry-run=server", sa})
				want := fmt.Sprintf(denied, w.op, w.res)
				if m.name == "namespaced" {
					want = "is forbidden: User \"" + m.sa() + "\" cannot"
				}
				eventually(t, 2*time.Minute, func() error {
					out, err := kubectlMayFail(args...)
					if err == nil {
						return fmt.Errorf("kubectl %s: allowed (%s), want Forbidden: %s", strings.Join(w.args, " "), out, want)
					}
					if !strings.Contains(err.Error(), want) {
						return fmt.Errorf("kubectl %s: %w, want Forbidden: %s", strings.Join(w.args, " "), err, want)
					}
					t.Logf("kubectl %s -n kube-system --dry-run=server: %s", strings.Join(w.args, " "), kubectlMessage(err))
					return nil
				})
			}
			// The same write in a namespace it manages passes: the policy
			// singles out the protected namespaces.
			if out, err := kubectlMayFail("create", "configmap", "rbac-probe", "--namespace="+rbacWatched, "--dry-run=server", sa); err != nil {
				t.Errorf("the operator may not create a ConfigMap in %s: %s %v", rbacWatched, out, err)
			}
			if m.name == "namespaced" {
				runAsServiceAccount(t, m, "--watch-namespaces="+rbacWatched+","+rbacWatched2)
			}
		})
	}

	// Nobody may create a Steward object in a protected namespace, where
	// the operator would never reconcile it.
	webApp := "apiVersion: steward.dev/v1alpha1\nkind: WebApp\nmetadata:\n  name: rbac-probe\nspec:\n  image: nginxinc/nginx-unprivileged:1.27\n  port: 8080\n"
	eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := devenv.Kubectl(ctx, cluster, []byte(webApp), "create", "--namespace=kube-system", "--dry-run=server", "-f", "-")
		want := "Steward does not manage namespace kube-system (protectedNamespaces): create this WebApp in another namespace"
		if err == nil {
			return fmt.Errorf("a WebApp was created in kube-system, want %q", want)
		}
		if !strings.Contains(err.Error(), want) {
			return fmt.Errorf("creating a WebApp in kube-system: %w, want %q", err, want)
		}
		t.Logf("kubectl create webapp -n kube-system --dry-run=server (as admin): %s", kubectlMessage(err))
		return nil
	})

	// The kustomize install's RBAC and policies (config/rbac) are valid.
	_, _ = kubectlMayFail("create", "namespace", "steward-system")
	kubectl(t, "", "apply", "--server-side", "--dry-run=server", "-k", "config/rbac")

	// A watched namespace that is protected fails the render.
	_, err := renderRelease(t, "rbac-bad", "--set", "watchNamespaces={"+rbacWatched+",kube-system}")
	if err == nil || !strings.Contains(err.Error(), "watchNamespaces lists kube-system, which protectedNamespaces protects") {
		t.Errorf("rendering with kube-system watched: %v", err)
	}
}

// renderRelease renders the chart as release name in the namespace of the
// same name; its error is helm's, for renders that must fail.
func renderRelease(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm(t), append([]string{"template", name, "charts/steward",
		"--namespace", name, "--kube-version", "1.36.3"}, args...)...)
	var err error
	if cmd.Dir, err = localcluster.RepoRoot(); err != nil {
		return "", err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helm template: %w: %s", err, stderr.String())
	}
	return string(out), nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// kubectlMessage is kubectl's own message in an error of devenv.Kubectl,
// without the command line before it.
func kubectlMessage(err error) string {
	s := err.Error()
	if _, msg, ok := strings.Cut(s, "exit status 1: "); ok {
		return msg
	}
	return s
}

// runAsServiceAccount runs the operator with the token of m's
// ServiceAccount, so with only the chart's RBAC, until it is ready (every
// informer synced: a watch it may not make would keep it unready) and leads
// (its Lease in the release namespace), and fails on any request the API
// server forbade it. Only in namespaced mode: the watched namespaces are
// empty, so it does not compete with the test cluster's own operator for
// other tests' objects. Webhooks and /metrics are off, as the chart's
// webhook configuration and Service do not exist here.
func runAsServiceAccount(t *testing.T, m rbacMode, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := devenv.BuildOperator(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	token, err := devenv.ServiceAccountToken(ctx, cluster, m.release, m.release+"-steward")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probes := l.Addr().String()
	_ = l.Close()

	log := &lockedLog{}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + kubeconfig,
		"--leader-election-namespace=" + m.release, "--leader-election-lease-duration=4s",
		"--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s",
		"--webhook-port=0", "--metrics-bind-address=0", "--health-probe-bind-address=" + probes,
		"--no-instance-requests", "--log-format=console"}, args...)...)
	cmd.Env = append(os.Environ(), "POD_NAME="+m.release+"-operator")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("operator log:\n%s", log.String())
		}
	}()
	eventually(t, 2*time.Minute, func() error {
		resp, err := http.Get("http://" + probes + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		holder, _ := kubectlMayFail("get", "lease", "steward.steward.dev", "--namespace="+m.release, "-o", "jsonpath={.spec.holderIdentity}")
		if holder != m.release+"-operator" {
			return fmt.Errorf("the Lease in %s is held by %q", m.release, holder)
		}
		return nil
	})
	// A few seconds of running: the controllers' first reconciles.
	time.Sleep(3 * time.Second)
	if out := log.String(); strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("the API server forbade the operator a request:\n%s", out)
	}
	t.Logf("the operator, as %s with %s, is ready and leads: every watch and its Lease allowed", m.sa(), strings.Join(args, " "))
}

// lockedLog collects a process's stdout and stderr, which it writes from
// two goroutines, while the test reads it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
