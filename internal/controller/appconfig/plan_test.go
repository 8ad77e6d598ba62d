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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/conditions"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const resync = 2 * time.Minute

// revisionOf is the name and revision that values render to.
func revisionOf(values map[string]string) (string, appconfig.Revision) {
	rev := appconfig.NewRevision(values, Tokens(nil, nil))
	return RevisionNameOf(rev), rev
}

// webApp is a WebApp consumer whose Deployment runs rev's hash of keys.
func webApp(name string, rev appconfig.Revision, healthy bool, keys ...string) consumer {
	return consumer{kind: v1alpha1.ConsumerKindWebApp, name: name, keys: keys, hash: rev.Hash(keys), healthy: healthy}
}

// entry is a status entry of a WebApp consumer using key K.
func entry(name, revision string, state v1alpha1.ConsumerState) v1alpha1.ConfigConsumer {
	since := metav1.NewTime(t0.Add(-time.Minute))
	return v1alpha1.ConfigConsumer{Kind: v1alpha1.ConsumerKindWebApp, Name: name, Keys: []string{"K"}, Revision: revision, State: state, Since: &since}
}

// withStatus is an AppConfig of generation 2 whose spec holds data and
// whose status has revisions kept, current the first, and consumers.
func withStatus(data map[string]string, revisions []string, consumers ...v1alpha1.ConfigConsumer) *v1alpha1.AppConfig {
	return newAC(func(ac *v1alpha1.AppConfig) {
		ac.Generation = 2
		ac.Spec.Data = data
		ac.Spec.Rollout = &v1alpha1.ConfigRollout{DebounceSeconds: new(int32(0)), MaxConcurrent: new(int32(1))}
		created := metav1.NewTime(t0.Add(-time.Hour))
		ac.Status = v1alpha1.AppConfigStatus{
			ObservedGeneration: 1, CurrentRevision: revisions[0], LatestRevision: revisions[0], LatestRevisionTime: &created,
			Consumers: consumers,
		}
		for _, r := range revisions {
			ac.Status.Revisions = append(ac.Status.Revisions, v1alpha1.ConfigRevision{Name: r, Created: created, Keys: 2})
		}
	})
}

