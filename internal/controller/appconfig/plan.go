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

package appconfig

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/conditions"
)

// plan is what one reconcile does, in order, and the status that follows
// once it is done. computePlan makes it without a client; carryOut does it.
type plan struct {
	// hashKey is the Secret of the tokens' key to create, or nil.
	hashKey *corev1.Secret
	// revision and revisionSecret are the latest revision's ConfigMap and
	// Secret; nil when the spec was not rendered, or has no secret values.
	revision       *corev1ac.ConfigMapApplyConfiguration
	revisionSecret *corev1ac.SecretApplyConfiguration
	// configMap makes "<application>-config" hold the current revision;
	// nil when the current revision is not moved on. configSecret is its
	// Secret; nil then means the live one goes.
	configMap    *corev1ac.ConfigMapApplyConfiguration
	configSecret *corev1ac.SecretApplyConfiguration
	// starts are the consumers whose rollouts start now.
	starts []start
	// deletes are the ConfigMaps and Secrets of pruned revisions.
	deletes []client.Object

	// status is the status once the plan is carried out.
	status v1alpha1.AppConfigStatus
	// problem is what the user must fix, which stops the plan short of a
	// rollout, or nil.
	problem *conditions.Problem
	// requeue is when to look again without an event; 0 for never.
	requeue time.Duration
}

// computePlan works out what to render and create, which revision becomes
// current, which consumers roll out now and which revisions go, and the
// status that follows. It reads nothing but its arguments.
func computePlan(ac *v1alpha1.AppConfig, obs observed, now time.Time, resync time.Duration) (plan, error) {
	values, problem, err := renderSpec(ac)
	if err != nil {
		return plan{}, err
	}
	if problem == nil {
		problem = obs.problem
	}
	if problem != nil {
		return plan{}.stop(ac, ac.Status, *problem, resync), nil
	}

	var p plan
	st := ac.Status.DeepCopy()
	st.ObservedGeneration = ac.Generation
	latest, revs := p.render(ac, obs, values)
	recordRevision(st, latest, int32(len(values)+len(obs.secrets)), now)
	target, debouncing, problem := chooseTarget(ac, st, latest, now)
	if problem != nil {
		p.deletes = prune(ac, st, obs)
		return p.stop(ac, *st, *problem, resync), nil
	}
	st.CurrentRevision = target
	if err := p.setConfig(ac, obs, revs, target, latest); err != nil {
		return plan{}, err
	}
	ro := planRollout(ac, st.Consumers, obs.consumers, revs, target, now)
	st.Consumers, p.starts = ro.consumers, ro.starts
	p.deletes = prune(ac, st, obs)
	setRolloutStatus(ac, st, latest, debouncing > 0)
	p.status, p.requeue = *st, nextLook(resync, debouncing, ro.poll)
	return p, nil
}

// stop ends the plan at a problem the user must fix: the status is st with
// the problem's conditions, and no consumer starts. Consumers keep running
// the revisions they run.
func (p plan) stop(ac *v1alpha1.AppConfig, st v1alpha1.AppConfigStatus, problem conditions.Problem, resync time.Duration) plan {
	p.status = problemStatus(ac, st, problem)
	p.problem = &problem
	p.starts = nil
	p.requeue = retryAfter(problem, resync)
	return p
}

// renderSpec validates the spec and renders its values. An invalid spec is
// a problem; a render that fails once the spec is valid is a bug.
func renderSpec(ac *v1alpha1.AppConfig) (map[string]string, *conditions.Problem, error) {
	spec := appconfig.Spec{Data: ac.Spec.Data, Overrides: ac.Spec.Overrides}
	vars := appconfig.Vars{Namespace: ac.Namespace, Application: ac.Spec.Application}
	if errs := appconfig.Validate(spec, ac.Spec.Environment, vars); len(errs) > 0 {
		msg := (&appconfig.ValidationError{Errors: errs}).Error()
		return nil, &conditions.Problem{Reason: v1alpha1.ReasonInvalidSpec,
			Message: "Invalid configuration: " + strings.ReplaceAll(msg, "\n", "; ")}, nil
	}
	values, err := appconfig.Render(spec, ac.Spec.Environment, vars)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering AppConfig %s: %w", ac.Name, err)
	}
	return values, nil, nil
}

