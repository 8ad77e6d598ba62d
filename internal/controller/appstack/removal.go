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

package appstack

import (
	"fmt"
	"slices"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/conditions"
)

// teardownRank orders the deletion of components of different kinds that
// do not depend on each other: apps first, databases last.
var teardownRank = map[string]int{appstack.KindWebApp: 0, appstack.KindAppConfig: 1, appstack.KindCache: 2, appstack.KindDatabase: 3}

// removal is the plan for deleting components: what is done now, in
// order, and what the others wait for.
type removal struct {
	// left are the components still there, those deleted now included.
	left []*component
	// steps are done now, in order.
	steps []removeStep
	// waiting is what the first component not deleted now waits for, and
	// failure why a final backup failed, which stops the deletion.
	waiting, failure string
}

// removeStep deletes a component or, when backup is set, asks that Backup
// for the component's final backup, named token.
type removeStep struct {
	c      *component
	backup *v1alpha1.Backup
	token  string
}

// planRemoval decides which of comps to delete now: each once none of the
// components before(c) is left, and a database only after its final
// backup, taken with the Backup of backups that has its name.
func planRemoval(stack *v1alpha1.AppStack, comps []*component, backups map[string]*v1alpha1.Backup, before func(*component) []string) removal {
	rm := removal{left: comps}
	left := map[string]bool{}
	for _, c := range comps {
		left[c.name] = true
	}
	ordered := slices.Clone(comps)
	slices.SortStableFunc(ordered, func(a, b *component) int { return teardownRank[a.kind] - teardownRank[b.kind] })
	for _, c := range ordered {
		s, waiting, failure := removeOne(stack, c, before(c), left, backups[c.object()])
		if failure != "" {
			rm.failure = failure
			return rm
		}
		if s != nil {
			rm.steps = append(rm.steps, *s)
		}
		if rm.waiting == "" {
			rm.waiting = waiting
		}
	}
	return rm
}

// removeOne decides about one component: the step done now, if any, what
// it waits for, or why its final backup failed.
func removeOne(stack *v1alpha1.AppStack, c *component, before []string, left map[string]bool, backup *v1alpha1.Backup) (s *removeStep, waiting, failure string) {
	if !c.live.GetDeletionTimestamp().IsZero() {
		return nil, fmt.Sprintf("%s %s is being deleted", c.kind, c.object()), ""
	}
	for _, b := range before {
		if left[b] && b != c.name {
			return nil, fmt.Sprintf("%s %s waits for %s to be deleted first", c.kind, c.object(), b), ""
		}
	}
	db, ok := c.live.(*v1alpha1.Database)
	if !ok {
		return &removeStep{c: c}, "", ""
	}
	done, token, failure := finalBackup(stack, db, backup)
	running := fmt.Sprintf("the final backup of Database %s is running", db.Name)
	switch {
	case failure != "":
		return nil, "", failure
	case token != "":
		return &removeStep{c: c, backup: backup, token: token}, running, ""
	case !done:
		return nil, running, ""
	}
	return &removeStep{c: c}, "", ""
}

// byRank orders the deletion of components that left the spec: without
// the graph of what is gone, kinds give the order, as an app may bind a
// database or cache and nothing binds an app.
func byRank(comps []*component) func(*component) []string {
	return func(c *component) []string {
		var before []string
		for _, o := range comps {
			if teardownRank[o.kind] < teardownRank[c.kind] {
				before = append(before, o.name)
			}
		}
		return before
	}
}

// needsFinalBackup reports whether a database is backed up one last time
// before it is deleted: in production, when its backups are on. The
// stack's spec decides, so that turning a database's backups off in the
// stack lets it go without one; a database dropped from the spec keeps its
// own.
func needsFinalBackup(stack *v1alpha1.AppStack, db *v1alpha1.Database) bool {
	b := db.Spec.Backup
	for name, spec := range appstack.Render(stack).Databases {
		if appstack.ObjectName(stack, name) == db.Name {
			b = spec.Backup
		}
	}
	return stack.Spec.Environment == v1alpha1.StackProduction && b != nil && (b.Enabled == nil || *b.Enabled)
}

// finalBackupToken names the stack's final backups; the retry annotation
// asks for a new one.
func finalBackupToken(stack *v1alpha1.AppStack) string {
	token := "final-" + string(stack.UID)
	if retry := stack.Annotations[v1alpha1.AnnotationRetryFinalBackup]; retry != "" {
		token += "-" + retry
	}
	return token
}

// finalBackup reports whether the database's final backup is done, or the
// token to ask its Backup (nil when there is none) for, or why it failed.
// A database that needs none is done.
func finalBackup(stack *v1alpha1.AppStack, db *v1alpha1.Database, backup *v1alpha1.Backup) (done bool, ask, failure string) {
	if !needsFinalBackup(stack, db) {
		return true, "", ""
	}
	if backup == nil {
		if !conditions.EverTrue(db.Status.Conditions, v1alpha1.ConditionReady, v1alpha1.ReasonCreating) {
			return true, "", "" // never served: nothing to back up
		}
		return false, "", fmt.Sprintf("Database %s has no Backup %s to take its final backup with", db.Name, db.BackupName())
	}
	token := finalBackupToken(stack)
	if backup.Annotations[v1alpha1.AnnotationBackupNow] != token {
		return false, token, ""
	}
	job := backup.ManualJobName(token)
	for _, run := range backup.Status.History {
		if run.Job != job || run.CompletionTime == nil {
			continue
		}
		if run.Succeeded {
			return true, "", ""
		}
		return false, "", fmt.Sprintf("The final backup of Database %s failed (%s), so it is not deleted. Fix the cause and set the annotation %s on the AppStack to a new value to try again, or turn the database's backups off in the stack to delete it without one",
			db.Name, run.Message, v1alpha1.AnnotationRetryFinalBackup)
	}
	return false, "", ""
}
