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
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxEvents is how many Warning events status shows.
const maxEvents = 10

// eventRow is one Warning event.
type eventRow struct {
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
	Reason   string       `json:"reason"`
	Message  string       `json:"message"`
	Count    int32        `json:"count,omitempty"`
}

// warningEvents are the object's newest Warning events, newest first:
// those of this object (by UID), not of an earlier one of the same name.
// The operator emits them through events.k8s.io, which the core API
// serves as well.
func (c *cli) warningEvents(ctx context.Context, obj client.Object) ([]eventRow, error) {
	list := &corev1.EventList{}
	sel := fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.uid", string(obj.GetUID())),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning),
	)
	opts := []client.ListOption{client.MatchingFieldsSelector{Selector: sel}}
	ns := obj.GetNamespace()
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.c.List(ctx, list, opts...); err != nil {
		return nil, apiError(err, "list", core("events"), "event", ns, "")
	}
	rows := make([]eventRow, 0, len(list.Items))
	for i := range list.Items {
		e := &list.Items[i]
		count := e.Count
		if e.Series != nil {
			count = e.Series.Count
		}
		rows = append(rows, eventRow{LastSeen: lastSeen(e), Reason: e.Reason, Message: e.Message, Count: count})
	}
	slices.SortStableFunc(rows, func(a, b eventRow) int {
		return b.LastSeen.Compare(a.LastSeen.Time)
	})
	return rows[:min(len(rows), maxEvents)], nil
}

// lastSeen is when the event last happened, whichever API wrote it: the
// latest of the times its reporter gave, as kubectl shows them, or, for an
// event that gives none, when the Event was created.
func lastSeen(e *corev1.Event) *metav1.Time {
	var t metav1.Time
	later := func(u metav1.Time) {
		if u.After(t.Time) {
			t = u
		}
	}
	later(e.FirstTimestamp)
	later(e.LastTimestamp)
	later(metav1.Time(e.EventTime))
	if e.Series != nil {
		later(metav1.Time(e.Series.LastObservedTime))
	}
	if t.IsZero() {
		t = e.CreationTimestamp
	}
	return &t
}

func (c *cli) printEvents(w io.Writer, events []eventRow) {
	if len(events) == 0 {
		fmt.Fprintln(w, "\nNo Warning events.")
		return
	}
	fmt.Fprintln(w, "\nWarning events, newest first:")
	t := newTable(w, "  ", "AGE", "REASON", "COUNT", "MESSAGE")
	for _, e := range events {
		count := ""
		if e.Count > 1 {
			count = fmt.Sprint(e.Count)
		}
		t.row("  ", age(c.now(), e.LastSeen), e.Reason, count, oneLine(e.Message, 120))
	}
	t.flush()
}

// extraStatus are the fields of u's status that known (a typed status)
// does not have: what a newer operator reports, such as a recoverability
// window or the last verification of a backup. They are shown only when
// present, as compact JSON.
func extraStatus(u *unstructured.Unstructured, known any) []field {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	names := jsonNames(reflect.TypeOf(known))
	var out []field
	for _, k := range slices.Sorted(maps.Keys(status)) {
		if names[k] {
			continue
		}
		b, err := json.Marshal(status[k])
		if err != nil {
			continue
		}
		out = append(out, field{Name: humanName(k), Value: strings.Trim(string(b), `"`)})
	}
	return out
}

// jsonNames are the JSON names of a struct type's fields.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// humanName turns a JSON name such as recoverabilityWindow into
// "Recoverability window".
func humanName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case i == 0:
			b.WriteString(strings.ToUpper(string(r)))
		case r >= 'A' && r <= 'Z':
			b.WriteByte(' ')
			b.WriteString(strings.ToLower(string(r)))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