// render sets the latest revision's objects in the plan, and the hash
// key's when it is new. It returns the latest revision's name, and the
// revisions by name: the observed ones and the latest.
func (p *plan) render(ac *v1alpha1.AppConfig, obs observed, values map[string]string) (string, map[string]appconfig.Revision) {
	tokens := Tokens(obs.hashKey, obs.secrets)
	rev := appconfig.NewRevision(values, tokens)
	name := RevisionNameOf(rev)
	if obs.newHashKey {
		p.hashKey = HashKeySecret(ac, obs.hashKey)
	}
	p.revision = RevisionConfigMap(ac, name, values, tokens)
	if len(obs.secrets) > 0 {
		p.revisionSecret = RevisionSecret(ac, name, obs.secrets)
	}
	revs := make(map[string]appconfig.Revision, len(obs.revisions)+1)
	for n, r := range obs.revisions {
		revs[n] = r
	}
	revs[name] = rev
	return name, revs
}

// recordRevision adds the latest revision to the kept ones, newest first,
// unless it is kept already, and records it as the latest.
func recordRevision(st *v1alpha1.AppConfigStatus, name string, keys int32, now time.Time) {
	if !hasRevision(st, name) {
		st.Revisions = append([]v1alpha1.ConfigRevision{{Name: name, Created: metav1.NewTime(now), Keys: keys}}, st.Revisions...)
	}
	if st.LatestRevision != name {
		st.LatestRevision = name
		t := metav1.NewTime(now)
		st.LatestRevisionTime = &t
	}
}

// chooseTarget is the revision consumers move to: the pinned one, or the
// latest once it has been unchanged for the debounce window, and until then
// how long that is. The first revision needs no debounce: nothing runs yet.
// A pin to a revision that is not kept is a problem.
func chooseTarget(ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, latest string, now time.Time) (string, time.Duration, *conditions.Problem) {
	switch current := st.CurrentRevision; {
	case ac.Spec.Revision != "":
		if !hasRevision(st, ac.Spec.Revision) {
			return current, 0, &conditions.Problem{Reason: v1alpha1.ReasonRevisionNotFound, Message: fmt.Sprintf(
				"Pinned revision %s is not kept; kept revisions: %s", ac.Spec.Revision, strings.Join(revisionNames(st), ", "))}
		}
		return ac.Spec.Revision, 0, nil
	case current == "":
		return latest, 0, nil
	case current != latest:
		if wait := st.LatestRevisionTime.Add(debounce(ac)).Sub(now); wait > 0 {
			return current, wait, nil
		}
		return latest, 0, nil
	default:
		return current, 0, nil
	}
}

// setConfig sets in the plan the objects that make "<application>-config"
// hold the target revision: its values, and its secret values when it has
// secret keys.
func (p *plan) setConfig(ac *v1alpha1.AppConfig, obs observed, revs map[string]appconfig.Revision, target, latest string) error {
	rev, ok := revs[target]
	if !ok {
		return fmt.Errorf("reading revision %s: ConfigMap %s does not exist", target, ac.RevisionName(target))
	}
	p.configMap = ConfigMap(ac, target, rev.Data)
	if len(rev.SecretKeys) == 0 {
		return nil
	}
	data, ok := obs.revisionSecrets[target]
	if target == latest {
		data, ok = obs.secrets, true
	}
	if !ok {
		return fmt.Errorf("reading the Secret of revision %s: Secret %s does not exist", target, ac.RevisionName(target))
	}
	p.configSecret = ConfigSecret(ac, target, data)
	return nil
}

