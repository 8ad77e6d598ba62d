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

package realnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// TestReplicaRebuiltOnANewVolume follows docs/database.md's way to rebuild
// a replica (one whose data runs past a new primary's history, or whose
// volume is lost): its PersistentVolumeClaim deleted, then its pod. The
// StatefulSet creates both again, and the new instance is a clone of the
// primary (the same system identifier) that streams from it, with the row
// written before and the one written after; the primary and the term do
// not change.
func TestReplicaRebuiltOnANewVolume(t *testing.T) {
	requireClusterBeside(t)
	applyDatabase(t, "rebuilt", "postgres", "15", 2, "")
	primary := jsonpath(t, "database/rebuilt", "{.status.primary}")
	term := jsonpath(t, "database/rebuilt", "{.status.term}")
	replica := map[string]string{"rebuilt-0": "rebuilt-1", "rebuilt-1": "rebuilt-0"}[primary]
	claim := "data-" + replica
	mustSQL(t, postgresSuper, primary, "create table kept (v text); insert into kept values ('before')")
	rows := func(want string) func() error {
		return func() error {
			got, err := postgresSuper(t.Context(), replica, "select string_agg(v, ',' order by v) from kept")
			if err != nil || got != want {
				return fmt.Errorf("%s holds %q, want %q (%w)", replica, got, want, err)
			}
			return nil
		}
	}
	eventually(t, 2*time.Minute, "the row on the replica", rows("before"))
	system := mustSQL(t, postgresSuper, primary, "select system_identifier from pg_control_system()")
	oldClaim := jsonpath(t, "pvc/"+claim, "{.metadata.uid}")

	began := time.Now()
	kubectl(t, "delete", "pvc", claim, "--wait=false")
	kubectl(t, "delete", "pod", replica)
	eventually(t, 5*time.Minute, "a new claim "+claim+", Bound", func() error {
		out, err := devenv.Kubectl(t.Context(), cluster, nil, "get", "pvc", claim, "-o", "jsonpath={.metadata.uid} {.status.phase}")
		if err != nil {
			return err
		}
		uid, phase, _ := strings.Cut(out, " ")
		if uid == oldClaim || phase != "Bound" {
			return fmt.Errorf("the claim %s is %s (the deleted one was %s)", uid, phase, oldClaim)
		}
		return nil
	})
	eventually(t, 5*time.Minute, replica+" streaming from "+primary, func() error {
		got, err := postgresSuper(t.Context(), replica, "select status from pg_stat_wal_receiver")
		if err != nil || got != "streaming" {
			return fmt.Errorf("WAL receiver %q (%w)", got, err)
		}
		return nil
	})
	t.Logf("%s rebuilt on a new volume and streaming %v after its claim and pod were deleted", replica, time.Since(began).Round(time.Millisecond))
	if got := mustSQL(t, postgresSuper, replica, "select system_identifier from pg_control_system()"); got != system {
		t.Errorf("%s has system identifier %s, the primary %s: not a clone of it", replica, got, system)
	}
	eventually(t, time.Minute, "the row written before, on the rebuilt replica", rows("before"))
	mustSQL(t, postgresSuper, primary, "insert into kept values ('later')")
	eventually(t, time.Minute, "the row written after, on the rebuilt replica", rows("before,later"))
	kubectl(t, "wait", "--for=condition=Ready", "database/rebuilt", "--timeout=300s")
	if got := jsonpath(t, "database/rebuilt", "{.status.primary} {.status.term}"); got != primary+" "+term {
		t.Errorf("primary and term %q after the rebuild, want %s %s", got, primary, term)
	}
}
