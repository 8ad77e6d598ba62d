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

package argocd

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/internal/testenv/apitest"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// The commands docs/operating.md gives to merge the health scripts into
// argocd-cm: from the chart's ConfigMap, and from the snippet file (run
// from the repository's root).
const (
	mergeFromChart = `kubectl -n argocd patch configmap argocd-cm --type merge ` +
		`-p "{\"data\":$(kubectl -n argocd get configmap steward-argocd-health -o jsonpath='{.data}')}"`
	mergeSnippet = `kubectl -n argocd patch configmap argocd-cm --type merge --patch-file config/argocd/argocd-cm-health.yaml`
)

// TestInAPIServer checks, in a real API server with Steward's CRDs, that
// the fixtures are objects the CRDs admit, status included, and that the
// documented commands merge the health scripts into an argocd-cm and keep
// what it held.
func TestInAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, err := apitest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("fixtures pass the CRDs", func(t *testing.T) { fixturesPassTheCRDs(t, c) })
	kubectl := kubectlIn(t, env.Config)
	t.Run("merge the chart's ConfigMap", func(t *testing.T) {
		argocdCM(t, kubectl)
		rendered := helmTemplate(t, "--show-only", "templates/argocd-health.yaml", "--set", "argocd.healthChecks.enabled=true")
		kubectl(t, rendered, "apply", "-f", "-")
		kubectl(t, "", "bash", "-c", mergeFromChart)
		mergedInto(t, kubectl)
	})
	t.Run("merge the snippet", func(t *testing.T) {
		argocdCM(t, kubectl)
		kubectl(t, "", "bash", "-c", mergeSnippet)
		mergedInto(t, kubectl)
	})
}

// fixturesPassTheCRDs creates each fixture, in a namespace named after its
// file, and writes its status, with strict field validation, and reads back
// the status it wrote: the API server neither refuses nor prunes any of it.
func fixturesPassTheCRDs(t *testing.T, c client.Client) {
	ctx := context.Background()
	for _, f := range fixtures(t) {
		t.Run(strings.TrimSuffix(f.file, ".yaml"), func(t *testing.T) {
			ns := strings.TrimSuffix(f.file, ".yaml")
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": f.obj.GetAPIVersion(), "kind": f.obj.GetKind(),
				"metadata": map[string]any{"name": f.obj.GetName(), "namespace": ns},
				"spec":     runtime.DeepCopyJSONValue(f.obj.Object["spec"]),
			}}
			if err := c.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("creating: %v", err)
			}
			status, ok := f.obj.Object["status"]
			if !ok {
				return
			}
			obj.Object["status"] = runtime.DeepCopyJSONValue(status)
			if err := c.Status().Update(ctx, obj, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("writing the status: %v", err)
			}
			if !reflect.DeepEqual(obj.Object["status"], status) {
				t.Errorf("the API server kept another status than the fixture's:\n%v\nwant\n%v", obj.Object["status"], status)
			}
		})
	}
}

// kubectlIn writes a kubeconfig for the API server and returns a function
// that runs kubectl, or with "bash" as first argument a shell command, with
// that kubeconfig and kubectl on PATH, in the repository's root.
func kubectlIn(t *testing.T, cfg *rest.Config) func(t *testing.T, stdin string, args ...string) string {
	bins, err := localcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := clientcmdapi.NewConfig()
	config.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	config.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	config.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		name := filepath.Join(bins, "kubectl")
		if args[0] == "bash" {
			name, args = "bash", args[1:]
		}
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
}

// argocdKept are keys of argocd-cm that merging must keep, one of them
// another kind's health script.
var argocdKept = map[string]string{
	"url": "https://argocd.example",
	"resource.customizations.health.apps_Deployment": "return {status = \"Healthy\"}\n",
}

// argocdCM creates the namespace argocd and an argocd-cm in it that holds
// argocdKept and an old WebApp script, or puts that content back.
func argocdCM(t *testing.T, kubectl func(*testing.T, string, ...string) string) {
	t.Helper()
	if out := kubectl(t, "", "get", "namespace", "argocd", "--ignore-not-found", "-o", "name"); out == "" {
		kubectl(t, "", "create", "namespace", "argocd")
	}
	data := maps.Clone(argocdKept)
	data[healthKey("WebApp")] = "return {status = \"Unknown\"}\n"
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "argocd-cm", "namespace": "argocd"}, "data": data}
	js, err := (&unstructured.Unstructured{Object: cm}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "delete", "configmap", "argocd-cm", "-n", "argocd", "--ignore-not-found")
	kubectl(t, string(js), "create", "-f", "-")
}

// mergedInto checks that argocd-cm holds argocdKept and the health scripts.
func mergedInto(t *testing.T, kubectl func(*testing.T, string, ...string) string) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(kubectl(t, "", "-n", "argocd", "get", "configmap", "argocd-cm", "-o", "json")), &cm); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(argocdKept)
	maps.Copy(want, scripts(t))
	if !maps.Equal(cm.Data, want) {
		t.Errorf("argocd-cm holds %d keys after the merge, want %d: the health scripts and what it held", len(cm.Data), len(want))
		for k, v := range want {
			if cm.Data[k] != v {
				t.Errorf("argocd-cm's %s = %q", k, cm.Data[k])
			}
		}
	}
}