func condition(st v1alpha1.AppConfigStatus, t string) metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestPlanFirstRevision(t *testing.T) {
	ac := newAC()
	name, rev := revisionOf(ac.Spec.Data)
	p, err := computePlan(ac, observed{consumers: []consumer{webApp("a", rev, true)}}, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	st := p.status
	if st.CurrentRevision != name || st.LatestRevision != name || len(st.Revisions) != 1 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v, want revision %s current and latest, for generation 1", st, name)
	}
	if p.revision == nil || *p.revision.Name != "shop-config-"+name || p.revisionSecret != nil || p.hashKey != nil {
		t.Errorf("renders %+v, secret %+v, hash key %+v", p.revision, p.revisionSecret, p.hashKey)
	}
	if p.configMap == nil || p.configMap.Data["A"] != "1" || p.configSecret != nil {
		t.Errorf("config %+v, secret %+v", p.configMap, p.configSecret)
	}
	if c := condition(st, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || st.Phase != v1alpha1.AppConfigReady {
		t.Errorf("Ready %+v, phase %s", c, st.Phase)
	}
	if len(st.Consumers) != 1 || st.Consumers[0].State != v1alpha1.ConsumerUpToDate || len(p.starts) != 0 || p.requeue != resync {
		t.Errorf("consumers %+v, starts %+v, requeue %s", st.Consumers, p.starts, p.requeue)
	}
}

func TestPlanSecretValues(t *testing.T) {
	ac := newAC(func(ac *v1alpha1.AppConfig) {
		ac.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"PASSWORD": {SecretName: "db", Key: "password"}}
	})
	obs := observed{secrets: map[string][]byte{"PASSWORD": []byte("s3cret")}, hashKey: []byte("key"), newHashKey: true}
	p, err := computePlan(ac, obs, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	if p.hashKey == nil || string(p.hashKey.Data[hashKeyField]) != "key" {
		t.Errorf("hash key Secret %+v, want one made of the new key", p.hashKey)
	}
	if p.revisionSecret == nil || string(p.revisionSecret.Data["PASSWORD"]) != "s3cret" {
		t.Errorf("revision Secret %+v", p.revisionSecret)
	}
	if p.configSecret == nil || string(p.configSecret.Data["PASSWORD"]) != "s3cret" {
		t.Errorf("config Secret %+v", p.configSecret)
	}
	if _, ok := p.revision.Data["PASSWORD"]; ok || strings.Contains(p.revision.Annotations[v1alpha1.AnnotationSecretTokens], "s3cret") {
		t.Errorf("the revision ConfigMap holds the secret value: %+v", p.revision)
	}
	if got := p.status.Revisions[0].Keys; got != 2 {
		t.Errorf("revision has %d keys, want 2", got)
	}
}

func TestPlanRollout(t *testing.T) {
	oldData, newData := map[string]string{"K": "1", "O": "x"}, map[string]string{"K": "2", "O": "x"}
	oldName, oldRev := revisionOf(oldData)
	newName, newRev := revisionOf(newData)
	failing := webApp("c1", newRev, false, "K")
	failing.failed = "Deployment c1: timed out"
	// Its counts say healthy, its progress deadline passed: it failed.
	failedFull := webApp("c1", newRev, true, "K")
	failedFull.failed = failing.failed
	tests := []struct {
		name       string
		ac         *v1alpha1.AppConfig
		found      []consumer
		wantStates []v1alpha1.ConsumerState
		wantRevs   []string
		wantStarts []string
		wantPhase  v1alpha1.AppConfigPhase
		wantReason string
	}{
		{
			name: "one at a time",
			ac: withStatus(newData, []string{oldName}, entry("c1", oldName, v1alpha1.ConsumerUpToDate),
				entry("c2", oldName, v1alpha1.ConsumerUpToDate)),
			found:      []consumer{webApp("c1", oldRev, true, "K"), webApp("c2", oldRev, true, "K")},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerRollingOut, v1alpha1.ConsumerPending},
			wantRevs:   []string{newName, oldName}, wantStarts: []string{"c1"},
			wantPhase: v1alpha1.AppConfigRollingOut, wantReason: v1alpha1.ReasonRollingOut,
		},
		{
			name: "a failed rollout holds the rest",
			ac: withStatus(newData, []string{newName, oldName}, entry("c1", newName, v1alpha1.ConsumerRollingOut),
				entry("c2", oldName, v1alpha1.ConsumerPending)),
			found:      []consumer{failing, webApp("c2", oldRev, true, "K")},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerFailed, v1alpha1.ConsumerPending},
			wantRevs:   []string{newName, oldName},
			wantPhase:  v1alpha1.AppConfigDegraded, wantReason: v1alpha1.ReasonRolloutFailed,
		},
		{
			name: "a failure wins over healthy counts",
			ac: withStatus(newData, []string{newName, oldName}, entry("c1", newName, v1alpha1.ConsumerRollingOut),
				entry("c2", oldName, v1alpha1.ConsumerPending)),
			found:      []consumer{failedFull, webApp("c2", oldRev, true, "K")},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerFailed, v1alpha1.ConsumerPending},
			wantRevs:   []string{newName, oldName},
			wantPhase:  v1alpha1.AppConfigDegraded, wantReason: v1alpha1.ReasonRolloutFailed,
		},
		{
			name: "the next starts once one is rolled out",
			ac: withStatus(newData, []string{newName, oldName}, entry("c1", newName, v1alpha1.ConsumerRollingOut),
				entry("c2", oldName, v1alpha1.ConsumerPending)),
			found:      []consumer{webApp("c1", newRev, true, "K"), webApp("c2", oldRev, true, "K")},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerUpToDate, v1alpha1.ConsumerRollingOut},
			wantRevs:   []string{newName, newName}, wantStarts: []string{"c2"},
			wantPhase: v1alpha1.AppConfigRollingOut, wantReason: v1alpha1.ReasonRollingOut,
		},
		{
			name:       "equal in the keys it uses",
			ac:         withStatus(newData, []string{oldName}, entry("o", oldName, v1alpha1.ConsumerUpToDate)),
			found:      []consumer{webApp("o", oldRev, true, "O")},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerUpToDate},
			wantRevs:   []string{oldName},
			wantPhase:  v1alpha1.AppConfigReady, wantReason: v1alpha1.ReasonRolledOut,
		},
		{
			name:       "blocked on a key the revision lacks",
			ac:         withStatus(newData, []string{oldName}),
			found:      []consumer{{kind: v1alpha1.ConsumerKindWebApp, name: "x", keys: []string{"X"}, absent: true}},
			wantStates: []v1alpha1.ConsumerState{v1alpha1.ConsumerBlocked},
			wantRevs:   []string{newName},
			wantPhase:  v1alpha1.AppConfigDegraded, wantReason: v1alpha1.ReasonConsumerBlocked,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := observed{revisions: map[string]appconfig.Revision{oldName: oldRev, newName: newRev}, consumers: tt.found}
			p, err := computePlan(tt.ac, obs, t0, resync)
			if err != nil {
				t.Fatal(err)
			}
			var states []v1alpha1.ConsumerState
			var revs, starts []string
			for _, c := range p.status.Consumers {
				states, revs = append(states, c.State), append(revs, c.Revision)
			}
			for _, s := range p.starts {
				starts = append(starts, s.name)
			}
			if !slices.Equal(states, tt.wantStates) || !slices.Equal(revs, tt.wantRevs) || !slices.Equal(starts, tt.wantStarts) {
				t.Errorf("states %v on %v, starts %v; want %v on %v, starts %v", states, revs, starts, tt.wantStates, tt.wantRevs, tt.wantStarts)
			}
			if c := condition(p.status, v1alpha1.ConditionReady); p.status.Phase != tt.wantPhase || c.Reason != tt.wantReason {
				t.Errorf("phase %s, Ready %+v; want %s, reason %s", p.status.Phase, c, tt.wantPhase, tt.wantReason)
			}
			if p.status.CurrentRevision != newName || p.status.ObservedGeneration != 2 {
				t.Errorf("current revision %s for generation %d, want %s for 2", p.status.CurrentRevision, p.status.ObservedGeneration, newName)
			}
		})
	}
}

