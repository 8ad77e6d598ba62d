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

package manager

import (
	"path/filepath"
	"testing"

	"github.com/steward-dev/steward/internal/build/images"
	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// TestDefaultInstanceImageIsThisRelease keeps the default instance image
// at the release the Helm chart installs, which is the image `make image`
// builds.
func TestDefaultInstanceImageIsThisRelease(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := images.ChartAppVersion(filepath.Join(root, "charts", "steward", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := images.StewardName + ":" + version; DefaultInstanceImage != want {
		t.Errorf("DefaultInstanceImage = %s, want %s, the chart's release", DefaultInstanceImage, want)
	}
}
