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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// databaseReport is what status says about a Database beside its
// conditions: its instances, role changes and backups.
type databaseReport struct {
	Instances      []instanceRow                `json:"instances,omitempty"`
	RoleChange     *v1alpha1.DatabaseRoleChange `json:"roleChange,omitempty"`
	LastRoleChange *v1alpha1.DatabaseRoleChange `json:"lastRoleChange,omitempty"`
	// Backups are the Backups whose source is the Database.
	Backups []backupRow `json:"backups,omitempty"`
	// LastBackup is the newest successful run of any of them.
	LastBackup *lastBackup `json:"lastBackup,omitempty"`
	// Extra are status fields of the Database this plugin does not know,
	// such as a recoverability window: shown only when present.
	Extra []field `json:"extra,omitempty"`
}

// instanceRow is one instance as it reported itself.
type instanceRow struct {
	Name    string `json:"name"`
	Role    string `json:"role,omitempty"`
	Ready   bool   `json:"ready"`
	Lag     string `json:"lag,omitempty"`
	Message string `json:"message,omitempty"`
}

// backupRow is one Backup of the Database.
type backupRow struct {
	Name        string       `json:"name"`
	Schedule    string       `json:"schedule"`
	Phase       string       `json:"phase,omitempty"`
	Ready       string       `json:"ready"`
	LastSuccess *metav1.Time `json:"lastSuccess,omitempty"`
	NextRun     *metav1.Time `json:"nextRun,omitempty"`
	// Extra are status fields of the Backup this plugin does not know,
	// such as its last verification: shown only when present.
	Extra []field `json:"extra,omitempty"`
}

// lastBackup is the newest successful backup run of the Database.
type lastBackup struct {
	Backup string             `json:"backup"`
	Run    v1alpha1.BackupRun `json:"run"`
}

func (c *cli) databaseDetails(ctx context.Context, u *unstructured.Unstructured, rep *report) error {
	db := &v1alpha1.Database{}
	if err := fromUnstructured(u, db); err != nil {
		return err
	}
	st := db.Status
	version := st.Version
	if version == "" || version != db.Spec.Version {
		version = strings.TrimSpace(fmt.Sprintf("%s (spec %s)", version, db.Spec.Version))
	}
	rep.Summary = []field{
		{"Engine", fmt.Sprintf("%s %s", db.Spec.Engine, version)},
		{"Instances", fmt.Sprintf("%d ready of %d", st.ReadyReplicas, st.Replicas)},
		{"Primary", primaryLine(db)},
		{"Endpoint", orDash(st.Endpoint)},
	}
	if st.ReadEndpoint != "" {
		rep.Summary = append(rep.Summary, field{"Read endpoint", st.ReadEndpoint})
	}
	if st.CredentialsSecret != "" {
		rep.Summary = append(rep.Summary, field{"Credentials", "secret/" + st.CredentialsSecret})
	}
	d := &databaseReport{RoleChange: st.RoleChange, LastRoleChange: st.LastRoleChange,
		Extra: extraStatus(u, v1alpha1.DatabaseStatus{})}
	d.Instances = instanceRows(db)
	var err error
	d.Backups, d.LastBackup, err = c.databaseBackups(ctx, db)
	if err != nil {
		rep.Notes = append(rep.Notes, "Backups not shown: "+err.Error())
	}
	rep.Database = d
	return nil
}

func primaryLine(db *v1alpha1.Database) string {
	if db.Status.Primary == "" {
		return "-"
	}
	if db.Status.Term > 0 {
		return fmt.Sprintf("%s (term %d)", db.Status.Primary, db.Status.Term)
	}
	return db.Status.Primary
}