// prune drops from st the revisions that are neither among the newest
// revisionHistoryLimit, nor current, latest, pinned, nor run by a consumer,
// and returns the ConfigMaps and Secrets of revisions not kept.
func prune(ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, obs observed) []client.Object {
	keep := map[string]bool{st.CurrentRevision: true, st.LatestRevision: true, ac.Spec.Revision: true}
	for _, c := range st.Consumers {
		keep[c.Revision] = true
	}
	sort.SliceStable(st.Revisions, func(i, j int) bool { return st.Revisions[i].Created.After(st.Revisions[j].Created.Time) })
	for i, rev := range st.Revisions {
		if i < historyLimit(ac) {
			keep[rev.Name] = true
		}
	}
	st.Revisions = slices.DeleteFunc(st.Revisions, func(rev v1alpha1.ConfigRevision) bool { return !keep[rev.Name] })

	var gone []client.Object
	for i := range obs.configMaps {
		if pruned(ac, &obs.configMaps[i], keep) {
			gone = append(gone, &obs.configMaps[i])
		}
	}
	for i := range obs.secretObjects {
		if pruned(ac, &obs.secretObjects[i], keep) {
			gone = append(gone, &obs.secretObjects[i])
		}
	}
	return gone
}

// pruned reports whether obj is the ConfigMap or Secret of a revision that
// is not kept.
func pruned(ac *v1alpha1.AppConfig, obj client.Object, keep map[string]bool) bool {
	rev := obj.GetLabels()[v1alpha1.LabelRevision]
	return obj.GetName() == ac.RevisionName(rev) && !keep[rev]
}

// retryAfter is when to look again after a problem: never for one in the
// spec, whose fix brings an event; soon for a Secret that does not exist,
// as Secrets are not watched; after a minute for a failed apply.
func retryAfter(problem conditions.Problem, resync time.Duration) time.Duration {
	switch problem.Reason {
	case v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonRevisionNotFound:
		return 0
	case v1alpha1.ReasonSecretNotFound:
		return min(retrySecret, resync)
	default:
		return retryUserError
	}
}

// nextLook is when to look again after a plan carried out: at the resync,
// or sooner when the latest revision waits for its debounce window, or
// when a plain consumer rolls out.
func nextLook(resync, debouncing time.Duration, poll bool) time.Duration {
	next := resync
	if debouncing > 0 {
		next = min(next, debouncing)
	}
	if poll {
		next = min(next, pollRollout)
	}
	return next
}

// debounce is how long the configuration must be unchanged before its
// latest revision rolls out.
func debounce(ac *v1alpha1.AppConfig) time.Duration {
	if ro := ac.Spec.Rollout; ro != nil && ro.DebounceSeconds != nil {
		return time.Duration(*ro.DebounceSeconds) * time.Second
	}
	return defaultDebounce
}

// maxConcurrent is how many consumers may roll out at once.
func maxConcurrent(ac *v1alpha1.AppConfig) int {
	if ro := ac.Spec.Rollout; ro != nil && ro.MaxConcurrent != nil {
		return int(*ro.MaxConcurrent)
	}
	return defaultMaxConcurrent
}

// historyLimit is how many of the newest revisions are kept.
func historyLimit(ac *v1alpha1.AppConfig) int {
	if ac.Spec.RevisionHistoryLimit != nil {
		return int(*ac.Spec.RevisionHistoryLimit)
	}
	return defaultHistory
}

// hasRevision reports whether the status keeps the named revision.
func hasRevision(st *v1alpha1.AppConfigStatus, name string) bool {
	return slices.ContainsFunc(st.Revisions, func(r v1alpha1.ConfigRevision) bool { return r.Name == name })
}

// revisionNames are the names of the kept revisions, newest first.
func revisionNames(st *v1alpha1.AppConfigStatus) []string {
	names := make([]string, len(st.Revisions))
	for i, r := range st.Revisions {
		names[i] = r.Name
	}
	return names
}
