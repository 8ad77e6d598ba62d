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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

// teardownRank orders the deletion of components of different kinds that
// do not depend on each other: apps first, databases last.
var teardownRank = map[string]int{appstack.KindWebApp: 0, appstack.KindAppConfig: 1, appstack.KindCache: 2, appstack.KindDatabase: 3}

// removeDropped deletes the components the spec no longer has, apps before
// the rest, and a database only after its final backup. It returns how
// many are still being removed.
func (r *Reconciler) removeDropped(ctx context.Context, stack *v1alpha1.AppStack, keep map[string]*component) (int, error) {
	all, err := owned(ctx, r.Client, stack)
	if err != nil {
		return 0, err
	}
	var dropped []*component
	for _, c := range all {
		if k, ok := keep[c.name]; ok && k.kind == c.kind {
			continue
		}
		dropped = append(dropped, c)
	}
	if len(dropped) == 0 {
		return 0, nil
	}
	// Without the graph of what is gone, kinds give the order: an app may
	// bind a database or cache, nothing binds an app.
	_, _, err = r.deleteInOrder(ctx, stack, dropped, func(c *component) []string {
		var before []string
		for _, o := range dropped {
			if teardownRank[o.kind] < teardownRank[c.kind] {
				before = append(before, o.name)
			}
		}
		return before
	})
	return len(dropped), err
}

// tearDown deletes the stack's components in reverse dependency order. It
// reports done once none is left.
func (r *Reconciler) tearDown(ctx context.Context, stack *v1alpha1.AppStack, st *v1alpha1.AppStackStatus) (bool, ctrl.Result, error) {
	st.Phase = v1alpha1.AppStackDeleting
	// The edges of the stack: first the Ingress and ServiceMonitors.
	in := &networkingv1.Ingress{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: stack.Namespace, Name: ingressName(stack)}, in); client.IgnoreNotFound(err) != nil {
		return false, ctrl.Result{}, err
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	if err := applier.Delete(ctx, in, stack.UID); err != nil {
		return false, ctrl.Result{}, err
	}
	off := stack.DeepCopy()
	off.Spec.Monitoring = nil
	if err := r.reconcileMonitoring(ctx, off, nil); err != nil {
		return false, ctrl.Result{}, err
	}

	all, err := owned(ctx, r.Client, stack)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if len(all) == 0 {
		return true, ctrl.Result{}, nil
	}
	g, gerr := appstack.NewGraph(&stack.Spec)
	waitFor := func(c *component) []string {
		var before []string
		if gerr == nil && g.Node(c.name) != nil && g.Node(c.name).Kind == c.kind {
			before = g.Dependents(c.name)
		}
		for _, o := range all {
			if teardownRank[o.kind] < teardownRank[c.kind] && (gerr != nil || g.Node(o.name) == nil) {
				before = append(before, o.name)
			}
		}
		return before
	}
	waiting, failure, err := r.deleteInOrder(ctx, stack, all, waitFor)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	var names []string
	for _, c := range all {
		names = append(names, c.kind+" "+c.object())
	}
	slices.Sort(names)
	switch {
	case failure != "":
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonFinalBackupFailed, failure),
			conditions.False(v1alpha1.ReasonFinalBackupFailed, "Deletion is stopped"),
			conditions.True(v1alpha1.ReasonFinalBackupFailed, failure))
	case waiting != "":
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonDeleting, "Deleting in reverse order: "+waiting),
			conditions.True(v1alpha1.ReasonDeleting, "Left: "+strings.Join(names, ", ")),
			conditions.False(v1alpha1.ReasonHealthy, "Nothing stops the deletion"))
	default:
		conditions.Set(&st.Conditions, stack.Generation,
			conditions.False(v1alpha1.ReasonDeleting, "Deleting: "+strings.Join(names, ", ")),
			conditions.True(v1alpha1.ReasonDeleting, "Left: "+strings.Join(names, ", ")),
			conditions.False(v1alpha1.ReasonHealthy, "Nothing stops the deletion"))
	}
	return false, ctrl.Result{RequeueAfter: poll}, nil
}

