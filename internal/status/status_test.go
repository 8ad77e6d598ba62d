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

package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestRepeatedWriteOnAStaleCopyIsSkipped checks the write log: a status
// computed again on the same stale version of an object, with only a new
// transition time, is not written twice; a new version, or another status,
// is.
func TestRepeatedWriteOnAStaleCopyIsSkipped(t *testing.T) {
	l := &writeLog{byUID: map[types.UID]lastWrite{}, maxLen: 2}
	st := func(phase v1alpha1.WebAppPhase, at time.Time) v1alpha1.WebAppStatus {
		return v1alpha1.WebAppStatus{ObservedGeneration: 1, Phase: phase, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCreating, LastTransitionTime: metav1.NewTime(at)},
		}}
	}
	sum := func(s v1alpha1.WebAppStatus) [32]byte {
		d, err := digest(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	app := &v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{UID: "a", ResourceVersion: "10"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := st(v1alpha1.WebAppDeploying, now)
	if l.repeats(app, sum(first)) {
		t.Fatal("nothing written yet, yet a repeat")
	}
	l.remember(app.UID, "10", "11", sum(first))
	if !l.repeats(app, sum(st(v1alpha1.WebAppDeploying, now.Add(3*time.Second)))) {
		t.Error("the same status on the same stale version, a later transition time: not a repeat")
	}
	if l.repeats(app, sum(st(v1alpha1.WebAppRunning, now))) {
		t.Error("another status counted as a repeat")
	}
	app.ResourceVersion = "11"
	if l.repeats(app, sum(first)) {
		t.Error("a newer version of the object counted as a repeat")
	}
	l.remember("b", "1", "2", sum(first))
	l.remember("c", "1", "2", sum(first))
	if len(l.byUID) > 2 {
		t.Errorf("the log holds %d objects, more than its limit of 2", len(l.byUID))
	}
}

// TestOwnEchoIsTheVersionTheWriteMade checks that the write log tells the
// echo of its own status write, the version that write made, from every
// other version of the object and from other objects.
func TestOwnEchoIsTheVersionTheWriteMade(t *testing.T) {
	l := &writeLog{byUID: map[types.UID]lastWrite{}, maxLen: 10}
	app := func(uid types.UID, rv string) *v1alpha1.WebApp {
		return &v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: rv}}
	}
	if l.made(app("a", "11")) {
		t.Fatal("nothing written yet, yet an echo")
	}
	l.remember("a", "10", "11", [32]byte{1})
	for _, c := range []struct {
		obj  *v1alpha1.WebApp
		want bool
		what string
	}{
		{app("a", "11"), true, "the version the write made"},
		{app("a", "10"), false, "the version it was written on"},
		{app("a", "12"), false, "a later version by someone else"},
		{app("a", ""), false, "an object without a version"},
		{app("b", "11"), false, "another object with the same version"},
	} {
		if got := l.made(c.obj); got != c.want {
			t.Errorf("%s: an echo = %v, want %v", c.what, got, c.want)
		}
	}
	l.remember("a", "11", "15", [32]byte{2})
	if l.made(app("a", "11")) {
		t.Error("the echo of an earlier write still counts after a later one")
	}
}
