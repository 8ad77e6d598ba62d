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
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// restoreOptions are the flags of restore.
type restoreOptions struct {
	to, object, at    string
	engine, version   string
	overwrite, noWait bool
	timeout           time.Duration
}

func (c *cli) restoreCommand() *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore BACKUP --to DATABASE",
		Short: "Restore a Backup's dump into a Database, new or existing, and follow it until done",
		Long: `Restores a stored dump of a Backup into a Database and follows the restore
until it succeeded or failed.

If --to names an existing Database, a Restore into it is created. The
operator refuses a target that already holds tables unless --overwrite is
given, and leaves it unchanged when the dump's checksum does not match.

If --to names no Database, the Database is created with
spec.bootstrap.fromBackup, as the operator documents for a new database
from a backup (also the way to a new major version: --version): the same
engine, version, size, storage and settings as the Backup's source
Database, without its backups. The operator restores the dump before the
new Database is Ready.

The dump is the newest successful one unless --object names another (the
Backup's status lists its runs' objects).

--time recovers the Backup's archived write-ahead log to a point in time
instead (an RFC 3339 time, or "latest" for as far as the archive reaches):
the Backup needs spec.pointInTime (PostgreSQL), and the time must lie in
the window its status.pointInTime shows.`,
		Example: `  kubectl steward restore orders-backup --to orders-copy
  kubectl steward restore orders-backup --to orders-v17 --version 17
  kubectl steward restore orders-backup --to orders --object orders/2026-11-30T020000Z.dump --overwrite
  kubectl steward restore orders-backup --to orders-before --time 2026-12-01T09:59:00Z`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindBackup),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.at != "" && o.at != "latest" {
				if _, err := time.Parse(time.RFC3339Nano, o.at); err != nil {
					return fmt.Errorf("--time %q is neither an RFC 3339 time (2026-12-01T10:00:00Z) nor latest", o.at)
				}
			}
			if o.at != "" && cmd.Flags().Changed("object") {
				return errors.New("--time and --object exclude each other: a point in time is recovered from base backups and the archived log, not from a dump")
			}
			if o.to == "" {
				return errors.New("--to DATABASE is required: the Database to restore into, or to create from the backup")
			}
			if err := c.setUp(); err != nil {
				return err
			}
			return c.restore(commandContext(cmd), args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.to, "to", "", "Database to restore into; created from the backup when it does not exist")
	fs.StringVar(&o.object, "object", v1alpha1.LatestObject, "Key of the dump to restore, or latest")
	fs.StringVar(&o.at, "time", "", "Point in time to recover to (RFC 3339, or latest), from the Backup's archived log")
	fs.BoolVar(&o.overwrite, "overwrite", false, "Replace the tables of an existing Database that holds some")
	fs.StringVar(&o.engine, "engine", "", "Engine of a new Database when the Backup's source Database is gone (postgres, mysql, mariadb)")
	fs.StringVar(&o.version, "version", "", "Engine version of a new Database (default: the source Database's)")
	fs.BoolVar(&o.noWait, "no-wait", false, "Create the Restore or Database and return")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "How long to follow the restore")
	_ = cmd.RegisterFlagCompletionFunc("to", c.completeNames(kindDatabase))
	return cmd
}

func (c *cli) restore(ctx context.Context, arg string, o restoreOptions) error {
	r, err := parseRef(arg, kindBackup)
	if err != nil {
		return err
	}
	b := &v1alpha1.Backup{}
	if err := c.get(ctx, kindBackup, r.name, b); err != nil {
		return err
	}
	if o.at != "" && b.Spec.PointInTime == nil {
		return fmt.Errorf("--time: backup/%s does not archive the log (no spec.pointInTime), so only its dumps can be restored; pick one with --object", b.Name)
	}
	if !o.noWait {
		if err := c.checkOperator(ctx); err != nil {
			return fmt.Errorf("not restoring, as nobody would carry it out: %w", err)
		}
	}
	target := &v1alpha1.Database{}
	err = c.get(ctx, kindDatabase, o.to, target)
	switch {
	case err == nil:
		return c.restoreInto(ctx, b, target, o)
	case !isNotFound(err):
		return err
	}
	return c.restoreToNew(ctx, b, o)
}