// deleteInOrder deletes each component of comps once none of the names
// before(c) is left among them, and a database only after its final
// backup. It returns what the first waiting component waits for, and a
// final backup's failure.
func (r *Reconciler) deleteInOrder(ctx context.Context, stack *v1alpha1.AppStack, comps []*component, before func(*component) []string) (waiting, failure string, err error) {
	left := map[string]bool{}
	for _, c := range comps {
		left[c.name] = true
	}
	slices.SortStableFunc(comps, func(a, b *component) int { return teardownRank[a.kind] - teardownRank[b.kind] })
	for _, c := range comps {
		if !c.live.GetDeletionTimestamp().IsZero() {
			if waiting == "" {
				waiting = fmt.Sprintf("%s %s is being deleted", c.kind, c.object())
			}
			continue
		}
		blocker := ""
		for _, b := range before(c) {
			if left[b] && b != c.name {
				blocker = b
				break
			}
		}
		if blocker != "" {
			if waiting == "" {
				waiting = fmt.Sprintf("%s %s waits for %s to be deleted first", c.kind, c.object(), blocker)
			}
			continue
		}
		if db, ok := c.live.(*v1alpha1.Database); ok {
			done, fail, err := r.finalBackup(ctx, stack, db)
			if err != nil {
				return "", "", err
			}
			if fail != "" {
				return waiting, fail, nil
			}
			if !done {
				if waiting == "" {
					waiting = fmt.Sprintf("the final backup of Database %s is running", db.Name)
				}
				continue
			}
		}
		uid := c.live.GetUID()
		if err := r.Client.Delete(ctx, c.live, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return "", "", fmt.Errorf("deleting %s %s: %w", c.kind, c.object(), err)
		}
		r.Recorder.Eventf(stack, c.live, corev1.EventTypeNormal, v1alpha1.EventComponentDeleted, "Delete", "Deleted %s %s", c.kind, c.object())
	}
	return waiting, "", nil
}

// finalBackup runs a last backup of a production database whose backups are
// on, and reports whether it succeeded (done), or why it failed. Other
// databases need none.
func (r *Reconciler) finalBackup(ctx context.Context, stack *v1alpha1.AppStack, db *v1alpha1.Database) (done bool, failure string, err error) {
	// The stack's spec decides, so that turning a database's backups off
	// in the stack lets it go without one; a database dropped from the
	// spec keeps its own.
	b := db.Spec.Backup
	for name, spec := range appstack.Render(stack).Databases {
		if appstack.ObjectName(stack, name) == db.Name {
			b = spec.Backup
		}
	}
	if stack.Spec.Environment != v1alpha1.StackProduction || b == nil || (b.Enabled != nil && !*b.Enabled) {
		return true, "", nil
	}
	backup := &v1alpha1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.BackupName()}, backup); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return false, "", err
		}
		if !conditions.EverTrue(db.Status.Conditions, v1alpha1.ConditionReady, v1alpha1.ReasonCreating) {
			return true, "", nil // never served: nothing to back up
		}
		return false, fmt.Sprintf("Database %s has no Backup %s to take its final backup with", db.Name, db.BackupName()), nil
	}
	token := "final-" + string(stack.UID)
	if retry := stack.Annotations[v1alpha1.AnnotationRetryFinalBackup]; retry != "" {
		token += "-" + retry
	}
	if backup.Annotations[v1alpha1.AnnotationBackupNow] != token {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationBackupNow, token)
		if err := r.Client.Patch(ctx, backup, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return false, "", fmt.Errorf("asking Backup %s for the final backup: %w", backup.Name, err)
		}
		r.Recorder.Eventf(stack, backup, corev1.EventTypeNormal, v1alpha1.ReasonFinalBackup, "Delete",
			"Taking the final backup of Database %s before deleting it", db.Name)
		return false, "", nil
	}
	job := backup.ManualJobName(token)
	for _, run := range backup.Status.History {
		if run.Job != job || run.CompletionTime == nil {
			continue
		}
		if run.Succeeded {
			return true, "", nil
		}
		return false, fmt.Sprintf("The final backup of Database %s failed (%s), so it is not deleted. Fix the cause and set the annotation %s on the AppStack to a new value to try again, or turn the database's backups off in the stack to delete it without one",
			db.Name, run.Message, v1alpha1.AnnotationRetryFinalBackup), nil
	}
	return false, "", nil
}
