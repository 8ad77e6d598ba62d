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

package database

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/stuckpods"
)

// roleOf is the role a pod is labelled with, which the Services select:
// primary for status.primary, replica for the others.
func roleOf(db *v1alpha1.Database, pod string) engine.Role {
	primary := db.PrimaryPod()
	if c := db.Status.RoleChange; c != nil && c.Type == v1alpha1.RoleChangeFailover {
		// A failover begins once the old primary is fenced: the
		// read-write Service can point at the promoted instance at once,
		// which takes writes as soon as its promotion ends.
		primary = c.To
	}
	if pod == primary {
		return engine.RolePrimary
	}
	return engine.RoleReplica
}

// instancePods lists the pods of the Database's instances: those of its
// StatefulSet, <name>-<ordinal>.
func (r *Reconciler) instancePods(ctx context.Context, db *v1alpha1.Database) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(db.Namespace), client.MatchingLabels(SelectorLabels(db))); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := list.Items[:0]
	for _, pod := range list.Items {
		if isInstancePod(db, pod.Name) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// isInstancePod reports whether a pod name is <name>-<ordinal>.
func isInstancePod(db *v1alpha1.Database, pod string) bool {
	ordinal, ok := strings.CutPrefix(pod, db.Name+"-")
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(ordinal, 10, 32)
	return err == nil
}

// replaceStuckPods deletes the instance pods that cannot start and still
// run an older revision of the StatefulSet. With ordered pod management
// the StatefulSet controller replaces a pod only after it was ready, which
// a pod that cannot be scheduled, pulled or started never is: the spec
// change that removes the cause (smaller requests, another image) would
// wait forever. Such a pod serves nothing and its volume stays, so nothing
// is lost; the StatefulSet creates it again from the current revision.
func (r *Reconciler) replaceStuckPods(ctx context.Context, db *v1alpha1.Database, sts *appsv1.StatefulSet, pods []corev1.Pod) error {
	current := sts.Status.UpdateRevision
	if current == "" || sts.Status.ObservedGeneration < sts.Generation {
		return nil // the StatefulSet controller has not seen the change yet
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == current {
			continue
		}
		p, stuck := stuckpods.CannotStart(pod)
		if !stuck {
			continue
		}
		uid := pod.UID
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid})
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted already; the cache had not seen it go
		case err != nil:
			return fmt.Errorf("replacing pod %s, which cannot start: %w", pod.Name, err)
		}
		r.Recorder.Eventf(db, pod, corev1.EventTypeNormal, v1alpha1.EventReplacedPod, "Replace",
			"Deleted %s, which could not start on the previous spec (%s), so that it starts again on the current one", pod.Name, p.Message)
	}
	return nil
}

// labelPatch is a role label patched onto a pod, the pod's version it was
// patched from and the version the patch made.
type labelPatch struct{ role, from, to string }

// cacheBehind reports whether the cached pod predates the patch l, so
// that it cannot show the label yet: its version is the one patched from,
// or older than the one the patch made.
func (l labelPatch) cacheBehind(pod *corev1.Pod) bool {
	if pod.ResourceVersion == l.from {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, l.to)
	return err == nil && c < 0
}

// labelRoles puts the steward.dev/role label on every pod of the Database,
// which the read-write and read-only Services select on.
func (r *Reconciler) labelRoles(ctx context.Context, db *v1alpha1.Database, pods []corev1.Pod) error {
	for i := range pods {
		pod := &pods[i]
		role := string(roleOf(db, pod.Name))
		key := string(pod.UID)
		if pod.Labels[v1alpha1.LabelRole] == role {
			r.labelled.Delete(key) // the cache has caught up
			continue
		}
		// A pod labelled a moment ago may still lack the label in the
		// cache: patching it again would be a wasted write. A version of
		// the pod newer than the patch, though, is judged afresh: it may
		// carry another label since (one a reconcile on an older copy of
		// the Database put there).
		if l, ok := r.labelled.Load(key); ok && l.(labelPatch).role == role && l.(labelPatch).cacheBehind(pod) {
			continue
		}
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		from := pod.ResourceVersion
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, v1alpha1.LabelRole, role)
		if err := r.Client.Patch(ctx, pod, client.RawPatch(client.Merge.Type(), patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling pod %s as %s: %w", pod.Name, role, err)
		}
		r.labelled.Store(key, labelPatch{role: role, from: from, to: pod.ResourceVersion})
	}
	return nil
}
