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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/labels"
)

// component is one component of a stack, desired and live.
type component struct {
	name, kind string
	// desired is the object the spec asks for; nil for one removed from the spec.
	desired client.Object
	// live holds the object as read; exists tells whether it does.
	live   client.Object
	exists bool
}

// object is the Steward object's name.
func (c *component) object() string { return c.live.GetName() }

// configTrouble are the AppConfig reasons that are its own trouble, not a
// consumer's rollout.
var configTrouble = []string{
	v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonSecretNotFound, v1alpha1.ReasonRevisionNotFound,
	v1alpha1.ReasonNameConflict, v1alpha1.ReasonApplyFailed,
}

// readiness returns whether the live object is Ready for its current
// generation, its Ready reason and message, and whether its Degraded
// condition is True. The stack's AppConfig counts as Ready once it has
// rendered a revision for its spec and has no trouble of its own: a rollout
// to the apps is theirs to report, and must not hold the apps not created
// yet.
func (c *component) readiness() (ready bool, reason, message string, degraded bool) {
	if !c.exists {
		return false, v1alpha1.ReasonNotCreated, fmt.Sprintf("%s %s is not created yet", c.kind, c.object()), false
	}
	var conds []metav1.Condition
	var observed int64
	switch o := c.live.(type) {
	case *v1alpha1.Database:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *v1alpha1.Cache:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *v1alpha1.WebApp:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	case *v1alpha1.AppConfig:
		conds, observed = o.Status.Conditions, o.Status.ObservedGeneration
	}
	cond := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	switch {
	case cond == nil:
		return false, "Pending", fmt.Sprintf("%s %s has no status yet", c.kind, c.object()), false
	case observed != c.live.GetGeneration():
		return false, cond.Reason, fmt.Sprintf("%s %s has not caught up with its spec yet", c.kind, c.object()), false
	}
	degraded = meta.IsStatusConditionTrue(conds, v1alpha1.ConditionDegraded)
	if ac, ok := c.live.(*v1alpha1.AppConfig); ok {
		if ac.Status.CurrentRevision != "" && !slices.Contains(configTrouble, cond.Reason) {
			return true, cond.Reason, fmt.Sprintf("revision %s rendered: %s", ac.Status.CurrentRevision, cond.Message), false
		}
		return false, cond.Reason, cond.Message, slices.Contains(configTrouble, cond.Reason)
	}
	return cond.Status == metav1.ConditionTrue, cond.Reason, cond.Message, degraded
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

// emptyObject is an empty object of a component's kind, named.
func emptyObject(kind, name string) client.Object {
	var obj client.Object
	switch kind {
	case appstack.KindDatabase:
		obj = &v1alpha1.Database{}
	case appstack.KindCache:
		obj = &v1alpha1.Cache{}
	case appstack.KindWebApp:
		obj = &v1alpha1.WebApp{}
	default:
		obj = &v1alpha1.AppConfig{}
	}
	obj.SetName(name)
	return obj
}

// objectMeta is the metadata of a stack's component object.
func objectMeta(stack *v1alpha1.AppStack, component, kind string) metav1.ObjectMeta {
	l := labels.Common(appstack.ObjectName(stack, component), strings.ToLower(kind))
	l[v1alpha1.LabelAppStack] = stack.Name
	return metav1.ObjectMeta{
		Name: appstack.ObjectName(stack, component), Namespace: stack.Namespace, Labels: l,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "AppStack", Name: stack.Name, UID: stack.UID,
			Controller: new(true), BlockOwnerDeletion: new(true),
		}},
	}
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// components builds the stack's components in dependency order, with the
// objects the spec asks for.
func components(stack *v1alpha1.AppStack, g *appstack.Graph, d appstack.Desired) []*component {
	var out []*component
	for _, name := range g.Order() {
		n := g.Node(name)
		c := &component{name: name, kind: n.Kind, live: emptyObject(n.Kind, appstack.ObjectName(stack, name))}
		om := objectMeta(stack, name, n.Kind)
		switch n.Kind {
		case appstack.KindDatabase:
			c.desired = &v1alpha1.Database{TypeMeta: typeMeta(n.Kind), ObjectMeta: om, Spec: d.Databases[name]}
		case appstack.KindCache:
			c.desired = &v1alpha1.Cache{TypeMeta: typeMeta(n.Kind), ObjectMeta: om, Spec: d.Caches[name]}
		case appstack.KindWebApp:
			c.desired = &v1alpha1.WebApp{TypeMeta: typeMeta(n.Kind), ObjectMeta: om, Spec: d.Apps[name]}
		case appstack.KindAppConfig:
			c.desired = &v1alpha1.AppConfig{TypeMeta: typeMeta(n.Kind), ObjectMeta: om, Spec: *d.Config}
		}
		out = append(out, c)
	}
	return out
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
			return nil, err
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
