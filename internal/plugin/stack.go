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
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func (c *cli) stackCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Work with AppStacks",
	}
	cmd.AddCommand(c.stackGraphCommand())
	return cmd
}

func (c *cli) stackGraphCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "graph APPSTACK",
		Short: "Print an AppStack's dependency graph, as text or as DOT for Graphviz",
		Long: `Prints the components of an AppStack in the order the operator creates them,
each with what it needs (its dependsOn and the database, cache and
configuration it binds, as the operator's graph implies them) and whether
it is Ready. -o dot prints the graph for Graphviz: an edge goes from a
component to each that needs it; Ready components are green, the others
red.`,
		Example: `  kubectl steward stack graph shop
  kubectl steward stack graph shop -o dot | dot -Tsvg > shop.svg`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindAppStack),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, outputDOT, outputJSON, outputYAML); err != nil {
				return err
			}
			if err := c.setUp(); err != nil {
				return err
			}
			r, err := parseRef(args[0], kindAppStack)
			if err != nil {
				return err
			}
			stack := &v1alpha1.AppStack{}
			if err := c.get(commandContext(cmd), kindAppStack, r.name, stack); err != nil {
				return err
			}
			rows, err := componentRows(stack, c.componentHealth(commandContext(cmd), stack))
			if err != nil {
				return fmt.Errorf("appstack %q: %w", stack.Name, err)
			}
			switch out {
			case outputDOT:
				printDOT(c.streams.Out, stack, rows)
			case outputHuman:
				printGraph(c.streams.Out, stack, rows)
			default:
				return printStructured(c.streams.Out, out, rows)
			}
			return nil
		},
	}
	addOutputFlag(cmd, &out, outputDOT, outputJSON, outputYAML)
	return cmd
}

func printGraph(w io.Writer, stack *v1alpha1.AppStack, rows []componentRow) {
	fmt.Fprintf(w, "appstack/%s: %d components, in the order the operator creates them\n\n", stack.Name, len(rows))
	t := newTable(w, "  ", "COMPONENT", "KIND", "OBJECT", "READY", "NEEDS")
	for _, r := range rows {
		ready := yesNo(r.Ready)
		if !r.Ready && r.Reason != "" {
			ready += " (" + r.Reason + ")"
		}
		t.row("  ", r.Name, r.Kind, r.Object, ready, strings.Join(r.Needs, ", "))
	}
	t.flush()
}

// printDOT prints the graph in Graphviz's DOT language, in a fixed order:
// nodes in creation order, then edges in that order of their targets.
func printDOT(w io.Writer, stack *v1alpha1.AppStack, rows []componentRow) {
	fmt.Fprintf(w, "digraph %q {\n", stack.Name)
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, `  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];`)
	for _, r := range rows {
		color := "red"
		if r.Ready {
			color = "darkgreen"
		}
		label := fmt.Sprintf(`%s\n%s %s`, r.Name, r.Kind, r.Object)
		if !r.Ready && r.Reason != "" {
			label += `\n` + r.Reason
		}
		fmt.Fprintf(w, "  %q [label=\"%s\", color=%s];\n", r.Name, label, color)
	}
	for _, r := range rows {
		for _, need := range r.Needs {
			style := ""
			if slices.Contains(r.WaitingFor, need) {
				style = " [style=dashed, label=\"waiting\"]"
			}
			fmt.Fprintf(w, "  %q -> %q%s;\n", need, r.Name, style)
		}
	}
	fmt.Fprintln(w, "}")
}

func (c *cli) retryFinalBackupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "retry-final-backup APPSTACK",
		Short: "Run a deleted production AppStack's failed final backups again",
		Long: `A production AppStack that is deleted backs each database up one last time
before deleting it, and stops when such a final backup fails. Once the cause
is fixed, this asks the operator to run them again, the way it documents:
the AppStack's steward.dev/retry-final-backup annotation gets a new value.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindAppStack),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.setUp(); err != nil {
				return err
			}
			return c.retryFinalBackup(commandContext(cmd), args[0])
		},
	}
}

func (c *cli) retryFinalBackup(ctx context.Context, name string) error {
	r, err := parseRef(name, kindAppStack)
	if err != nil {
		return err
	}
	stack := &v1alpha1.AppStack{}
	if err := c.get(ctx, kindAppStack, r.name, stack); err != nil {
		return err
	}
	switch {
	case stack.Spec.Environment != v1alpha1.StackProduction:
		return fmt.Errorf("appstack %q is a %s stack: only production stacks take final backups", stack.Name, stack.Spec.Environment)
	case stack.DeletionTimestamp.IsZero():
		return fmt.Errorf("appstack %q is not being deleted: final backups run only while a production AppStack is deleted", stack.Name)
	}
	value := time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.annotate(ctx, kindAppStack, stack, v1alpha1.AnnotationRetryFinalBackup, value); err != nil {
		return err
	}
	fmt.Fprintf(c.streams.Out, "appstack/%s: asked for its final backups again (%s=%s).\n", stack.Name, v1alpha1.AnnotationRetryFinalBackup, value)
	for _, cond := range stack.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status != metav1.ConditionTrue {
			fmt.Fprintf(c.streams.Out, "It was held back by: %s\n", oneLine(cond.Message, 300))
		}
	}
	fmt.Fprintf(c.streams.Out, "Follow it with: kubectl steward status appstack/%s\n", stack.Name)
	return nil
}
