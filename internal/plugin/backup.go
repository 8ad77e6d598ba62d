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
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func (c *cli) backupCommand() *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "backup DATABASE|BACKUP",
		Short: "Run a backup now",
		Long: `Asks the operator for an on-demand run of a Backup, the way the operator
documents it: the Backup's steward.dev/backup-now annotation is set to a new
value, and each new value starts one run (a Job named <backup>-now-<hash>),
even while the schedule is suspended.

Given a Database, the run is of the Backup whose source it is: the one its
spec.backup creates (<database>-backup), or the only one that names it.
Name the Backup when there are several; backup/NAME and database/NAME say
which kind is meant.`,
		Example: `  kubectl steward backup orders --wait
  kubectl steward backup backup/orders-nightly`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindBackup, kindDatabase),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.setUp(); err != nil {
				return err
			}
			return c.backup(commandContext(cmd), args[0], wait, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "Wait until the run finished, and fail if it failed")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "How long --wait waits")
	return cmd
}

func (c *cli) backup(ctx context.Context, arg string, wait bool, timeout time.Duration) error {
	b, err := c.resolveBackup(ctx, arg)
	if err != nil {
		return err
	}
	if wait {
		if err := c.checkOperator(ctx); err != nil {
			return fmt.Errorf("not asking for a backup that nobody would run: %w", err)
		}
	}
	value := time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.annotate(ctx, kindBackup, b, v1alpha1.AnnotationBackupNow, value); err != nil {
		return err
	}
	job := b.ManualJobName(value)
	fmt.Fprintf(c.streams.Out, "backup/%s: asked for a run now (%s=%s); the operator runs it as Job %s.\n",
		b.Name, v1alpha1.AnnotationBackupNow, value, job)
	for _, cond := range b.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionFalse {
			fmt.Fprintf(c.streams.Out, "Note: the Backup is not Ready (%s): %s\n", cond.Reason, oneLine(cond.Message, 200))
		}
	}
	if !wait {
		fmt.Fprintf(c.streams.Out, "Follow it with: kubectl steward status backup/%s\n", b.Name)
		return nil
	}
	return c.waitForRun(ctx, b, value, job, timeout)
}

// waitForRun follows the run that value asked for until it finished.
func (c *cli) waitForRun(ctx context.Context, b *v1alpha1.Backup, value, job string, timeout time.Duration) error {
	started := false
	var run *v1alpha1.BackupRun
	err := c.waitFor(ctx, timeout, "Job "+job, func(ctx context.Context) (bool, error) {
		cur := &v1alpha1.Backup{}
		if err := c.get(ctx, kindBackup, b.Name, cur); err != nil {
			return false, err
		}
		if !started && cur.Status.LastManualRun == value {
			started = true
			fmt.Fprintf(c.streams.Out, "The operator started Job %s.\n", job)
		}
		for i, r := range cur.Status.History {
			if r.Job == job && r.CompletionTime != nil {
				run = &cur.Status.History[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w; the run goes on: kubectl steward status backup/%s", err, b.Name)
	}
	if !run.Succeeded {
		return fmt.Errorf("the backup run %s failed: %s", job, run.Message)
	}
	fmt.Fprintf(c.streams.Out, "Backup succeeded: %s\n", runSummary(run, c))
	return nil
}

// resolveBackup finds the Backup arg names: backup/NAME, database/NAME, or
// a bare name, which is a Backup's if one has it, else a Database's.
func (c *cli) resolveBackup(ctx context.Context, arg string) (*v1alpha1.Backup, error) {
	r, err := parseRef(arg, kindBackup)
	if err != nil && strings.Contains(arg, "/") {
		if r, err = parseRef(arg, kindDatabase); err != nil {
			return nil, fmt.Errorf("%q: give a Backup or a Database, as NAME, backup/NAME or database/NAME", arg)
		}
	}
	if r.kind == kindBackup {
		b := &v1alpha1.Backup{}
		err := c.get(ctx, kindBackup, r.name, b)
		if err == nil || strings.Contains(arg, "/") || !isNotFound(err) {
			return b, err
		}
	}
	db := &v1alpha1.Database{}
	if err := c.get(ctx, kindDatabase, r.name, db); err != nil {
		if isNotFound(err) && !strings.Contains(arg, "/") {
			return nil, fmt.Errorf("no backup or database %q in namespace %q", r.name, c.ns)
		}
		return nil, err
	}
	return c.backupOfDatabase(ctx, db)
}

// backupOfDatabase is the Backup that backs the Database up: the one its
// spec.backup creates, or the only one whose source it is.
func (c *cli) backupOfDatabase(ctx context.Context, db *v1alpha1.Database) (*v1alpha1.Backup, error) {
	found, err := c.backupsOf(ctx, db.Name)
	if err != nil {
		return nil, err
	}
	var names []string
	pick := ""
	for _, u := range found {
		names = append(names, "backup/"+u.GetName())
		if u.GetName() == db.BackupName() {
			pick = u.GetName()
		}
	}
	switch {
	case pick != "":
	case len(found) == 1:
		pick = found[0].GetName()
	case len(found) == 0:
		return nil, fmt.Errorf("database %q has no Backup: set its spec.backup, or create a Backup whose spec.source.databaseRef names it", db.Name)
	default:
		return nil, fmt.Errorf("database %q has %d Backups (%s): name the one to run", db.Name, len(found), strings.Join(names, ", "))
	}
	b := &v1alpha1.Backup{}
	return b, c.get(ctx, kindBackup, pick, b)
}

// annotate sets an annotation on a Steward object with a merge patch.
func (c *cli) annotate(ctx context.Context, k *kind, obj client.Object, key, value string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := c.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return apiError(err, "patch", k.resource(), k.lower(), c.namespaceOf(k), obj.GetName())
	}
	return nil
}

// waitFor calls check every c.poll until it is done or fails, for at most
// timeout. what names what it waits for, in the timeout's error. The
// checks' requests are not cut short by the timeout: a check that started
// finishes.
func (c *cli) waitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) (bool, error)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	for {
		done, err := check(ctx)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("gave up waiting for %s after %v", what, timeout)
		case <-tick.C:
		}
	}
}
