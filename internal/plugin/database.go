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
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func (c *cli) switchoverCommand() *cobra.Command {
	var to string
	var noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "switchover DATABASE [--to POD]",
		Short: "Hand a Database's primary over to a replica",
		Long: `Asks the operator for a switchover, the way it documents it: the Database's
steward.dev/switchover-to annotation names the instance (its pod) to
promote, or "any" for the best replica. The primary stops, the replica
catches up with it and is promoted; the operator removes the annotation once
the switchover is done or refused, and a refusal is a SwitchoverRefused
event. PostgreSQL and MariaDB only: MySQL keeps its first instance as the
primary.`,
		Example: `  kubectl steward switchover orders
  kubectl steward switchover orders --to orders-2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindDatabase),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.setUp(); err != nil {
				return err
			}
			return c.switchover(commandContext(cmd), args[0], to, !noWait, timeout)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "Instance (pod) to promote (default: the best replica)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "Ask for the switchover and return")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait for the switchover")
	_ = cmd.RegisterFlagCompletionFunc("to", func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return c.replicaNames(cmd, args), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// replicaNames completes --to: the Database's replicas.
func (c *cli) replicaNames(cmd *cobra.Command, args []string) []cobra.Completion {
	if len(args) == 0 || c.setUp() != nil {
		return nil
	}
	db := &v1alpha1.Database{}
	if c.get(commandContext(cmd), kindDatabase, args[0], db) != nil {
		return nil
	}
	var out []cobra.Completion
	for _, in := range db.Status.Instances {
		if in.Name != db.Status.Primary {
			out = append(out, in.Name)
		}
	}
	return out
}

func (c *cli) switchover(ctx context.Context, name, to string, wait bool, timeout time.Duration) error {
	r, err := parseRef(name, kindDatabase)
	if err != nil {
		return err
	}
	db := &v1alpha1.Database{}
	if err := c.get(ctx, kindDatabase, r.name, db); err != nil {
		return err
	}
	if err := switchoverRefusal(db, to); err != nil {
		return err
	}
	if to == "" {
		to = v1alpha1.SwitchoverToAny
	}
	if wait {
		if err := c.checkOperator(ctx); err != nil {
			return fmt.Errorf("not asking for a switchover that nobody would carry out: %w", err)
		}
	}
	term := db.Status.Term
	if err := c.annotate(ctx, kindDatabase, db, v1alpha1.AnnotationSwitchoverTo, to); err != nil {
		return err
	}
	fmt.Fprintf(c.streams.Out, "database/%s: asked for a switchover from %s to %s (%s=%s).\n",
		db.Name, db.Status.Primary, to, v1alpha1.AnnotationSwitchoverTo, to)
	if !wait {
		return nil
	}
	return c.waitForSwitchover(ctx, db, term, timeout)
}

// switchoverRefusal says why the operator would refuse the switchover
// outright, before asking it.
func switchoverRefusal(db *v1alpha1.Database, to string) error {
	switch {
	case !db.Spec.Engine.CanFailOver():
		return fmt.Errorf("database %q runs %s: Steward keeps its first instance as the primary, and switches over PostgreSQL and MariaDB only", db.Name, db.Spec.Engine)
	case db.Status.Replicas < 2:
		return fmt.Errorf("database %q has %d instance(s): a switchover needs a replica", db.Name, db.Status.Replicas)
	case db.Status.RoleChange != nil:
		rc := db.Status.RoleChange
		return fmt.Errorf("database %q: a %s from %s to %s is under way", db.Name, strings.ToLower(string(rc.Type)), rc.From, rc.To)
	case to == "" || to == v1alpha1.SwitchoverToAny:
		return nil
	case to == db.Status.Primary:
		return fmt.Errorf("database %q: %s is the primary already", db.Name, to)
	}
	for _, in := range db.Status.Instances {
		if in.Name == to {
			return nil
		}
	}
	var names []string
	for _, in := range db.Status.Instances {
		if in.Name != db.Status.Primary {
			names = append(names, in.Name)
		}
	}
	slices.Sort(names)
	return fmt.Errorf("database %q has no instance %q; its replicas: %s", db.Name, to, strings.Join(names, ", "))
}

// waitForSwitchover waits until the switchover is done (a role change of
// a later term than term), or the operator removed the annotation without
// one: a refusal, whose event says why.
func (c *cli) waitForSwitchover(ctx context.Context, db *v1alpha1.Database, term int64, timeout time.Duration) error {
	err := c.waitFor(ctx, timeout, "the switchover of database/"+db.Name, func(ctx context.Context) (bool, error) {
		if err := c.get(ctx, kindDatabase, db.Name, db); err != nil {
			return false, err
		}
		if lc := db.Status.LastRoleChange; lc != nil && lc.Term > term {
			return true, nil
		}
		_, asked := db.Annotations[v1alpha1.AnnotationSwitchoverTo]
		return !asked && db.Status.RoleChange == nil, nil
	})
	if err != nil {
		return err
	}
	if lc := db.Status.LastRoleChange; lc != nil && lc.Term > term {
		fmt.Fprintf(c.streams.Out, "%s is the primary (term %d), was %s; no instance accepted writes for %.1f s.\n",
			lc.To, lc.Term, lc.From, float64(lc.WriteGapMilliseconds)/1000)
		return nil
	}
	why := "see kubectl steward status database/" + db.Name
	if events, err := c.warningEvents(ctx, db); err == nil {
		for _, e := range events {
			if e.Reason == v1alpha1.EventSwitchoverRefused {
				why = e.Message
				break
			}
		}
	}
	return fmt.Errorf("the operator refused the switchover: %s", why)
}

// unsupportedDatabaseCommand is a command of kubectl cnpg that this
// operator has no request for: it says so, and what the operator does
// instead.
func (c *cli) unsupportedDatabaseCommand(name, short string) *cobra.Command {
	instead := map[string]string{
		"restart": "it rolls a Database's pods itself, replicas first and the primary last after a switchover, when a setting that needs a restart changes (spec.parameters, resources, version); to move the primary alone, use kubectl steward switchover",
		"reload":  "it reloads the engine itself when a reloadable spec.parameters setting changes",
	}[name]
	return &cobra.Command{
		Use:               name + " DATABASE",
		Short:             short + " (not supported by this operator version)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindDatabase),
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("%s is not supported by this operator version: it has no %s request (no annotation or field asks for one); %s", name, name, instead)
		},
	}
}
