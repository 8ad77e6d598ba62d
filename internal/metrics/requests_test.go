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

package metrics

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, url, contentType string
		verb, resource           string
	}{
		{"GET", "/api/v1/namespaces/a/services/web", "", "get", "services"},
		{"GET", "/api/v1/namespaces/a/services", "", "list", "services"},
		{"GET", "/api/v1/services?watch=true&resourceVersion=5", "", "watch", "services"},
		{"GET", "/api/v1/namespaces/a", "", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "", "list", "namespaces"},
		{"PATCH", "/apis/apps/v1/namespaces/a/deployments/web?fieldManager=steward&force=true", "application/apply-patch+yaml", "apply", "deployments"},
		{"PATCH", "/apis/steward.dev/v1alpha1/namespaces/a/webapps/web/status", "application/merge-patch+json", "patch", "webapps/status"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/steward", "", "update", "leases"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", "", "create", "events"},
		{"DELETE", "/apis/networking.k8s.io/v1/namespaces/a/ingresses/web", "", "delete", "ingresses"},
		{"GET", "/apis/apps/v1", "", "get", "discovery"},
		{"GET", "/version", "", "get", "nonresource"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.url, nil)
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		verb, resource := Classify(req)
		if verb != tt.verb || resource != tt.resource {
			t.Errorf("%s %s = %s %s, want %s %s", tt.method, tt.url, verb, resource, tt.verb, tt.resource)
		}
	}
	if !IsWrite("apply") || IsWrite("watch") {
		t.Error("IsWrite misclassifies")
	}
}
