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
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// kind is one of Steward's kinds as the command line names it.
type kind struct {
	// Name is the kind, e.g. Database.
	Name string
	// Plural is the resource, e.g. databases.
	Plural string
	// Short are the short names the CRD declares.
	Short []string
	// Cluster is true for a cluster-scoped kind.
	Cluster bool
}

// kinds are Steward's kinds, in the order the namespace overview lists
// them: what the others depend on first.
var kinds = []*kind{
	{Name: "AppStack", Plural: "appstacks"},
	{Name: "Database", Plural: "databases", Short: []string{"db"}},
	{Name: "Cache", Plural: "caches"},
	{Name: "AppConfig", Plural: "appconfigs"},
	{Name: "WebApp", Plural: "webapps", Short: []string{"wa"}},
	{Name: "Backup", Plural: "backups"},
	{Name: "Restore", Plural: "restores"},
	{Name: "WorkloadPolicy", Plural: "workloadpolicies", Short: []string{"wlp"}, Cluster: true},
}

// The kinds that commands take as their argument.
var (
	kindDatabase  = mustKind("Database")
	kindBackup    = mustKind("Backup")
	kindRestore   = mustKind("Restore")
	kindAppConfig = mustKind("AppConfig")
	kindAppStack  = mustKind("AppStack")
	kindWebApp    = mustKind("WebApp")
	kindCache     = mustKind("Cache")
)

func mustKind(name string) *kind {
	k := findKind(name)
	if k == nil {
		panic("unknown kind " + name)
	}
	return k
}

// findKind finds a kind by its name, plural, short name or the plural's
// singular, in any case, with or without the ".steward.dev" group.
func findKind(s string) *kind {
	s = strings.TrimSuffix(strings.ToLower(s), "."+v1alpha1.GroupVersion.Group)
	for _, k := range kinds {
		if s == strings.ToLower(k.Name) || s == k.Plural || slices.Contains(k.Short, s) {
			return k
		}
	}
	return nil
}

// lower is the kind as messages name it, e.g. database.
func (k *kind) lower() string { return strings.ToLower(k.Name) }

// gvk is the kind's group, version and kind.
func (k *kind) gvk() schema.GroupVersionKind { return v1alpha1.GroupVersion.WithKind(k.Name) }

// resource is the kind's group and resource, as RBAC names it.
func (k *kind) resource() schema.GroupResource {
	return schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: k.Plural}
}

// kindNames lists the kinds for help and errors.
func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.lower()
	}
	return strings.Join(names, ", ")
}

// ref is one object: its kind and name.
type ref struct {
	kind *kind
	name string
}

func (r ref) String() string { return r.kind.lower() + "/" + r.name }

// parseRef reads KIND/NAME, or NAME alone when the command has a default
// kind (def non-nil).
func parseRef(arg string, def *kind) (ref, error) {
	kindName, name, found := strings.Cut(arg, "/")
	if !found {
		if def == nil {
			return ref{}, fmt.Errorf("%q: give KIND/NAME, e.g. database/%s (kinds: %s)", arg, arg, kindNames())
		}
		return ref{kind: def, name: arg}, nil
	}
	k := findKind(kindName)
	if k == nil {
		return ref{}, fmt.Errorf("%q: unknown kind %q (Steward's kinds: %s)", arg, kindName, kindNames())
	}
	if name == "" {
		return ref{}, fmt.Errorf("%q: the name is missing, e.g. %s/my-%s", arg, k.lower(), k.lower())
	}
	if def != nil && k != def {
		return ref{}, fmt.Errorf("%q: this command takes a %s, not a %s", arg, def.lower(), k.lower())
	}
	return ref{kind: k, name: name}, nil
}

// namespaceOf is the namespace an object of the kind is read in: none for
// a cluster-scoped kind.
func (c *cli) namespaceOf(k *kind) string {
	if k.Cluster {
		return ""
	}
	return c.ns
}

// get reads one Steward object into obj, with a readable error.
func (c *cli) get(ctx context.Context, k *kind, name string, obj client.Object) error {
	ns := c.namespaceOf(k)
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return apiError(err, "get", k.resource(), k.lower(), ns, name)
	}
	return nil
}

// getUnstructured reads one Steward object as the API server has it,
// fields this plugin does not know included.
func (c *cli) getUnstructured(ctx context.Context, r ref) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.kind.gvk())
	if err := c.get(ctx, r.kind, r.name, u); err != nil {
		return nil, err
	}
	return u, nil
}

// list lists the objects of a Steward kind in the namespace, with a
// readable error.
func (c *cli) list(ctx context.Context, k *kind, list client.ObjectList, opts ...client.ListOption) error {
	ns := c.namespaceOf(k)
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.c.List(ctx, list, opts...); err != nil {
		return apiError(err, "list", k.resource(), k.lower(), ns, "")
	}
	return nil
}
