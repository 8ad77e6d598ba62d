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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
)

// outcome is what carrying out a plan did, in order, for its events.
type outcome struct {
	// created are the components whose objects were created.
	created []*component
	// removed are the removal steps done.
	removed []removeStep
}

// applier applies and deletes the stack's objects.
func (r *Reconciler) applier() apply.Applier {
	return apply.Applier{Client: r.Client, Reader: r.APIReader}
}

// carryOut applies the plan: it removes the components that left the spec,
// applies the components in order, then sees to the Ingress and the
// ServiceMonitors; an invalid spec's plan has nothing to do. Applying a
// component updates what obs holds of it (an object just created or changed
// is not Ready yet, one that failed to apply is Degraded), and what comes
// after it depends on that: the plan is made again from obs after each
// component, so that p is, in the end, the plan that was carried out.
func (r *Reconciler) carryOut(ctx context.Context, stack *v1alpha1.AppStack, obs *observed, p *plan, prev map[string]v1alpha1.StackComponentStatus, now time.Time) (outcome, error) {
	var out outcome
	if err := r.remove(ctx, p.removal, &out); err != nil {
		return out, err
	}
	for i := range p.steps {
		if !p.steps[i].apply {
			continue
		}
		if err := r.applyComponent(ctx, stack, p.steps[i].c, &out); err != nil {
			return out, err
		}
		*p = planDeploy(stack, obs, prev, now)
	}
	err := r.applyEdges(ctx, stack, *p)
	return out, err
}

// applyComponent creates or updates one component's object. A problem the
// user must fix is kept in c.problem; other errors are returned.
func (r *Reconciler) applyComponent(ctx context.Context, stack *v1alpha1.AppStack, c *component, out *outcome) error {
	created, err := r.isNew(ctx, stack.Namespace, c)
	if err != nil {
		return err
	}
	err = r.applier().Apply(ctx, c.desired, c.live, stack.UID)
	if reason, ok := apply.UserError(err); ok {
		c.problem = &conditions.Problem{Reason: reason, Message: err.Error()}
		return nil
	}
	if err != nil {
		return err
	}
	c.exists, c.problem = true, nil
	if created {
		out.created = append(out.created, c)
	}
	return nil
}

// isNew reports whether the component's object does not exist yet. The
// cache may not have an object the stack created a moment ago; unless
// that was done already, the API server is asked before the creation is
// announced.
func (r *Reconciler) isNew(ctx context.Context, ns string, c *component) (bool, error) {
	if c.exists || c.confirmed {
		return !c.exists, nil
	}
	live := emptyObject(c.kind, c.object())
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.object()}, live)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("looking up %s %s: %w", c.kind, c.object(), err)
	}
	return false, nil
}

// applyEdges deletes the Ingress the spec no longer has, applies the
// ServiceMonitors the plan wants and deletes the others.
func (r *Reconciler) applyEdges(ctx context.Context, stack *v1alpha1.AppStack, p plan) error {
	a := r.applier()
	if p.deleteIngress != nil {
		if err := a.Delete(ctx, p.deleteIngress, stack.UID); err != nil {
			return fmt.Errorf("deleting the Ingress the spec no longer has: %w", err)
		}
	}
	for _, sm := range p.monitors {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(serviceMonitorGVK)
		if err := a.Apply(ctx, apply.Typed{Object: sm}, live, stack.UID); err != nil {
			return err
		}
	}
	return r.deleteAll(ctx, stack.UID, p.unwanted)
}

// deleteAll deletes objects the owner controls.
func (r *Reconciler) deleteAll(ctx context.Context, owner types.UID, objs []*unstructured.Unstructured) error {
	a := r.applier()
	for _, obj := range objs {
		if err := a.Delete(ctx, obj, owner); err != nil {
			return fmt.Errorf("deleting %s: %w", obj.GetKind(), err)
		}
	}
	return nil
}

// remove carries out the steps of a removal, in order.
func (r *Reconciler) remove(ctx context.Context, rm removal, out *outcome) error {
	for _, s := range rm.steps {
		if s.backup != nil {
			if err := r.askFinalBackup(ctx, s.backup, s.token); err != nil {
				return err
			}
		} else if err := r.deleteComponent(ctx, s.c); err != nil {
			return err
		}
		out.removed = append(out.removed, s)
	}
	return nil
}

// deleteComponent deletes a component's object, the one that was read.
func (r *Reconciler) deleteComponent(ctx context.Context, c *component) error {
	uid := c.live.GetUID()
	err := r.Client.Delete(ctx, c.live, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", c.kind, c.object(), err)
	}
	return nil
}

// askFinalBackup asks the Backup for a run named token.
func (r *Reconciler) askFinalBackup(ctx context.Context, backup *v1alpha1.Backup, token string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationBackupNow, token)
	if err := r.Client.Patch(ctx, backup, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("asking Backup %s for the final backup: %w", backup.Name, err)
	}
	return nil
}
