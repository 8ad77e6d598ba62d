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

package appstack

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

// kindIngress is the kind of the stack's Ingress, and ingressComponent the
// name of its line in the status.
const (
	kindIngress      = "Ingress"
	ingressComponent = "ingress"
)

// component is one component of a stack, desired and live: a Steward object
// of the spec, or the stack's Ingress.
type component struct {
	name, kind string
	// needs are the components it depends on.
	needs []string
	// desired is the object the spec asks for; nil for one removed from the
	// spec.
	desired runtime.ApplyConfiguration
	// live holds the object as read; exists tells whether it does.
	live   client.Object
	exists bool
	// confirmed tells that the API server, not only the cache, was asked
	// whether the object exists.
	confirmed bool
	// problem is why applying it failed, for the user to fix, or nil.
	problem *conditions.Problem
}

// object is the object's name.
func (c *component) object() string { return c.live.GetName() }

// components are the stack's components in dependency order, with the
// objects the spec asks for and empty live objects.
func components(stack *v1alpha1.AppStack, g *appstack.Graph, d appstack.Desired) []*component {
	out := make([]*component, 0, len(g.Order()))
	for _, name := range g.Order() {
		n := g.Node(name)
		out = append(out, &component{
			name: name, kind: n.Kind, needs: n.Needs,
			desired: apply.Typed{Object: Component(stack, n, d)},
			live:    emptyObject(n.Kind, appstack.ObjectName(stack, name)),
		})
	}
	return out
}

// ingress is the stack's Ingress as a component, desired and with an empty
// live object; desired is nil when the spec has no ingress.
func ingress(stack *v1alpha1.AppStack) *component {
	c := &component{name: ingressComponent, kind: kindIngress, live: emptyObject(kindIngress, ingressName(stack))}
	c.live.SetNamespace(stack.Namespace)
	if in := Ingress(stack); in != nil {
		c.desired = in
	}
	return c
}

// dropped are the owned components the spec no longer has: no component
// of the same name and kind.
func dropped(owned, keep []*component) []*component {
	var out []*component
	for _, o := range owned {
		if !slices.ContainsFunc(keep, func(k *component) bool { return k.name == o.name && k.kind == o.kind }) {
			out = append(out, o)
		}
	}
	return out
}

// readiness returns whether the live object is Ready for its current
// generation, its Ready reason and message, and whether its Degraded
// condition is True (v1alpha1.StackComponentReadiness).
func (c *component) readiness() (ready bool, reason, message string, degraded bool) {
	if !c.exists {
		return false, v1alpha1.ReasonNotCreated, fmt.Sprintf("%s %s is not created yet", c.kind, c.object()), false
	}
	return v1alpha1.StackComponentReadiness(c.live)
}