func TestPlanStartSaysWhy(t *testing.T) {
	oldData, newData := map[string]string{"K": "1"}, map[string]string{"K": "2"}
	oldName, oldRev := revisionOf(oldData)
	_, newRev := revisionOf(newData)
	ac := withStatus(newData, []string{oldName}, entry("a", oldName, v1alpha1.ConsumerUpToDate))
	plain := consumer{kind: v1alpha1.ConsumerKindDeployment, name: "legacy", keys: []string{"K"}, healthy: true, plain: &corev1.ConfigMap{}}
	ac.Spec.Rollout.MaxConcurrent = new(int32(5))
	obs := observed{revisions: map[string]appconfig.Revision{oldName: oldRev}, consumers: []consumer{webApp("a", oldRev, true, "K"), plain}}
	p, err := computePlan(ac, obs, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "keys K changed", "legacy": "it opted in or changed the keys it uses"}
	if len(p.starts) != 2 {
		t.Fatalf("starts %+v, want a and legacy", p.starts)
	}
	for _, s := range p.starts {
		if s.why != want[s.name] || s.hash != newRev.Hash([]string{"K"}) {
			t.Errorf("%s starts because %q with hash %s, want %q with %s", s.name, s.why, s.hash, want[s.name], newRev.Hash([]string{"K"}))
		}
	}
	if p.requeue != pollRollout {
		t.Errorf("requeue %s, want %s while a plain consumer rolls out", p.requeue, pollRollout)
	}
}

