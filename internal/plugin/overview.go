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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// overviewRow is one object of the namespace overview.
type overviewRow struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Ready string `json:"ready"`
	Phase string `json:"phase,omitempty"`
	// Reason and Message say why it is not Ready: Ready's own, or the
	// first problem condition's.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// overview is the namespace's Steward objects and why those that are not
// Ready are not.
type overview struct {
	Namespace string        `json:"namespace"`
	Objects   []overviewRow `json:"objects"`
	// Notes say which kinds could not be listed.
	Notes []string `json:"notes,omitempty"`
}

func (c *cli) overview(ctx context.Context, out string) error {
	ov := overview{Namespace: c.ns, Objects: []overviewRow{}}
	listed := 0
	var refused error
	for _, k := range kinds {
		if k.Cluster {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(k.Name + "List"))
		if err := c.list(ctx, k, list); err != nil {
			if !isForbidden(err) {
				return err
			}
			ov.Notes = append(ov.Notes, err.Error())
			if refused == nil {
				refused = err
			}
			continue
		}
		listed++
		for i := range list.Items {
			ov.Objects = append(ov.Objects, overviewRowOf(k, &list.Items[i], c.now()))
		}
	}
	if listed == 0 {
		return refused
	}
	if out != outputHuman {
		return printStructured(c.streams.Out, out, ov)
	}
	w := c.streams.Out
	if len(ov.Objects) == 0 {
		fmt.Fprintf(w, "No Steward objects in namespace %q.\n", c.ns)
	} else {
		notReady := 0
		for _, r := range ov.Objects {
			if r.Ready != string(metav1.ConditionTrue) {
				notReady++
			}
		}
		fmt.Fprintf(w, "Namespace %s: %d Steward objects, %d not Ready.\n\n", c.ns, len(ov.Objects), notReady)
		t := newTable(w, "", "KIND", "NAME", "READY", "PHASE", "REASON", "MESSAGE")
		for _, r := range ov.Objects {
			t.row("", r.Kind, r.Name, r.Ready, r.Phase, r.Reason, oneLine(r.Message, 100))
		}
		t.flush()
	}
	for _, n := range ov.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
	return nil
}

func overviewRowOf(k *kind, u *unstructured.Unstructured, now time.Time) overviewRow {
	row := overviewRow{Kind: k.Name, Name: u.GetName()}
	row.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	conds := conditionsOf(u)
	var problems []string
	row.Ready, problems = readiness(u, conds, now)
	for _, cond := range conds {
		if cond.Type == v1alpha1.ConditionReady && cond.Status != metav1.ConditionTrue {
			row.Reason, row.Message = cond.Reason, cond.Message
			return row
		}
	}
	if len(problems) > 0 {
		row.Message = problems[0]
	}
	return row
}
