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
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// stackReport is what status says about an AppStack beside its
// conditions: its components in dependency order, and what blocks what.
type stackReport struct {
	Components []componentRow `json:"components"`
	// GraphError is why the dependency graph could not be built (a cycle,
	// a dependency on a component the stack lacks); the components are
	// then in the status' order.
	GraphError string                   `json:"graphError,omitempty"`
	Endpoints  []v1alpha1.StackEndpoint `json:"endpoints,omitempty"`
}

// componentRow is one component of a stack.
type componentRow struct {
	Name    string       `json:"name"`
	Kind    string       `json:"kind"`
	Object  string       `json:"object"`
	Ready   bool         `json:"ready"`
	Reason  string       `json:"reason,omitempty"`
	Message string       `json:"message,omitempty"`
	Since   *metav1.Time `json:"since,omitempty"`
	// Needs are the components it depends on, explicit and implied.
	Needs []string `json:"needs,omitempty"`
	// WaitingFor are those of its needs that are not Ready.
	WaitingFor []string `json:"waitingFor,omitempty"`
	// Blocks are the components that wait for it.
	Blocks []string `json:"blocks,omitempty"`
}

func (c *cli) stackDetails(ctx context.Context, u *unstructured.Unstructured, rep *report) error {
	stack := &v1alpha1.AppStack{}
	if err := fromUnstructured(u, stack); err != nil {
		return err
	}
	rep.Summary = []field{{"Environment", string(stack.Spec.Environment)}}
	if t := stack.Status.FirstReadyTime; t != nil {
		// With the creation time: how long the whole application took to come up.
		rep.Summary = append(rep.Summary, field{"First Ready", fmt.Sprintf("%s, %s after creation",
			timeAndAge(c.now(), t), t.Sub(stack.CreationTimestamp.Time).Round(time.Second))})
	}
	for _, e := range stack.Status.Endpoints {
		rep.Summary = append(rep.Summary, field{"Endpoint", fmt.Sprintf("%s %s", e.Name, e.URL)})
	}
	rows, err := componentRows(stack, c.componentHealth(ctx, stack))
	s := &stackReport{Components: rows}
	if err != nil {
		s.GraphError = err.Error()
	}
	rep.AppStack = s
	return nil
}

// componentHealth is each component's line of the stack's status. A
// component the status has no line for, as while a new stack's first
// status is held back, is read instead and judged as the operator judges
// it (v1alpha1.StackComponentReadiness); it has no line when the object
// does not exist (NotCreated).
func (c *cli) componentHealth(ctx context.Context, stack *v1alpha1.AppStack) map[string]v1alpha1.StackComponentStatus {
	health := map[string]v1alpha1.StackComponentStatus{}
	for _, cs := range stack.Status.Components {
		health[cs.Name] = cs
	}
	g, err := appstack.NewGraph(&stack.Spec)
	if err != nil {
		return health
	}
	for _, name := range g.Order() {
		k := findKind(g.Node(name).Kind)
		if _, ok := health[name]; ok || k == nil {
			continue
		}
		line := v1alpha1.StackComponentStatus{Name: name, Kind: k.Name, Object: appstack.ObjectName(stack, name)}
		switch obj, err := c.getTyped(ctx, k, line.Object); {
		case isNotFound(err):
			continue
		case err != nil:
			line.Reason, line.Message = "Unknown", err.Error()
		default:
			line.Ready, line.Reason, line.Message, _ = v1alpha1.StackComponentReadiness(obj)
		}
		health[name] = line
	}
	return health
}

// getTyped reads the object of kind named name as its Go type.
func (c *cli) getTyped(ctx context.Context, k *kind, name string) (client.Object, error) {
	o, err := c.c.Scheme().New(k.gvk())
	if err != nil {
		return nil, err
	}
	obj := o.(client.Object)
	return obj, c.get(ctx, k, name, obj)
}

// componentRows are the stack's components in the order the operator
// creates them, from internal/appstack's graph, each with its health
// (componentHealth) and what it waits for. When the graph cannot be built,
// they are in the status' order, and the error says why.
func componentRows(stack *v1alpha1.AppStack, health map[string]v1alpha1.StackComponentStatus) ([]componentRow, error) {
	g, err := appstack.NewGraph(&stack.Spec)
	if err != nil {
		rows := make([]componentRow, 0, len(stack.Status.Components))
		for _, cs := range stack.Status.Components {
			rows = append(rows, componentRow{Name: cs.Name, Kind: cs.Kind, Object: cs.Object, Ready: cs.Ready,
				Reason: cs.Reason, Message: cs.Message, Since: cs.Since})
		}
		return rows, err
	}
	rows := make([]componentRow, 0, len(g.Order()))
	index := map[string]int{}
	for _, name := range g.Order() {
		n := g.Node(name)
		row := componentRow{Name: name, Kind: n.Kind, Object: appstack.ObjectName(stack, name), Needs: n.Needs}
		if cs, ok := health[name]; ok {
			row.Ready, row.Reason, row.Message, row.Since = cs.Ready, cs.Reason, cs.Message, cs.Since
		} else {
			row.Reason = "NotCreated"
		}
		index[name] = len(rows)
		rows = append(rows, row)
	}
	for i := range rows {
		for _, need := range rows[i].Needs {
			if dep := &rows[index[need]]; !dep.Ready {
				rows[i].WaitingFor = append(rows[i].WaitingFor, need)
				dep.Blocks = append(dep.Blocks, rows[i].Name)
			}
		}
	}
	return rows, nil
}

func (c *cli) printStack(w io.Writer, s *stackReport) {
	if s.GraphError != "" {
		fmt.Fprintf(w, "\nThe dependency graph cannot be built: %s\n", s.GraphError)
	}
	fmt.Fprintln(w, "\nComponents, in dependency order:")
	t := newTable(w, "  ", "COMPONENT", "KIND", "OBJECT", "READY", "REASON", "NEEDS", "WAITING FOR", "MESSAGE")
	for _, r := range s.Components {
		t.row("  ", r.Name, r.Kind, strings.ToLower(r.Kind)+"/"+r.Object, yesNo(r.Ready), r.Reason,
			strings.Join(r.Needs, ","), strings.Join(r.WaitingFor, ","), oneLine(r.Message, 80))
	}
	t.flush()
	var blocking []componentRow
	for _, r := range s.Components {
		if len(r.Blocks) > 0 {
			blocking = append(blocking, r)
		}
	}
	if len(blocking) == 0 {
		return
	}
	fmt.Fprintln(w, "\nBlocking:")
	for _, r := range blocking {
		reason := r.Reason
		if reason == "" {
			reason = "not Ready"
		}
		fmt.Fprintf(w, "  %s (%s %s, %s) blocks %s\n", r.Name, r.Kind, r.Object, reason, strings.Join(r.Blocks, ", "))
	}
}
