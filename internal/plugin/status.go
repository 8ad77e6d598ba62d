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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// report is what status says about one object.
type report struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// Ready is the Ready condition's status: True, False or Unknown.
	Ready string `json:"ready"`
	// Problems say why the object is not Ready, and any problem condition
	// that is True.
	Problems   []string           `json:"problems,omitempty"`
	Summary    []field            `json:"summary,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Database   *databaseReport    `json:"database,omitempty"`
	AppStack   *stackReport       `json:"appStack,omitempty"`
	AppConfig  *configReport      `json:"appConfig,omitempty"`
	// Events are the object's recent Warning events, newest first.
	Events []eventRow `json:"warningEvents,omitempty"`
	// Notes say what could not be read.
	Notes []string `json:"notes,omitempty"`
}

func (c *cli) statusCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "status [KIND/NAME]",
		Short: "Show an object's conditions, what keeps it from Ready and its Warning events; without an argument, the namespace's objects",
		Example: `  kubectl steward status                      # every Steward object of the namespace
  kubectl steward status database/orders      # instances, lag, backups, events
  kubectl steward status appstack/shop        # components in dependency order, what blocks what
  kubectl steward status appconfig/shop-config -o yaml`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: c.completeRefs(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, outputJSON, outputYAML); err != nil {
				return err
			}
			if err := c.setUp(); err != nil {
				return err
			}
			ctx := commandContext(cmd)
			if len(args) == 0 {
				return c.overview(ctx, out)
			}
			r, err := parseRef(args[0], nil)
			if err != nil {
				return err
			}
			rep, err := c.objectReport(ctx, r)
			if err != nil {
				return err
			}
			if out != outputHuman {
				return printStructured(c.streams.Out, out, rep)
			}
			c.printReport(c.streams.Out, rep)
			return nil
		},
	}
	addOutputFlag(cmd, &out, outputJSON, outputYAML)
	return cmd
}

// objectReport reads one object, and what its kind's report needs besides.
func (c *cli) objectReport(ctx context.Context, r ref) (*report, error) {
	u, err := c.getUnstructured(ctx, r)
	if err != nil {
		return nil, err
	}
	rep := &report{Kind: r.kind.Name, Name: u.GetName(), Namespace: u.GetNamespace()}
	rep.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	rep.Conditions = conditionsOf(u)
	rep.Ready, rep.Problems = readiness(u, rep.Conditions, c.now())
	switch r.kind {
	case kindDatabase:
		err = c.databaseDetails(ctx, u, rep)
	case kindAppStack:
		err = c.stackDetails(ctx, u, rep)
	case kindAppConfig:
		err = c.configDetails(ctx, u, rep)
	default:
		rep.Summary, err = summaryOf(r.kind, u, c)
	}
	if err != nil {
		return nil, err
	}
	rep.Events, err = c.warningEvents(ctx, u)
	if err != nil {
		rep.Notes = append(rep.Notes, "Warning events not shown: "+err.Error())
	}
	return rep, nil
}

// fromUnstructured converts u into the typed obj.
func fromUnstructured(u *unstructured.Unstructured, obj any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("reading %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// conditionsOf reads status.conditions.
func conditionsOf(u *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []metav1.Condition
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			out = append(out, cond)
		}
	}
	return out
}

// noStatusYet says why an object of kind created then has no status at
// now: the first status of a new WebApp, Cache, Database or AppStack is
// held back for a while (v1alpha1.FirstStatusHold), plus a minute for its
// turn in the operator's queue; past that, or for another kind, the
// operator has not looked at it.
func noStatusYet(kind string, created, now time.Time) string {
	hold := v1alpha1.FirstStatusHold(kind)
	if age := now.Sub(created); hold > 0 && age < hold+time.Minute {
		return fmt.Sprintf("No status yet, %s after its creation: Steward writes a new %s's first status once it is Ready, runs into a problem, or has been rolling out for %s",
			duration.HumanDuration(max(age, 0)), kind, duration.HumanDuration(hold))
	}
	return "Steward has not looked at it yet: is the operator running?"
}

// problemConditions are the condition types that say, while True, that
// the object needs attention.
var problemConditions = append([]string{v1alpha1.ConditionUpgradeBlocked}, v1alpha1.ProblemConditions...)

// readiness is the Ready condition's status and the reasons the object is
// not Ready: a status of an older generation, Ready's own reason, and the
// problem conditions that are True.
func readiness(u *unstructured.Unstructured, conds []metav1.Condition, now time.Time) (string, []string) {
	var problems []string
	observed, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	switch {
	case found && observed < 0, !found && len(conds) == 0:
		problems = append(problems, noStatusYet(u.GetKind(), u.GetCreationTimestamp().Time, now))
	case found && observed < u.GetGeneration():
		problems = append(problems, fmt.Sprintf("The status describes generation %d; Steward has not finished looking at generation %d", observed, u.GetGeneration()))
	}
	ready := string(metav1.ConditionUnknown)
	for _, cond := range conds {
		if cond.Type == v1alpha1.ConditionReady {
			ready = string(cond.Status)
			if cond.Status != metav1.ConditionTrue {
				problems = append(problems, fmt.Sprintf("Ready is %s (%s): %s", cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	for _, cond := range conds {
		if slices.Contains(problemConditions, cond.Type) && cond.Status == metav1.ConditionTrue {
			problems = append(problems, fmt.Sprintf("%s (%s): %s", cond.Type, cond.Reason, cond.Message))
		}
	}
	if n, _, _ := unstructured.NestedInt64(u.Object, "status", "violations"); n > 0 {
		problems = append(problems, fmt.Sprintf("%d workloads violate the policy", n))
	}
	return ready, problems
}

// printReport prints a report for people.
func (c *cli) printReport(w io.Writer, rep *report) {
	title := rep.Kind + " " + rep.Name
	if rep.Namespace != "" {
		title = fmt.Sprintf("%s %s/%s", rep.Kind, rep.Namespace, rep.Name)
	}
	fmt.Fprintln(w, title)
	head := []field{{"Ready", rep.Ready}}
	if rep.Phase != "" {
		head = append(head, field{"Phase", rep.Phase})
	}
	printFields(w, append(head, rep.Summary...))
	if len(rep.Problems) > 0 {
		fmt.Fprintln(w, "\nNot ready because:")
		for _, p := range rep.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	if len(rep.Conditions) > 0 {
		fmt.Fprintln(w, "\nConditions:")
		t := newTable(w, "  ", "TYPE", "STATUS", "REASON", "SINCE", "MESSAGE")
		for _, cond := range rep.Conditions {
			t.row("  ", cond.Type, string(cond.Status), cond.Reason, age(c.now(), &cond.LastTransitionTime), oneLine(cond.Message, 100))
		}
		t.flush()
	}
	switch {
	case rep.Database != nil:
		c.printDatabase(w, rep.Database)
	case rep.AppStack != nil:
		c.printStack(w, rep.AppStack)
	case rep.AppConfig != nil:
		c.printConfig(w, rep.AppConfig)
	}
	c.printEvents(w, rep.Events)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
}

// summaryOf is the summary of a kind without a report of its own.
func summaryOf(k *kind, u *unstructured.Unstructured, c *cli) ([]field, error) {
	switch k {
	case kindWebApp:
		var app v1alpha1.WebApp
		if err := fromUnstructured(u, &app); err != nil {
			return nil, err
		}
		return webAppSummary(&app), nil
	case kindCache:
		var cache v1alpha1.Cache
		if err := fromUnstructured(u, &cache); err != nil {
			return nil, err
		}
		return []field{
			{"Engine", strings.TrimSpace(string(cache.Spec.Engine) + " " + cache.Status.Version)},
			{"Replicas", fmt.Sprintf("%d ready of %d", cache.Status.ReadyReplicas, cache.Status.Replicas)},
			{"Endpoint", orDash(cache.Status.Endpoint)},
		}, nil
	case kindBackup:
		var b v1alpha1.Backup
		if err := fromUnstructured(u, &b); err != nil {
			return nil, err
		}
		return append(backupSummary(&b, c), extraStatus(u, v1alpha1.BackupStatus{})...), nil
	case kindRestore:
		var rs v1alpha1.Restore
		if err := fromUnstructured(u, &rs); err != nil {
			return nil, err
		}
		return restoreSummary(&rs, c), nil
	case kindWorkloadPolicy():
		var p v1alpha1.WorkloadPolicy
		if err := fromUnstructured(u, &p); err != nil {
			return nil, err
		}
		return policySummary(&p), nil
	}
	return nil, nil
}

func kindWorkloadPolicy() *kind { return mustKind("WorkloadPolicy") }

func webAppSummary(app *v1alpha1.WebApp) []field {
	out := []field{
		{"Image", app.Spec.Image},
		{"Replicas", fmt.Sprintf("%d ready of %d desired (%d up to date)", app.Status.ReadyReplicas, app.Status.DesiredReplicas, app.Status.UpdatedReplicas)},
		{"URL", orDash(app.Status.URL)},
	}
	for _, use := range app.Spec.Config {
		keys := "every key"
		if len(use.Keys) > 0 {
			keys = strings.Join(use.Keys, ", ")
		}
		out = append(out, field{"Config", fmt.Sprintf("appconfig/%s (%s)", use.AppConfig, keys)})
	}
	return out
}

func backupSummary(b *v1alpha1.Backup, c *cli) []field {
	source := string(b.Spec.Source.Type)
	switch {
	case b.Spec.Source.DatabaseRef != nil:
		source += " database/" + b.Spec.Source.DatabaseRef.Name
	case b.Spec.Source.Connection != nil:
		source += " at " + b.Spec.Source.Connection.Host
	}
	schedule := b.Spec.Schedule
	if b.Spec.TimeZone != nil {
		schedule += " (" + *b.Spec.TimeZone + ")"
	}
	if b.Spec.Suspend {
		schedule += ", suspended"
	}
	d := b.Spec.Destination
	out := []field{
		{"Source", source},
		{"Destination", fmt.Sprintf("%s %s/%s", d.Type, d.Bucket, strings.TrimSuffix(d.Prefix, "/"))},
		{"Schedule", schedule},
		{"Next run", orDash(timeAndAge(c.now(), b.Status.NextScheduleTime))},
	}
	if lb := b.Status.LastBackup; lb != nil {
		out = append(out, field{"Last success", runSummary(lb, c)})
	}
	if len(b.Status.History) > 0 && !b.Status.History[0].Succeeded && b.Status.History[0].CompletionTime != nil {
		out = append(out, field{"Last run", runSummary(&b.Status.History[0], c)})
	}
	if dc := b.Status.DestinationCheck; dc != nil {
		check := "passed"
		if !dc.Passed {
			check = fmt.Sprintf("failed (%s): %s", dc.Reason, oneLine(dc.Message, 100))
		}
		out = append(out, field{"Destination check", check})
	}
	if p := b.Status.PointInTime; b.Spec.PointInTime != nil && p != nil {
		window := "-"
		if p.FirstRecoverableTime != nil && p.LastRecoverableTime != nil {
			window = p.FirstRecoverableTime.UTC().Format(time.RFC3339) + " to " + p.LastRecoverableTime.UTC().Format(time.RFC3339)
		}
		out = append(out, field{"Recoverable", window})
		archiving := "not streaming"
		if p.Streaming {
			archiving = "streaming"
		}
		if p.LastArchivedSegment != "" {
			archiving += ", last segment " + p.LastArchivedSegment
		}
		if p.ArchiveFailures > 0 {
			archiving += fmt.Sprintf(", %d failures, last: %s", p.ArchiveFailures, oneLine(p.LastArchiveFailure, 100))
		}
		out = append(out, field{"Archiving", archiving})
	}
	return out
}

// runSummary is one line about a backup run.
func runSummary(run *v1alpha1.BackupRun, c *cli) string {
	when := run.CompletionTime
	if when == nil {
		when = run.StartTime
	}
	s := fmt.Sprintf("job %s, %s", run.Job, orDash(timeAndAge(c.now(), when)))
	if run.Succeeded {
		s += fmt.Sprintf(", %s in %ds", bytesString(run.Size), run.DurationSeconds)
		if run.Object != "" {
			s += ", " + run.Object
		}
		return s
	}
	return s + ", failed: " + oneLine(run.Message, 100)
}

func restoreSummary(rs *v1alpha1.Restore, c *cli) []field {
	source := "the destination given"
	if rs.Spec.Source.BackupRef != nil {
		source = "backup/" + rs.Spec.Source.BackupRef.Name
	}
	object := rs.Spec.Source.Object
	if object == "" {
		object = v1alpha1.LatestObject
	}
	target := "a database at "
	if rs.Spec.Target.DatabaseRef != nil {
		target = "database/" + rs.Spec.Target.DatabaseRef.Name
	} else if rs.Spec.Target.Connection != nil {
		target += rs.Spec.Target.Connection.Host
	}
	out := []field{
		{"Source", fmt.Sprintf("%s, object %s", source, object)},
		{"Target", target},
		{"Object restored", orDash(rs.Status.Object)},
		{"Job", orDash(rs.Status.Job)},
		{"Started", orDash(timeAndAge(c.now(), rs.Status.StartTime))},
		{"Completed", orDash(timeAndAge(c.now(), rs.Status.CompletionTime))},
	}
	if rs.Status.Message != "" {
		out = append(out, field{"Message", rs.Status.Message})
	}
	return out
}

func policySummary(p *v1alpha1.WorkloadPolicy) []field {
	out := []field{
		{"Environment", p.Spec.Environment},
		{"Violations", fmt.Sprint(p.Status.Violations)},
	}
	for i, v := range p.Status.Violators {
		if i == 5 {
			out = append(out, field{"Violator", fmt.Sprintf("... and %d more", len(p.Status.Violators)-5)})
			break
		}
		out = append(out, field{"Violator", fmt.Sprintf("%s %s/%s: %s", v.Kind, v.Namespace, v.Name, oneLine(v.Message, 100))})
	}
	return out
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
