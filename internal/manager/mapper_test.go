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
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions that reach it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestSchemeMapperRemembersOnlyTheSchemesKinds(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	webapp := schema.GroupVersionKind{Group: "steward.dev", Version: "v1alpha1", Kind: "WebApp"}
	monitor := schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{deployment.GroupVersion(), webapp.GroupVersion(), monitor.GroupVersion()})
	for _, gvk := range []schema.GroupVersionKind{deployment, webapp, monitor} {
		known.Add(gvk, meta.RESTScopeNamespace)
	}
	under := &countingMapper{RESTMapper: known}
	mapper := newSchemeMapper(Scheme(), under)

	ask := func(gk schema.GroupKind, versions ...string) *meta.RESTMapping {
		t.Helper()
		mapping, err := mapper.RESTMapping(gk, versions...)
		if err != nil {
			t.Fatalf("RESTMapping(%v, %v): %v", gk, versions, err)
		}
		return mapping
	}
	for _, q := range []struct {
		gvk      schema.GroupVersionKind
		versions []string
		want     int // questions that reach the dynamic mapper in 3 asks
	}{
		{deployment, []string{"v1"}, 1},
		{deployment, nil, 1},
		{webapp, []string{"v1alpha1"}, 1},
		{webapp, nil, 1},
		{monitor, []string{"v1"}, 3}, // not in the scheme: may come and go
	} {
		under.asked = 0
		var first *meta.RESTMapping
		for range 3 {
			mapping := ask(q.gvk.GroupKind(), q.versions...)
			if mapping.GroupVersionKind != q.gvk || mapping.Scope.Name() != meta.RESTScopeNameNamespace || mapping.Resource.Resource == "changed by a caller" {
				t.Errorf("%v %v: mapping %+v", q.gvk, q.versions, mapping)
			}
			if first == nil {
				first = mapping
				first.Resource.Resource = "changed by a caller"
			}
		}
		if under.asked != q.want {
			t.Errorf("%v %v: %d of 3 questions reached the dynamic mapper, want %d", q.gvk, q.versions, under.asked, q.want)
		}
	}

	// A kind the API server does not serve is asked each time.
	under.asked = 0
	missing := schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	for range 2 {
		if _, err := mapper.RESTMapping(missing, "v1"); !meta.IsNoMatchError(err) {
			t.Errorf("a kind not served: error %v, want no match", err)
		}
	}
	if under.asked != 2 {
		t.Errorf("a kind not served: %d of 2 questions reached the dynamic mapper, want 2", under.asked)
	}
}
