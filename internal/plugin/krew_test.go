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
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKrewManifest keeps plugins/krew/steward.yaml in step with the
// release it names: the chart's appVersion, and the asset of each
// platform, whose binary is the plugin's name for krew.
func TestKrewManifest(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var manifest struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			ShortDescription string `json:"shortDescription"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
				Files  []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	read := func(path string, into any) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	read("../../charts/steward/Chart.yaml", &chart)
	read("../../plugins/krew/steward.yaml", &manifest)

	version := "v" + chart.AppVersion
	if manifest.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || manifest.Kind != "Plugin" ||
		manifest.Metadata.Name != "steward" || manifest.Spec.Version != version || len(manifest.Spec.ShortDescription) > 60 {
		t.Errorf("manifest: %+v, want version %s", manifest, version)
	}
	sha := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for _, p := range manifest.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen[goos] = true
		bin := "kubectl-steward"
		if goos == "windows" {
			bin += ".exe"
		}
		uri := fmt.Sprintf("https://github.com/steward-dev/steward/releases/download/%s/kubectl-steward_%s_%s_%s.tar.gz", version, version, goos, arch)
		if p.URI != uri || !sha.MatchString(p.SHA256) || p.Bin != bin || len(p.Files) != 1 || p.Files[0].From != bin {
			t.Errorf("%s/%s: %+v, want uri %s and bin %s", goos, arch, p, uri, bin)
		}
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		if !seen[goos] {
			t.Errorf("no platform for %s", goos)
		}
	}
	if b, _ := os.ReadFile("../../plugins/krew/steward.yaml"); !strings.Contains(string(b), "PLACEHOLDER") {
		t.Error("the manifest does not say that its checksums are placeholders")
	}
}