// restoreInto creates a Restore of the backup into an existing Database.
func (c *cli) restoreInto(ctx context.Context, b *v1alpha1.Backup, db *v1alpha1.Database, o restoreOptions) error {
	if db.SourceType() != b.Spec.Source.Type {
		return fmt.Errorf("backup/%s holds %s dumps, and database/%s runs %s", b.Name, b.Spec.Source.Type, db.Name, db.Spec.Engine)
	}
	rs := &v1alpha1.Restore{
		ObjectMeta: metav1.ObjectMeta{GenerateName: restorePrefix(db.Name), Namespace: c.ns},
		Spec: v1alpha1.RestoreSpec{
			Source:    o.source(b),
			Target:    v1alpha1.RestoreTarget{Type: db.SourceType(), DatabaseRef: &corev1.LocalObjectReference{Name: db.Name}},
			Overwrite: o.overwrite,
		},
	}
	if err := c.c.Create(ctx, rs); err != nil {
		return apiError(err, "create", kindRestore.resource(), "restore", c.ns, "")
	}
	fmt.Fprintf(c.streams.Out, "restore/%s created: %s of backup/%s into database/%s.\n", rs.Name, o.what(), b.Name, db.Name)
	if o.noWait {
		fmt.Fprintf(c.streams.Out, "Follow it with: kubectl steward status restore/%s\n", rs.Name)
		return nil
	}
	return c.followRestore(ctx, rs.Name, o.timeout)
}

// restorePrefix is the generateName of a Restore into db: a Restore's
// name has at most 55 characters, and the API server adds 5.
func restorePrefix(db string) string {
	const max = 55 - 5 - len("-restore-")
	if len(db) > max {
		db = db[:max]
	}
	return db + "-restore-"
}

// restoreToNew creates a Database bootstrapped from the backup, like the
// Backup's source Database, and follows the Restore the operator creates
// for it.
func (c *cli) restoreToNew(ctx context.Context, b *v1alpha1.Backup, o restoreOptions) error {
	spec, from, err := c.newDatabaseSpec(ctx, b, o)
	if err != nil {
		return err
	}
	db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: o.to, Namespace: c.ns}, Spec: spec}
	if err := c.c.Create(ctx, db); err != nil {
		return apiError(err, "create", kindDatabase.resource(), "database", c.ns, o.to)
	}
	fmt.Fprintf(c.streams.Out, "database/%s created (%s %s, like %s) from %s of backup/%s.\n",
		db.Name, spec.Engine, spec.Version, from, o.what(), b.Name)
	if o.noWait {
		fmt.Fprintf(c.streams.Out, "Follow it with: kubectl steward status database/%s\n", db.Name)
		return nil
	}
	err = c.waitFor(ctx, o.timeout, "the operator to create the bootstrap Restore of database/"+db.Name, func(ctx context.Context) (bool, error) {
		return db.Status.BootstrapRestore != "", c.get(ctx, kindDatabase, db.Name, db)
	})
	if err != nil {
		return err
	}
	if err := c.followRestore(ctx, db.Status.BootstrapRestore, o.timeout); err != nil {
		return err
	}
	fmt.Fprintf(c.streams.Out, "database/%s is bootstrapped; see it with: kubectl steward status database/%s\n", db.Name, db.Name)
	return nil
}

