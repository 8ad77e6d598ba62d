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

package workloadpolicy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
)

// maxViolators is how many violators status.violators lists (its schema's
// maxItems), and maxInMessage how many the Compliant condition names.
const (
	maxViolators = 100
	maxInMessage = 5
)

// violator is an object that breaks a policy, and the first rule it breaks.
type violator struct {
	obj client.Object
	v1alpha1.PolicyViolator
}

// itemsOf returns the objects of a list of a kind a policy reads.
func itemsOf(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading a %T: %w", list, err)
	}
	objs := make([]client.Object, 0, len(items))
	for _, it := range items {
		objs = append(objs, it.(client.Object))
	}
	return objs, nil
}

// check returns the objects that break p, as they stand.
func check(p *v1alpha1.WorkloadPolicy, objs []client.Object) []violator {
	var found []violator
	for _, o := range objs {
		errs := p.Check(o, nil)
		if len(errs) == 0 {
			continue
		}
		found = append(found, violator{obj: o, PolicyViolator: v1alpha1.PolicyViolator{
			Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName(), Message: errs[0].Error(),
		}})
	}
	return found
}

// kindOf is the kind of one of the objects a policy reads; typed objects
// read from a client have no TypeMeta.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *v1alpha1.WebApp:
		return "WebApp"
	case *v1alpha1.Cache:
		return "Cache"
	case *v1alpha1.Database:
		return "Database"
	case *v1alpha1.AppStack:
		return "AppStack"
	}
	return fmt.Sprintf("%T", o)
}

// computeStatus is p's status with found, its violators, sorted. unwatched
// are the namespaces of p's environment the operator does not watch
// (--watch-namespaces), whose objects were not checked: the conditions
// name them rather than claim the whole environment complies.
func computeStatus(p *v1alpha1.WorkloadPolicy, found []violator, unwatched []string) v1alpha1.WorkloadPolicyStatus {
	slices.SortFunc(found, func(a, b violator) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	next := *p.Status.DeepCopy()
	next.ObservedGeneration = p.Generation
	next.Violations = int32(len(found))
	next.Violators = nil
	for i := range found[:min(len(found), maxViolators)] {
		next.Violators = append(next.Violators, found[i].PolicyViolator)
	}
	env := p.Spec.Environment
	checked := fmt.Sprintf("Checked the objects of the namespaces labelled %s=%s", p.EnvironmentLabel(), env)
	noViolations := "No object breaks the policy"
	if len(unwatched) > 0 {
		slices.Sort(unwatched)
		checked += fmt.Sprintf("; not those of %s, which the operator does not watch (--watch-namespaces)", strings.Join(unwatched, ", "))
		noViolations += " in the namespaces checked"
	}
	conditions.SetOne(&next.Conditions, p.Generation, v1alpha1.ConditionReady, conditions.True(v1alpha1.ReasonChecked, checked))
	compliant := conditions.True(v1alpha1.ReasonNoViolations, noViolations)
	if len(found) > 0 {
		compliant = conditions.False(v1alpha1.ReasonViolations, violationsMessage(found))
	}
	conditions.SetOne(&next.Conditions, p.Generation, v1alpha1.ConditionCompliant, compliant)
	return next
}

// violationsMessage names the first violators and counts the others.
func violationsMessage(found []violator) string {
	noun := "objects break"
	if len(found) == 1 {
		noun = "object breaks"
	}
	var named []string
	for _, v := range found[:min(len(found), maxInMessage)] {
		named = append(named, fmt.Sprintf("%s %s/%s: %s", v.Kind, v.Namespace, v.Name, v.Message))
	}
	msg := fmt.Sprintf("%d %s the policy: %s", len(found), noun, strings.Join(named, "; "))
	if more := len(found) - maxInMessage; more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return msg
}
