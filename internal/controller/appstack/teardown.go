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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/status"
)

// teardown is the plan for deleting a stack: its edges first, then its
// components in reverse dependency order.
type teardown struct {
	// ingress and monitors are the stack's Ingress, when it exists, and
	// ServiceMonitors.
	ingress  client.Object
	monitors []*unstructured.Unstructured
	removal  removal
}

// tearDown deletes a deleted stack's objects, its components in reverse
// dependency order, and lets the stack go once none is left.
func (r *Reconciler) tearDown(ctx context.Context, stack *v1alpha1.AppStack) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(stack, v1alpha1.AppStackFinalizer) {
		return ctrl.Result{}, nil
	}
	obs, err := r.observeTeardown(ctx, stack)
	if err != nil {
		return ctrl.Result{}, err
	}
	t := planTeardown(stack, obs)
	out, err := r.carryOutTeardown(ctx, stack, t)
	r.announceRemoval(stack, out.removed)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(t.removal.left) == 0 {
		controllerutil.RemoveFinalizer(stack, v1alpha1.AppStackFinalizer)
		if err := r.Client.Update(ctx, stack); err != nil {
			return ctrl.Result{}, fmt.Errorf("removing the finalizer of AppStack %s: %w", stack.Name, err)
		}
		return ctrl.Result{}, nil
	}
	if err := status.Write(ctx, r.Client, stack, &stack.Status, teardownStatus(stack, t.removal)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: poll}, nil
}

// planTeardown decides what deleting the stack does now.
func planTeardown(stack *v1alpha1.AppStack, obs *observed) teardown {
	t := teardown{removal: planRemoval(stack, obs.dropped, obs.backups, teardownOrder(obs.graph, obs.dropped))}
	if obs.ingress.exists {
		t.ingress = obs.ingress.live
	}
	for i := range obs.monitors {
		t.monitors = append(t.monitors, &obs.monitors[i])
	}
	return t
}

// teardownOrder is, for each of the stack's components, what must be
// deleted before it: the components that depend on it, by the graph of the
// spec (g, nil when the spec cannot be ordered), and those of a kind
// deleted earlier that the graph does not have.
func teardownOrder(g *appstack.Graph, all []*component) func(*component) []string {
	return func(c *component) []string {
		var before []string
		if g != nil && g.Node(c.name) != nil && g.Node(c.name).Kind == c.kind {
			before = g.Dependents(c.name)
		}
		for _, o := range all {
			if teardownRank[o.kind] < teardownRank[c.kind] && (g == nil || g.Node(o.name) == nil) {
				before = append(before, o.name)
			}
		}
		return before
	}
}

// carryOutTeardown deletes the stack's Ingress and ServiceMonitors, then
// carries out the removal of its components.
func (r *Reconciler) carryOutTeardown(ctx context.Context, stack *v1alpha1.AppStack, t teardown) (outcome, error) {
	var out outcome
	if t.ingress != nil {
		if err := r.applier().Delete(ctx, t.ingress, stack.UID); err != nil {
			return out, fmt.Errorf("deleting the stack's Ingress: %w", err)
		}
	}
	if err := r.deleteAll(ctx, stack.UID, t.monitors); err != nil {
		return out, err
	}
	err := r.remove(ctx, t.removal, &out)
	return out, err
}