// newDatabaseSpec is the spec of a Database made from the backup: its
// source Database's, without backups or credentials of its own, with
// --engine and --version applied.
func (c *cli) newDatabaseSpec(ctx context.Context, b *v1alpha1.Backup, o restoreOptions) (v1alpha1.DatabaseSpec, string, error) {
	var spec v1alpha1.DatabaseSpec
	from := "the flags"
	source := b.Status.SourceDatabase
	if b.Spec.Source.DatabaseRef != nil {
		source = b.Spec.Source.DatabaseRef.Name
	}
	if source != "" {
		src := &v1alpha1.Database{}
		err := c.get(ctx, kindDatabase, source, src)
		switch {
		case err == nil:
			spec = *src.Spec.DeepCopy()
			spec.Backup, spec.Bootstrap, spec.CredentialsSecretRef, spec.DeletionPolicy = nil, nil, nil, ""
			from = "database/" + source
		case !isNotFound(err):
			return spec, "", err
		}
	}
	if o.engine != "" {
		spec.Engine = v1alpha1.DatabaseEngine(o.engine)
	}
	if o.version != "" {
		spec.Version = o.version
	}
	if spec.Engine == "" && b.Spec.Source.Type == v1alpha1.SourcePostgreSQL {
		spec.Engine = v1alpha1.EnginePostgres
	}
	if spec.Engine == "" || spec.Version == "" {
		return spec, "", fmt.Errorf("database %q does not exist, and the source of backup/%s is no Database to copy: give --engine and --version of the new Database", o.to, b.Name)
	}
	spec.Bootstrap = &v1alpha1.DatabaseBootstrap{FromBackup: o.source(b)}
	return spec, from, nil
}

// what names what is restored, for messages.
func (o restoreOptions) what() string {
	if o.at != "" {
		return "point in time " + o.at
	}
	return o.object
}

// source is what a Restore of the options reads: a dump, or the archive
// recovered to --time.
func (o restoreOptions) source(b *v1alpha1.Backup) v1alpha1.RestoreSource {
	src := v1alpha1.RestoreSource{BackupRef: &corev1.LocalObjectReference{Name: b.Name}, Object: o.object}
	if o.at == "" {
		return src
	}
	src.Object = v1alpha1.LatestObject
	src.PointInTime = &v1alpha1.RestorePointInTime{}
	if t, err := time.Parse(time.RFC3339Nano, o.at); err == nil {
		src.PointInTime.TargetTime = &metav1.Time{Time: t}
	}
	return src
}

// followRestore prints a Restore's phases until it succeeded or failed.
func (c *cli) followRestore(ctx context.Context, name string, timeout time.Duration) error {
	rs := &v1alpha1.Restore{}
	last := ""
	err := c.waitFor(ctx, timeout, "restore/"+name, func(ctx context.Context) (bool, error) {
		if err := c.get(ctx, kindRestore, name, rs); err != nil {
			return false, err
		}
		line := string(rs.Status.Phase)
		if line == "" {
			line = "waiting for the operator"
		}
		if rs.Status.Job != "" {
			line += ", Job " + rs.Status.Job
		}
		if msg := restoreMessage(rs); msg != "" {
			line += ": " + msg
		}
		if line != last {
			fmt.Fprintf(c.streams.Out, "restore/%s: %s\n", name, line)
			last = line
		}
		return rs.Status.Phase == v1alpha1.RestoreSucceeded || rs.Status.Phase == v1alpha1.RestoreFailed, nil
	})
	if err != nil {
		return fmt.Errorf("%w; it goes on: kubectl steward status restore/%s", err, name)
	}
	if rs.Status.Phase == v1alpha1.RestoreFailed {
		return fmt.Errorf("restore/%s failed: %s", name, restoreMessage(rs))
	}
	took := ""
	if rs.Status.StartTime != nil && rs.Status.CompletionTime != nil {
		took = fmt.Sprintf(" in %v", rs.Status.CompletionTime.Sub(rs.Status.StartTime.Time).Round(time.Second))
	}
	if rs.Status.RecoveryPoint != nil {
		fmt.Fprintf(c.streams.Out, "Recovered from base backup %s up to the transaction committed at %s%s.\n",
			rs.Status.BaseBackup, rs.Status.RecoveryPoint.UTC().Format(time.RFC3339), took)
		return nil
	}
	fmt.Fprintf(c.streams.Out, "Restored %s%s.\n", orDash(rs.Status.Object), took)
	return nil
}

// restoreMessage is what the Restore says about its state: its message,
// or its Ready condition's.
func restoreMessage(rs *v1alpha1.Restore) string {
	if rs.Status.Message != "" {
		return rs.Status.Message
	}
	for _, cond := range rs.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status != metav1.ConditionTrue {
			return cond.Message
		}
	}
	return ""
}
