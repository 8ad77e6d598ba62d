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
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
)

// start is a consumer whose rollout of the target revision starts now.
type start struct {
	consumer
	// hash is the hash of the keys it uses in the target revision, which a
	// plain consumer's pod template gets.
	hash string
	// why says what made it roll out, for the event.
	why string
}

// rolloutPlan is where every consumer stands once the plan is carried out.
type rolloutPlan struct {
	// consumers are the status' entries, in the order consumers found them.
	consumers []v1alpha1.ConfigConsumer
	// starts are the consumers that start rolling out now.
	starts []start
	// poll: a plain consumer is rolling out, which no watch reports on.
	poll bool
}

// planRollout works out where each consumer stands against the target
// revision, and starts the rollouts of waiting consumers while fewer than
// maxConcurrent are under way. prev are the status' entries; revs holds
// the revisions by name, the target among them.
func planRollout(ac *v1alpha1.AppConfig, prev []v1alpha1.ConfigConsumer, found []consumer,
	revs map[string]appconfig.Revision, target string, now time.Time) rolloutPlan {
	before := map[string]v1alpha1.ConfigConsumer{}
	for _, c := range prev {
		before[c.Kind+"/"+c.Name] = c
	}
	ro := rolloutPlan{consumers: make([]v1alpha1.ConfigConsumer, 0, len(found))}
	inFlight := 0
	for _, c := range found {
		entry := assess(c, before[c.kind+"/"+c.name], revs, target, now)
		switch entry.State {
		case v1alpha1.ConsumerFailed:
			inFlight++
		case v1alpha1.ConsumerRollingOut:
			if !c.absent {
				inFlight++
			}
			ro.poll = ro.poll || c.plain != nil
		}
		ro.consumers = append(ro.consumers, entry)
	}

	targetRev := revs[target]
	for i := range ro.consumers {
		entry := &ro.consumers[i]
		if entry.State != v1alpha1.ConsumerPending {
			continue
		}
		if inFlight >= maxConcurrent(ac) {
			break
		}
		ro.starts = append(ro.starts, startOf(found[i], revs[entry.Revision], targetRev, entry.Revision == target))
		ro.poll = ro.poll || found[i].plain != nil
		entry.Revision = target
		setState(entry, v1alpha1.ConsumerRollingOut, "", now)
		inFlight++
	}
	return ro
}

// assess is where one consumer stands against the target revision, from
// its previous entry and its workload, before any rollout starts.
func assess(c consumer, prev v1alpha1.ConfigConsumer, revs map[string]appconfig.Revision, target string, now time.Time) v1alpha1.ConfigConsumer {
	entry := v1alpha1.ConfigConsumer{Kind: c.kind, Name: c.name, Keys: c.keys, Revision: prev.Revision, State: prev.State, Since: prev.Since}
	if entry.Revision == "" {
		entry.Revision = target
	}
	targetRev := revs[target]
	runs, ok := revs[entry.Revision]
	if !ok {
		// Its revision is gone (it cannot be, while it is in use, unless
		// someone deleted it): move it to the target.
		entry.Revision, runs = target, targetRev
	}
	missing := missingKeys(targetRev, c.keys)
	switch {
	case len(missing) > 0:
		// It waits, on whatever it runs, until the keys exist.
		setState(&entry, v1alpha1.ConsumerBlocked, fmt.Sprintf("uses %s, which revision %s does not have", strings.Join(missing, ", "), target), now)
	case entry.Revision != target && len(runs.Changed(targetRev, c.keys)) == 0:
		// Equal in the keys it uses: it keeps running what it runs.
		setState(&entry, v1alpha1.ConsumerUpToDate, "", now)
	case entry.Revision != target, c.plain != nil && c.hash != targetRev.Hash(c.keys):
		// Keys it uses changed; or a plain workload just opted in, or
		// changed the keys it uses, and rolls out once, so that its pods
		// are known to run the current values of its keys.
		setState(&entry, v1alpha1.ConsumerPending, "", now)
	case c.failed != "":
		// The workload says its rollout failed, whatever its counts say.
		setState(&entry, v1alpha1.ConsumerFailed, c.failed, now)
	case c.hash == targetRev.Hash(c.keys) && c.healthy:
		setState(&entry, v1alpha1.ConsumerUpToDate, "", now)
	default:
		setState(&entry, v1alpha1.ConsumerRollingOut, "", now)
	}
	return entry
}

// startOf is the start of a waiting consumer's rollout from the revision
// it runs to the target; same is true when it runs the target already.
func startOf(c consumer, runs, target appconfig.Revision, same bool) start {
	why := "keys " + strings.Join(runs.Changed(target, c.keys), ", ") + " changed"
	if same {
		why = "it opted in or changed the keys it uses"
	}
	return start{consumer: c, hash: target.Hash(c.keys), why: why}
}

// setState moves a consumer's entry to state s, with its message; Since
// moves only when the state changes.
func setState(c *v1alpha1.ConfigConsumer, s v1alpha1.ConsumerState, msg string, now time.Time) {
	if c.State != s || c.Since == nil {
		t := metav1.NewTime(now)
		c.Since = &t
	}
	c.State, c.Message = s, msg
}

// missingKeys are the keys that the revision does not have.
func missingKeys(rev appconfig.Revision, keys []string) []string {
	var missing []string
	for _, k := range keys {
		if !rev.Has(k) {
			missing = append(missing, k)
		}
	}
	return missing
}
