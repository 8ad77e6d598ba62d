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
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// observed is what a reconcile read of a stack's objects, with the objects
// its spec asks for. Carrying out a plan updates the live objects it holds.
type observed struct {
	// graph orders the components; nil when invalid says why it cannot.
	graph   *appstack.Graph
	invalid error
	// desired is the spec of every component, from the profile.
	desired appstack.Desired
	// components are the spec's components in dependency order.
	components []*component
	// dropped are the stack's objects that are not, or no longer, in the
	// spec: being deleted, they are all of them.
	dropped []*component
	// backups are the Backups of the dropped databases whose final backup
	// the policy asks for, by Database name; absent when there is none.
	backups map[string]*v1alpha1.Backup
	// ingress is the stack's Ingress.
	ingress *component
	// serviceMonitors tells whether the cluster serves the ServiceMonitor
	// kind; monitors are the stack's ServiceMonitors then.
	serviceMonitors bool
	monitors        []unstructured.Unstructured
}

// observe reads the stack's components, those it has that left the spec,
// its Ingress and its ServiceMonitors. A spec the graph cannot order is
// not an error: obs.invalid says why, and nothing else is read.
func (r *Reconciler) observe(ctx context.Context, stack *v1alpha1.AppStack) (*observed, error) {
	obs := &observed{}
	obs.graph, obs.invalid = appstack.NewGraph(&stack.Spec)
	if obs.graph == nil {
		return obs, nil
	}
	obs.serviceMonitors, obs.ingress = r.HasServiceMonitors(), ingress(stack)
	obs.desired = Render(stack, obs.serviceMonitors)
	obs.components = components(stack, obs.graph, obs.desired)
	for _, c := range obs.components {
		if err := c.read(ctx, r.Client, stack.Namespace); err != nil {
			return nil, err
		}
	}
	all, err := owned(ctx, r.Client, stack)
	if err != nil {
		return nil, err
	}
	obs.dropped = dropped(all, obs.components)
	if err := r.observeEdges(ctx, stack, obs); err != nil {
		return nil, err
	}
	return obs, nil
}

// observeTeardown reads what deleting the stack removes: its components,
// its Ingress and its ServiceMonitors.
func (r *Reconciler) observeTeardown(ctx context.Context, stack *v1alpha1.AppStack) (*observed, error) {
	obs := &observed{serviceMonitors: r.HasServiceMonitors(), ingress: ingress(stack)}
	obs.graph, obs.invalid = appstack.NewGraph(&stack.Spec)
	var err error
	if obs.dropped, err = owned(ctx, r.Client, stack); err != nil {
		return nil, err
	}
	// Whatever the spec says, the Ingress goes: it is only read from the
	// cache.
	obs.ingress.desired = nil
	if err := r.observeEdges(ctx, stack, obs); err != nil {
		return nil, err
	}
	return obs, nil
}

// observeEdges reads the Backups of the dropped databases, the Ingress and
// the ServiceMonitors.
func (r *Reconciler) observeEdges(ctx context.Context, stack *v1alpha1.AppStack, obs *observed) error {
	var err error
	if obs.backups, err = r.readBackups(ctx, stack, obs.dropped); err != nil {
		return err
	}
	if err := r.readIngress(ctx, obs.ingress); err != nil {
		return err
	}
	obs.monitors, err = r.listMonitors(ctx, stack, obs.serviceMonitors)
	return err
}

// read fills c.live from the cache.
func (c *component) read(ctx context.Context, reader client.Reader, ns string) error {
	err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.live.GetName()}, c.live)
	switch {
	case apierrors.IsNotFound(err):
		c.exists = false
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", c.kind, c.live.GetName(), err)
	}
	c.exists = true
	return nil
}

// readIngress reads the stack's Ingress from the cache and, when the spec
// has one the cache does not, from the API server: the cache may not have
// the Ingress created a moment ago.
func (r *Reconciler) readIngress(ctx context.Context, in *component) error {
	if err := in.read(ctx, r.Client, in.live.GetNamespace()); err != nil || in.exists || in.desired == nil {
		return err
	}
	in.confirmed = true
	return in.read(ctx, r.APIReader, in.live.GetNamespace())
}

// listMonitors lists the stack's ServiceMonitors, from the API server,
// when the cluster serves the kind.
func (r *Reconciler) listMonitors(ctx context.Context, stack *v1alpha1.AppStack, served bool) ([]unstructured.Unstructured, error) {
	if !served {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(serviceMonitorGVK.GroupVersion().WithKind("ServiceMonitorList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(stack.Namespace), client.MatchingLabels{v1alpha1.LabelAppStack: stack.Name}); err != nil {
		return nil, fmt.Errorf("listing ServiceMonitors: %w", err)
	}
	return list.Items, nil
}

// readBackups reads the Backup of each database among comps whose final
// backup the policy asks for.
func (r *Reconciler) readBackups(ctx context.Context, stack *v1alpha1.AppStack, comps []*component) (map[string]*v1alpha1.Backup, error) {
	out := map[string]*v1alpha1.Backup{}
	for _, c := range comps {
		db, ok := c.live.(*v1alpha1.Database)
		if !ok || !needsFinalBackup(stack, db) {
			continue
		}
		backup := &v1alpha1.Backup{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.BackupName()}, backup)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading Backup %s of Database %s: %w", db.BackupName(), db.Name, err)
		default:
			out[db.Name] = backup
		}
	}
	return out, nil
}

// owned lists the stack's objects of every component kind, those the
// stack controls, by kind and object name.
func owned(ctx context.Context, reader client.Reader, stack *v1alpha1.AppStack) ([]*component, error) {
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{appstack.KindWebApp, &v1alpha1.WebAppList{}},
		{appstack.KindAppConfig, &v1alpha1.AppConfigList{}},
		{appstack.KindCache, &v1alpha1.CacheList{}},
		{appstack.KindDatabase, &v1alpha1.DatabaseList{}},
	}
	var out []*component
	for _, l := range lists {
		if err := reader.List(ctx, l.list, client.InNamespace(stack.Namespace), client.MatchingLabels{v1alpha1.LabelAppStack: stack.Name}); err != nil {
			return nil, fmt.Errorf("listing the stack's %ss: %w", l.kind, err)
		}
		items, err := meta.ExtractList(l.list)
		if err != nil {
			return nil, fmt.Errorf("reading the list of the stack's %ss: %w", l.kind, err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			if !metav1.IsControlledBy(obj, stack) {
				continue
			}
			name := strings.TrimPrefix(obj.GetName(), stack.Name+"-")
			out = append(out, &component{name: name, kind: l.kind, live: obj, exists: true})
		}
	}
	return out, nil
}
