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

// Package appstack holds what an AppStack's controller and its admission
// webhook share, as pure Go: the dependency graph of its components and the
// rendering of each component's spec from the environment's profile.
package appstack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Kinds of components.
const (
	KindDatabase  = "Database"
	KindCache     = "Cache"
	KindWebApp    = "WebApp"
	KindAppConfig = "AppConfig"
)

// ConfigComponent is the name of the component spec.config renders: the
// AppConfig <stack>-config, which every app depends on.
const ConfigComponent = "config"

// Node is one component of the graph.
type Node struct {
	Name string
	Kind string
	// Needs are the components it depends on, explicit and implied, sorted.
	Needs []string
}

// Graph is an AppStack's components and their dependencies.
type Graph struct {
	nodes map[string]*Node
	// order lists the components so that each comes after what it needs.
	order []string
}

// UnknownError is a dependency on a component the stack does not have.
type UnknownError struct {
	// Field is where the reference is, e.g. apps[frontend].dependsOn.
	Field string
	// Component is the one that refers, Name the unknown one.
	Component, Name string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("%s: %s depends on %q, which is not a component of the stack", e.Field, e.Component, e.Name)
}

// CycleError is a dependency cycle.
type CycleError struct {
	// Cycle lists the components around the cycle, the first repeated at the end.
	Cycle []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Cycle, " -> ")
}

// kindRank orders components of different kinds that do not depend on each
// other: databases, then caches, then the configuration, then apps.
var kindRank = map[string]int{KindDatabase: 0, KindCache: 1, KindAppConfig: 2, KindWebApp: 3}

// NewGraph builds the dependency graph of spec: dependsOn edges, plus the
// implied ones, an app depending on the database and cache it binds and on
// the stack's configuration. It returns an *UnknownError for a reference to
// a component the stack lacks, or a *CycleError naming a cycle.
func NewGraph(spec *v1alpha1.AppStackSpec) (*Graph, error) {
	g := &Graph{nodes: map[string]*Node{}}
	type ref struct{ field, name string }
	refs := map[string][]ref{}
	// names keeps the spec's order, so that of several problems the same
	// one is reported every time.
	var names []string
	add := func(name, kind string, deps []ref) {
		g.nodes[name] = &Node{Name: name, Kind: kind}
		refs[name] = deps
		names = append(names, name)
	}
	dependsOn := func(field string, names []string) []ref {
		out := make([]ref, 0, len(names))
		for _, n := range names {
			out = append(out, ref{field + ".dependsOn", n})
		}
		return out
	}
	for _, d := range spec.Databases {
		add(d.Name, KindDatabase, dependsOn(fmt.Sprintf("databases[%s]", d.Name), d.DependsOn))
	}
	for _, c := range spec.Caches {
		add(c.Name, KindCache, dependsOn(fmt.Sprintf("caches[%s]", c.Name), c.DependsOn))
	}
	if spec.Config != nil {
		add(ConfigComponent, KindAppConfig, nil)
	}
	for _, a := range spec.Apps {
		field := fmt.Sprintf("apps[%s]", a.Name)
		deps := dependsOn(field, a.DependsOn)
		if a.Database != nil {
			deps = append(deps, ref{field + ".database.ref", a.Database.Ref})
		}
		if a.Cache != nil {
			deps = append(deps, ref{field + ".cache.ref", a.Cache.Ref})
		}
		if spec.Config != nil {
			deps = append(deps, ref{field, ConfigComponent})
		}
		add(a.Name, KindWebApp, deps)
	}
	for _, name := range names {
		n := g.nodes[name]
		for _, d := range refs[name] {
			if _, ok := g.nodes[d.name]; !ok || d.name == name {
				if d.name == name {
					return nil, &CycleError{Cycle: []string{name, name}}
				}
				return nil, &UnknownError{Field: d.field, Component: name, Name: d.name}
			}
			n.Needs = append(n.Needs, d.name)
		}
		slices.Sort(n.Needs)
		n.Needs = slices.Compact(n.Needs)
	}
	if err := g.sort(); err != nil {
		return nil, err
	}
	return g, nil
}

// less orders independent components: by kind, then by name.
func (g *Graph) less(a, b string) int {
	if d := kindRank[g.nodes[a].Kind] - kindRank[g.nodes[b].Kind]; d != 0 {
		return d
	}
	return strings.Compare(a, b)
}

// sort orders the components topologically (Kahn's algorithm, taking the
// least ready component first), or returns the cycle that prevents it.
func (g *Graph) sort() error {
	waiting := map[string]int{}
	for name, n := range g.nodes {
		waiting[name] = len(n.Needs)
	}
	var ready []string
	for name, w := range waiting {
		if w == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		slices.SortFunc(ready, g.less)
		next := ready[0]
		ready = ready[1:]
		g.order = append(g.order, next)
		for _, d := range g.Dependents(next) {
			if waiting[d]--; waiting[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(g.order) == len(g.nodes) {
		return nil
	}
	return &CycleError{Cycle: g.findCycle(waiting)}
}

// findCycle returns a cycle among the components left unsorted, starting at
// the least of them.
func (g *Graph) findCycle(waiting map[string]int) []string {
	var left []string
	for name, w := range waiting {
		if w > 0 {
			left = append(left, name)
		}
	}
	slices.SortFunc(left, g.less)
	// Every component left needs another one left; follow the least such
	// need until a component repeats.
	seen := map[string]int{}
	var path []string
	cur := left[0]
	for {
		if i, ok := seen[cur]; ok {
			return append(path[i:], cur)
		}
		seen[cur] = len(path)
		path = append(path, cur)
		for _, d := range g.nodes[cur].Needs {
			if waiting[d] > 0 {
				cur = d
				break
			}
		}
	}
}

// Order lists every component so that each comes after those it needs.
func (g *Graph) Order() []string { return g.order }

// Node returns a component, or nil.
func (g *Graph) Node(name string) *Node { return g.nodes[name] }

// Dependents lists the components that need name, sorted.
func (g *Graph) Dependents(name string) []string {
	var out []string
	for other, n := range g.nodes {
		if slices.Contains(n.Needs, name) {
			out = append(out, other)
		}
	}
	slices.Sort(out)
	return out
}
