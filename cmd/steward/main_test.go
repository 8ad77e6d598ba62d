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

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOperatorLinksNoAgent keeps what the operator's pods run out of the
// operator's binary: the instance manager's backup and point-in-time
// commands, the S3, GCS and Azure clients they use, and k8s.io/apiserver
// (with its gRPC, tracing and CEL), which /metrics's authentication no
// longer needs. Each would bring back tens of megabytes of memory that
// every operator replica pays for.
func TestOperatorLinksNoAgent(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const self = "github.com/steward-dev/steward/internal/backup/"
	banned := []string{"github.com/aws/", "github.com/Azure/", "cloud.google.com/", "gocloud.dev/",
		"k8s.io/apiserver/", "google.golang.org/grpc", "go.opentelemetry.io/", "github.com/google/cel-go/"}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		switch dep {
		case self + "dump", self + "pitr", self + "store":
			t.Errorf("the operator links %s, which only steward-agent runs", dep)
		}
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("the operator links %s", dep)
				break
			}
		}
	}
}