// instanceRows are the instances as they reported themselves; the primary
// first, then the replicas by name.
func instanceRows(db *v1alpha1.Database) []instanceRow {
	rows := make([]instanceRow, 0, len(db.Status.Instances))
	for _, in := range db.Status.Instances {
		row := instanceRow{Name: in.Name, Role: in.Role, Ready: in.Ready, Message: in.Message}
		switch {
		case in.LagBytes != nil:
			row.Lag = bytesString(*in.LagBytes)
		case in.LagTransactions != nil:
			row.Lag = fmt.Sprintf("%d transactions", *in.LagTransactions)
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b instanceRow) int {
		ap, bp := a.Name == db.Status.Primary, b.Name == db.Status.Primary
		switch {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return rows
}

// databaseBackups are the Backups whose source is the Database, and the
// newest successful run among them.
func (c *cli) databaseBackups(ctx context.Context, db *v1alpha1.Database) ([]backupRow, *lastBackup, error) {
	backups, err := c.backupsOf(ctx, db.Name)
	if err != nil {
		return nil, nil, err
	}
	var rows []backupRow
	var last *lastBackup
	for _, u := range backups {
		b := &v1alpha1.Backup{}
		if err := fromUnstructured(u, b); err != nil {
			return nil, nil, err
		}
		ready, _ := readiness(u, b.Status.Conditions, c.now())
		row := backupRow{Name: b.Name, Schedule: b.Spec.Schedule, Phase: string(b.Status.Phase), Ready: ready,
			NextRun: b.Status.NextScheduleTime, Extra: extraStatus(u, v1alpha1.BackupStatus{})}
		if b.Spec.Suspend {
			row.Schedule += " (suspended)"
		}
		if lb := b.Status.LastBackup; lb != nil {
			row.LastSuccess = lb.CompletionTime
			if last == nil || newer(lb.CompletionTime, last.Run.CompletionTime) {
				last = &lastBackup{Backup: b.Name, Run: *lb}
			}
		}
		rows = append(rows, row)
	}
	if last == nil && db.Status.LastBackup != nil {
		last = &lastBackup{Backup: db.BackupName(), Run: *db.Status.LastBackup}
	}
	return rows, last, nil
}

// backupsOf are the Backups of the namespace whose source is the named
// Database, by name.
func (c *cli) backupsOf(ctx context.Context, database string) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("BackupList"))
	if err := c.list(ctx, kindBackup, list); err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		name, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "source", "databaseRef", "name")
		if name == database {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// newer reports whether a is later than b; a time beats none.
func newer(a, b *metav1.Time) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return a.After(b.Time)
}

func (c *cli) printDatabase(w io.Writer, d *databaseReport) {
	if len(d.Instances) > 0 {
		fmt.Fprintln(w, "\nInstances:")
		t := newTable(w, "  ", "NAME", "ROLE", "READY", "LAG", "MESSAGE")
		for _, in := range d.Instances {
			t.row("  ", in.Name, in.Role, yesNo(in.Ready), in.Lag, oneLine(in.Message, 100))
		}
		t.flush()
	}
	if rc := d.RoleChange; rc != nil {
		fmt.Fprintf(w, "\n%s under way: %s -> %s (term %d), started %s ago: %s\n",
			rc.Type, rc.From, rc.To, rc.Term, age(c.now(), &rc.StartedAt), rc.Reason)
	}
	if rc := d.LastRoleChange; rc != nil {
		fmt.Fprintf(w, "\nLast role change: %s %s -> %s (term %d), %s ago, no instance accepted writes for %.1f s: %s\n",
			rc.Type, rc.From, rc.To, rc.Term, orDash(age(c.now(), rc.FinishedAt)), float64(rc.WriteGapMilliseconds)/1000, rc.Reason)
	}
	if len(d.Backups) == 0 {
		fmt.Fprintln(w, "\nBackups: none (no Backup has this database as its source)")
	} else {
		fmt.Fprintln(w, "\nBackups:")
		t := newTable(w, "  ", "NAME", "SCHEDULE", "PHASE", "READY", "LAST SUCCESS", "NEXT RUN")
		for _, b := range d.Backups {
			t.row("  ", b.Name, b.Schedule, b.Phase, b.Ready, ago(c, b.LastSuccess), in(c, b.NextRun))
		}
		t.flush()
		for _, b := range d.Backups {
			for _, f := range b.Extra {
				fmt.Fprintf(w, "  %s %s: %s\n", b.Name, f.Name, f.Value)
			}
		}
	}
	if lb := d.LastBackup; lb != nil {
		fmt.Fprintf(w, "\nLast backup: backup/%s, %s\n", lb.Backup, runSummary(&lb.Run, c))
	}
	if len(d.Extra) > 0 {
		fmt.Fprintln(w)
		printFields(w, d.Extra)
	}
}

// ago is "5m ago", or "" for no time.
func ago(c *cli, t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return age(c.now(), t) + " ago"
}

// in is "in 5m" for a time ahead, "5m ago" for one past, "" for none.
func in(c *cli, t *metav1.Time) string {
	if t == nil {
		return ""
	}
	if t.After(c.now()) {
		return "in " + duration.HumanDuration(t.Sub(c.now()))
	}
	return ago(c, t)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