func TestPlanDebounce(t *testing.T) {
	oldData, newData := map[string]string{"K": "1"}, map[string]string{"K": "2"}
	oldName, oldRev := revisionOf(oldData)
	newName, _ := revisionOf(newData)
	ac := withStatus(newData, []string{oldName}, entry("a", oldName, v1alpha1.ConsumerUpToDate))
	ac.Spec.Rollout.DebounceSeconds = new(int32(5))
	obs := observed{revisions: map[string]appconfig.Revision{oldName: oldRev}, consumers: []consumer{webApp("a", oldRev, true, "K")}}

	p, err := computePlan(ac, obs, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	st := p.status
	if st.CurrentRevision != oldName || st.LatestRevision != newName || !st.LatestRevisionTime.Time.Equal(t0) {
		t.Errorf("current %s latest %s at %v; want current %s, latest %s at %v", st.CurrentRevision, st.LatestRevision, st.LatestRevisionTime, oldName, newName, t0)
	}
	if st.Phase != v1alpha1.AppConfigPending || condition(st, v1alpha1.ConditionProgressing).Reason != v1alpha1.ReasonDebouncing || p.requeue != 5*time.Second {
		t.Errorf("phase %s, Progressing %+v, requeue %s", st.Phase, condition(st, v1alpha1.ConditionProgressing), p.requeue)
	}

	// Once the window has passed, the latest becomes current.
	ac.Status = st
	p, err = computePlan(ac, obs, t0.Add(5*time.Second), resync)
	if err != nil {
		t.Fatal(err)
	}
	if p.status.CurrentRevision != newName || len(p.starts) != 1 {
		t.Errorf("after the window: current %s, starts %+v; want %s and a start", p.status.CurrentRevision, p.starts, newName)
	}
}

func TestPlanProblems(t *testing.T) {
	_, rev := revisionOf(map[string]string{"A": "1"})
	tests := []struct {
		name        string
		ac          *v1alpha1.AppConfig
		obs         observed
		wantReason  string
		wantPhase   v1alpha1.AppConfigPhase
		wantRequeue time.Duration
		wantRender  bool
	}{
		{
			name: "invalid spec",
			ac: newAC(func(ac *v1alpha1.AppConfig) {
				ac.Spec.Data = map[string]string{"A": "${B}", "B": "${A}"}
			}),
			wantReason: v1alpha1.ReasonInvalidSpec, wantPhase: v1alpha1.AppConfigPending,
		},
		{
			name:       "missing Secret",
			ac:         newAC(),
			obs:        observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonSecretNotFound, Message: "secretData S: Secret db does not exist"}},
			wantReason: v1alpha1.ReasonSecretNotFound, wantPhase: v1alpha1.AppConfigDegraded, wantRequeue: retrySecret,
		},
		{
			name:       "hash key conflict",
			ac:         newAC(),
			obs:        observed{problem: &conditions.Problem{Reason: v1alpha1.ReasonNameConflict, Message: "conflict"}},
			wantReason: v1alpha1.ReasonNameConflict, wantPhase: v1alpha1.AppConfigDegraded, wantRequeue: retryUserError,
		},
		{
			name: "pin to a revision not kept",
			ac: newAC(func(ac *v1alpha1.AppConfig) {
				ac.Spec.Revision = "0123456789"
			}),
			obs:        observed{consumers: []consumer{webApp("a", rev, true)}},
			wantReason: v1alpha1.ReasonRevisionNotFound, wantPhase: v1alpha1.AppConfigDegraded, wantRender: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := computePlan(tt.ac, tt.obs, t0, resync)
			if err != nil {
				t.Fatal(err)
			}
			st := p.status
			if p.problem == nil || p.problem.Reason != tt.wantReason || st.Phase != tt.wantPhase || p.requeue != tt.wantRequeue {
				t.Errorf("problem %+v, phase %s, requeue %s; want %s, %s, %s", p.problem, st.Phase, p.requeue, tt.wantReason, tt.wantPhase, tt.wantRequeue)
			}
			for _, ct := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
				if c := condition(st, ct); c.Reason != tt.wantReason || c.ObservedGeneration != tt.ac.Generation {
					t.Errorf("%s = %+v, want reason %s", ct, c, tt.wantReason)
				}
			}
			if st.ObservedGeneration != tt.ac.Generation || len(st.Consumers) != 0 || st.CurrentRevision != "" {
				t.Errorf("status %+v: want this generation's, nothing rolled out", st)
			}
			if (p.revision != nil) != tt.wantRender || p.configMap != nil || len(p.starts) != 0 {
				t.Errorf("renders %v (want %v), config %+v, starts %+v", p.revision != nil, tt.wantRender, p.configMap, p.starts)
			}
		})
	}
}

