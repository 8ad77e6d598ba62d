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
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// DefaultProtectedNamespaces are the namespaces Steward never acts in
// unless told otherwise: Kubernetes' own.
func DefaultProtectedNamespaces() []string {
	return []string{"kube-system", "kube-public", "kube-node-lease"}
}

// SplitNamespaces reads a flag's comma-separated namespaces; empty is none.
func SplitNamespaces(s string) []string {
	var names []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// NamespaceList is a flag of comma-separated namespaces:
// flag.Var((*NamespaceList)(&opts.WatchNamespaces), ...).
type NamespaceList []string

// String joins the namespaces with commas.
func (l *NamespaceList) String() string { return strings.Join(*l, ",") }

// Set replaces the namespaces with those of s; empty is none.
func (l *NamespaceList) Set(s string) error {
	*l = SplitNamespaces(s)
	return nil
}

// ValidateNamespaces checks WatchNamespaces and ProtectedNamespaces: names
// of namespaces, each once, and no watched namespace protected.
func (o Options) ValidateNamespaces() error {
	lists := []struct {
		flag  string
		names []string
	}{{"--watch-namespaces", o.WatchNamespaces}, {"--protected-namespaces", o.ProtectedNamespaces}}
	for _, l := range lists {
		for i, n := range l.names {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return fmt.Errorf("%s: %q is not a namespace name: %s", l.flag, n, strings.Join(errs, "; "))
			}
			if slices.Contains(l.names[:i], n) {
				return fmt.Errorf("%s lists %s twice", l.flag, n)
			}
		}
	}
	for _, n := range o.WatchNamespaces {
		if slices.Contains(o.ProtectedNamespaces, n) {
			return fmt.Errorf("--watch-namespaces lists %s, which --protected-namespaces protects: Steward never acts in a protected namespace", n)
		}
	}
	return nil
}

// cacheNamespaces are the namespaces the cache watches, its
// DefaultNamespaces. They hold for every namespaced kind, Steward's and the
// children's, whose ByObject leaves Namespaces nil; cluster-scoped kinds
// (Namespaces, WorkloadPolicies) are watched cluster-wide either way.
//
//   - WatchNamespaces set: those namespaces only (namespaced mode).
//   - Otherwise every namespace but the protected ones, which a field
//     selector on the AllNamespaces entry leaves out (cluster-wide mode):
//     RBAC cannot exclude them, but what the cache does not see, the
//     operator never acts on.
//   - Neither: nil, every namespace.
func cacheNamespaces(opts Options) (map[string]cache.Config, error) {
	if err := opts.ValidateNamespaces(); err != nil {
		return nil, err
	}
	if len(opts.WatchNamespaces) > 0 {
		namespaces := make(map[string]cache.Config, len(opts.WatchNamespaces))
		for _, n := range opts.WatchNamespaces {
			namespaces[n] = cache.Config{}
		}
		return namespaces, nil
	}
	if len(opts.ProtectedNamespaces) == 0 {
		return nil, nil
	}
	return map[string]cache.Config{cache.AllNamespaces: {FieldSelector: notIn(opts.ProtectedNamespaces)}}, nil
}

// notIn selects the objects outside namespaces.
func notIn(namespaces []string) fields.Selector {
	sorted := slices.Sorted(slices.Values(namespaces))
	selectors := make([]fields.Selector, 0, len(sorted))
	for _, n := range sorted {
		selectors = append(selectors, fields.OneTermNotEqualSelector("metadata.namespace", n))
	}
	return fields.AndSelectors(selectors...)
}
