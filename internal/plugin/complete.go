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
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Shell completion lists kinds and the names of the objects of the
// namespace from the API server (`kubectl steward completion bash`, or
// kubectl's own completion of plugins through kubectl_complete-steward).

// completeRefs completes KIND/NAME: the kinds first ("database/"), then the
// names of that kind's objects. With a default kind (def non-nil), a bare
// word completes to its objects' names too.
func (c *cli) completeRefs(def *kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kindPart, _, found := strings.Cut(toComplete, "/")
		if !found {
			var out []cobra.Completion
			if def != nil {
				out = c.objectNames(cmd, def, "")
			}
			for _, k := range kinds {
				if def == nil || k == def {
					out = append(out, k.lower()+"/")
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		k := findKind(kindPart)
		if k == nil || def != nil && k != def {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return c.objectNames(cmd, k, kindPart+"/"), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNames completes the first argument to the names of the objects
// of the kinds.
func (c *cli) completeNames(ks ...*kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, k := range ks {
			out = append(out, c.objectNames(cmd, k, "")...)
		}
		slices.Sort(out)
		return slices.Compact(out), cobra.ShellCompDirectiveNoFileComp
	}
}

// objectNames lists the names of the kind's objects, each after prefix;
// nothing when they cannot be listed.
func (c *cli) objectNames(cmd *cobra.Command, k *kind, prefix string) []cobra.Completion {
	if err := c.setUp(); err != nil {
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(k.Name + "List"))
	if err := c.list(commandContext(cmd), k, list); err != nil {
		cobra.CompErrorln(err.Error())
		return nil
	}
	out := make([]cobra.Completion, 0, len(list.Items))
	for _, item := range list.Items {
		out = append(out, prefix+item.Name)
	}
	return out
}
