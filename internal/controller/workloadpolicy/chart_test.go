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

package workloadpolicy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/steward-dev/steward/internal/testenv/devenv"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// renderChart renders the chart's template (such as workloadpolicy.yaml,
// in templates/) with the extra helm arguments, and returns its objects.
func renderChart(t *testing.T, template string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	helm, err := devenv.HelmBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --show-only of a template that renders nothing fails: render the
	// whole chart and keep this template's objects.
	cmd := exec.CommandContext(ctx, helm, append([]string{"template", "steward", filepath.Join(root, "charts", "steward"),
		"--namespace", "steward-system", "--kube-version", "1.36.3"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v: %s", err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(out), "\n---\n") {
		if !strings.Contains(doc, "# Source: steward/templates/"+template+"\n") {
			continue
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(doc)), 4096)
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("rendered templates/%s: %v", template, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// mapAPI is what a cluster that serves MutatingAdmissionPolicy v1
// (Kubernetes 1.36 and later) tells helm; helm template assumes it only
// when told.
var mapAPI = []string{"--api-versions", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}

// TestChartRendersThePolicy: the chart's templates/workloadpolicy.yaml
// renders the objects of config/policy/workloadpolicy.yaml, labelled,
// unless workloadPolicy.enabled is false.
func TestChartRendersThePolicy(t *testing.T) {
	expectRendered(t, "workloadpolicy.yaml", policyFile, nil, [][]string{nil, {"--set", "workloadPolicy.enabled=true"}})
	if got := renderChart(t, "workloadpolicy.yaml", "--set", "workloadPolicy.enabled=false"); len(got) != 0 {
		t.Errorf("workloadPolicy.enabled=false renders %d objects, want none", len(got))
	}
}

// TestChartRendersTheDefaults: the chart's
// templates/workloadpolicy-defaults.yaml renders the objects of
// config/policy/workloadpolicy-defaults.yaml, labelled, on a cluster that
// serves MutatingAdmissionPolicy v1, unless workloadPolicy.enabled is
// false; on an older cluster, nothing.
func TestChartRendersTheDefaults(t *testing.T) {
	const template = "workloadpolicy-defaults.yaml"
	expectRendered(t, template, defaultsFile, mapAPI, [][]string{nil, {"--set", "workloadPolicy.enabled=true"}})
	for _, args := range [][]string{{"--kube-version", "1.35.0"}, append([]string{"--set", "workloadPolicy.enabled=false"}, mapAPI...)} {
		if got := renderChart(t, template, args...); len(got) != 0 {
			t.Errorf("helm template %v renders %d objects of templates/%s, want none", args, len(got), template)
		}
	}
}

// expectRendered checks that template renders the objects of file, with
// the chart's labels, with the helm arguments common and each of args.
func expectRendered(t *testing.T, template, file string, common []string, args [][]string) {
	t.Helper()
	want, err := readObjects(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		a = append(append([]string{}, common...), a...)
		got := renderChart(t, template, a...)
		if len(got) != len(want) {
			t.Fatalf("helm template %v renders %d objects of templates/%s, want %d", a, len(got), template, len(want))
		}
		for i := range want {
			if got[i].GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("%s %s lacks the chart's labels: %v", got[i].GetKind(), got[i].GetName(), got[i].GetLabels())
			}
			got[i].SetLabels(nil)
			if !reflect.DeepEqual(got[i].Object, want[i].Object) {
				t.Errorf("the chart's %s %s differs from config/policy's:\n%v\nwant\n%v", got[i].GetKind(), got[i].GetName(), got[i].Object, want[i].Object)
			}
		}
	}
}
