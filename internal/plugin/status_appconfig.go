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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// configReport is what status says about an AppConfig beside its
// conditions: its revisions and its consumers' states.
type configReport struct {
	CurrentRevision string                    `json:"currentRevision,omitempty"`
	LatestRevision  string                    `json:"latestRevision,omitempty"`
	PinnedRevision  string                    `json:"pinnedRevision,omitempty"`
	Revisions       []v1alpha1.ConfigRevision `json:"revisions,omitempty"`
	Consumers       []v1alpha1.ConfigConsumer `json:"consumers,omitempty"`
}

func (c *cli) configDetails(_ context.Context, u *unstructured.Unstructured, rep *report) error {
	ac := &v1alpha1.AppConfig{}
	if err := fromUnstructured(u, ac); err != nil {
		return err
	}
	st := ac.Status
	revision := orDash(st.CurrentRevision)
	switch {
	case ac.Spec.Revision != "":
		revision += fmt.Sprintf(" (pinned by spec.revision; the spec renders %s)", orDash(st.LatestRevision))
	case st.LatestRevision != "" && st.LatestRevision != st.CurrentRevision:
		revision += fmt.Sprintf(" (the spec renders %s since %s, not rolled out yet)", st.LatestRevision, ago(c, st.LatestRevisionTime))
	}
	rep.Summary = []field{
		{"Application", ac.Spec.Application},
		{"Environment", ac.Spec.Environment},
		{"Revision", revision},
		{"ConfigMap", "configmap/" + ac.ConfigName()},
	}
	rep.AppConfig = &configReport{
		CurrentRevision: st.CurrentRevision,
		LatestRevision:  st.LatestRevision,
		PinnedRevision:  ac.Spec.Revision,
		Revisions:       st.Revisions,
		Consumers:       st.Consumers,
	}
	return nil
}

func (c *cli) printConfig(w io.Writer, r *configReport) {
	if len(r.Revisions) > 0 {
		fmt.Fprintln(w, "\nRevisions, newest first:")
		t := newTable(w, "  ", "REVISION", "CREATED", "KEYS", "NOTE")
		for _, rev := range r.Revisions {
			var marks []string
			for _, m := range []struct {
				name, mark string
			}{{r.CurrentRevision, "current"}, {r.LatestRevision, "latest"}, {r.PinnedRevision, "pinned"}} {
				if rev.Name == m.name {
					marks = append(marks, m.mark)
				}
			}
			t.row("  ", rev.Name, ago(c, &rev.Created), fmt.Sprint(rev.Keys), strings.Join(marks, ", "))
		}
		t.flush()
	}
	if len(r.Consumers) == 0 {
		fmt.Fprintln(w, "\nConsumers: none (no WebApp's spec.config names it, no Deployment or StatefulSet opts in)")
		return
	}
	fmt.Fprintln(w, "\nConsumers:")
	t := newTable(w, "  ", "KIND", "NAME", "KEYS", "REVISION", "STATE", "SINCE", "MESSAGE")
	for _, cs := range r.Consumers {
		keys := "all"
		if len(cs.Keys) > 0 {
			keys = strings.Join(cs.Keys, ",")
		}
		t.row("  ", cs.Kind, cs.Name, keys, cs.Revision, string(cs.State), age(c.now(), cs.Since), oneLine(cs.Message, 80))
	}
	t.flush()
}
