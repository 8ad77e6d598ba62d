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
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// schemeMapper is the dynamic REST mapper with the mappings of the kinds
// of a scheme remembered. The cache asks for a kind's mapping at every read
// (is it namespaced?), and so does every owner-reference watch at every
// event; the dynamic mapper answers from a chain of per-group mappers that
// builds a not-found error for each group it passes, several percent of
// the operator's CPU under load. The scheme's kinds, Kubernetes' own and
// Steward's, are served for as long as the operator runs; a kind outside
// the scheme (an optional CRD such as ServiceMonitor, which may be
// installed or removed meanwhile) and every failure go to the dynamic
// mapper each time.
type schemeMapper struct {
	meta.RESTMapper
	// kinds are the scheme's kinds, with and without their version.
	kinds    map[schema.GroupVersionKind]bool
	mappings sync.Map // mappingKey -> meta.RESTMapping
}

// mappingKey is a RESTMapping question.
type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

// mapperProvider is the manager's MapperProvider: the dynamic REST mapper,
// remembering the mappings of scheme's kinds.
func mapperProvider(scheme *runtime.Scheme) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		dynamic, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
		if err != nil {
			return nil, err
		}
		return newSchemeMapper(scheme, dynamic), nil
	}
}

// newSchemeMapper remembers the mappings mapper gives of scheme's kinds.
func newSchemeMapper(scheme *runtime.Scheme, mapper meta.RESTMapper) *schemeMapper {
	kinds := map[schema.GroupVersionKind]bool{}
	for gvk := range scheme.AllKnownTypes() {
		kinds[gvk] = true
		kinds[gvk.GroupKind().WithVersion("")] = true
	}
	return &schemeMapper{RESTMapper: mapper, kinds: kinds}
}

// RESTMapping answers from memory for a kind of the scheme it has answered
// before; each caller gets its own copy.
func (m *schemeMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk: gk, versions: strings.Join(versions, ",")}
	if v, ok := m.mappings.Load(key); ok {
		mapping := v.(meta.RESTMapping)
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil || !m.inScheme(gk, versions) {
		return mapping, err
	}
	m.mappings.Store(key, *mapping)
	return mapping, nil
}

// inScheme reports whether the scheme has the kind gk in each of versions,
// or in some version when none is named.
func (m *schemeMapper) inScheme(gk schema.GroupKind, versions []string) bool {
	if len(versions) == 0 {
		return m.kinds[gk.WithVersion("")]
	}
	for _, v := range versions {
		if !m.kinds[gk.WithVersion(v)] {
			return false
		}
	}
	return true
}