func TestPlanPrunes(t *testing.T) {
	names := make([]string, 4)
	revs := map[string]appconfig.Revision{}
	for i := range names {
		var rev appconfig.Revision
		names[i], rev = revisionOf(map[string]string{"K": "1", "N": string(rune('a' + i))})
		revs[names[i]] = rev
	}
	// names[3] is rendered now; names[0] is run by b, which uses K only.
	ac := withStatus(map[string]string{"K": "1", "N": "d"}, []string{names[2], names[1], names[0]}, entry("b", names[0], v1alpha1.ConsumerUpToDate))
	ac.Spec.RevisionHistoryLimit = new(int32(2))
	for i := range ac.Status.Revisions {
		ac.Status.Revisions[i].Created = metav1.NewTime(t0.Add(-time.Duration(i+1) * time.Hour))
	}
	var cms []corev1.ConfigMap
	for _, n := range names[:3] {
		cms = append(cms, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ac.RevisionName(n), Labels: RevisionLabels(ac, n)}})
	}
	cms = append(cms, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ac.ConfigName(), Labels: RevisionLabels(ac, names[2])}})
	obs := observed{revisions: revs, configMaps: cms, consumers: []consumer{webApp("b", revs[names[0]], true, "K")}}

	p, err := computePlan(ac, obs, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	var kept, deleted []string
	for _, r := range p.status.Revisions {
		kept = append(kept, r.Name)
	}
	for _, o := range p.deletes {
		deleted = append(deleted, o.GetName())
	}
	if want := []string{names[3], names[2], names[0]}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want the two newest and the one b runs, %v", kept, want)
	}
	if want := []string{ac.RevisionName(names[1])}; !slices.Equal(deleted, want) {
		t.Errorf("deletes %v, want %v", deleted, want)
	}
}

// drain returns the events the recorder got.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestAnnounce(t *testing.T) {
	oldData, newData := map[string]string{"K": "1"}, map[string]string{"K": "2"}
	oldName, _ := revisionOf(oldData)
	newName, newRev := revisionOf(newData)
	ac := withStatus(newData, []string{newName, oldName},
		entry("done", newName, v1alpha1.ConsumerRollingOut), entry("fails", newName, v1alpha1.ConsumerRollingOut),
		entry("failed", newName, v1alpha1.ConsumerFailed), entry("next", oldName, v1alpha1.ConsumerPending))
	ac.Spec.Rollout.MaxConcurrent = new(int32(3))
	ac.Status.Revisions = ac.Status.Revisions[1:] // the new one is created now
	fails, failed := webApp("fails", newRev, false, "K"), webApp("failed", newRev, false, "K")
	fails.failed, failed.failed = "Deployment fails: timed out", "Deployment failed: timed out"
	blocked := consumer{kind: v1alpha1.ConsumerKindWebApp, name: "blocked", keys: []string{"X"}, absent: true}
	obs := observed{
		revisions: map[string]appconfig.Revision{oldName: {}, newName: newRev},
		consumers: []consumer{blocked, webApp("done", newRev, true, "K"), failed, fails, webApp("next", appconfig.Revision{}, true, "K")},
	}
	p, err := computePlan(ac, obs, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(20)
	(&Reconciler{Recorder: rec}).announce(t.Context(), ac, p)
	want := []string{
		"Normal RevisionCreated Rendered revision " + newName + " with 1 keys",
		"Warning ConsumerBlocked WebApp blocked uses X, which revision " + newName + " does not have",
		"Normal RolledOut WebApp done runs revision " + newName,
		"Warning RolloutFailed Rollout of revision " + newName + " to WebApp fails failed: Deployment fails: timed out",
		"Normal RollingOut Rolling out revision " + newName + " to WebApp next: keys K changed",
	}
	if got := drain(rec); !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A problem is announced once, while it lasts.
	bad := newAC(func(ac *v1alpha1.AppConfig) { ac.Spec.Data = map[string]string{"A": "${A}"} })
	p, err = computePlan(bad, observed{}, t0, resync)
	if err != nil {
		t.Fatal(err)
	}
	(&Reconciler{Recorder: rec}).announce(t.Context(), bad, p)
	bad.Status = p.status
	(&Reconciler{Recorder: rec}).announce(t.Context(), bad, p)
	if got := drain(rec); len(got) != 1 || !strings.HasPrefix(got[0], "Warning InvalidSpec Invalid configuration: ") {
		t.Errorf("events %v, want one InvalidSpec", got)
	}
}
