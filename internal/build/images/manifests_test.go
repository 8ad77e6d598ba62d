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

package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// TestInstallImages checks that the kustomize install and the Helm chart run
// the image `make image` names: the chart's appVersion, never latest, and
// the same image for the manager and --instance-image.
func TestInstallImages(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	read := func(p string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	read("charts/steward/Chart.yaml", &chart)
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	read("charts/steward/values.yaml", &values)
	var kust struct {
		Images []struct {
			Name, NewName, NewTag string
		} `json:"images"`
	}
	read("config/manager/kustomization.yaml", &kust)

	if chart.AppVersion == "" || values.Image.Repository != StewardName {
		t.Errorf("chart appVersion %q, image repository %q", chart.AppVersion, values.Image.Repository)
	}
	if len(kust.Images) != 1 || kust.Images[0].NewName != StewardName || kust.Images[0].NewTag != chart.AppVersion {
		t.Errorf("config/manager/kustomization.yaml images %+v, want %s:%s", kust.Images, StewardName, chart.AppVersion)
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the rendered install is not checked")
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "manager")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize config/manager: %v: %s", err, out)
	}
	img := StewardName + ":" + chart.AppVersion
	for _, want := range []string{"image: " + img + "\n", "- --instance-image=" + img + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the rendered install lacks %q", strings.TrimSpace(want))
		}
	}
}
