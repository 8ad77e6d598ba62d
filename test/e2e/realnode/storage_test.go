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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/localcluster"
)

// volumeDF is df's view of the PostgreSQL instance's data volume, in KiB:
// used, available, size.
func volumeDF(t *testing.T, pod string) (used, avail, size int64) {
	t.Helper()
	out, err := execIn(t.Context(), pod, "postgres", "", "df", "-k", "--output=used,avail,size", "/var/lib/postgresql/data")
	if err != nil {
		t.Fatalf("df in %s: %v: %s", pod, err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 3 {
		t.Fatalf("df in %s: %q", pod, out)
	}
	n := make([]int64, 3)
	for i := range f {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			t.Fatalf("df in %s: %q", pod, out)
		}
	}
	return n[0], n[1], n[2]
}

// usedPercent is df's Use%: used over used plus available.
func usedPercent(used, avail int64) float64 { return 100 * float64(used) / float64(used+avail) }

func quantityMi(t *testing.T, object, path string) int64 {
	t.Helper()
	s := jsonpath(t, object, path)
	n, ok := strings.CutSuffix(s, "Mi")
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s %s = %q, want a size in Mi", object, path, s)
	}
	return v
}

// fillSQL inserts about mb MiB of rows into the table fill: 960 bytes
// each, below the size PostgreSQL compresses (TOAST, 2 kB), with no sort
// or aggregate that would spill to temporary files.
func fillSQL(mb int) string {
	return fmt.Sprintf(`create table if not exists fill (id bigserial, pad text);
insert into fill (pad) select repeat(md5(g::text || random()::text), 30) from generate_series(1, %d) g;`, mb*1000)
}

// TestPostgresStorageGrows runs a PostgreSQL Database on the expandable
// local class (tmpfs volumes of the claim's size, grown online), 96Mi with
// autoGrow at 80% by 50%, up to 1Gi:
//   - rows written past the threshold: the claim and the StatefulSet's
//     claim template grow, df in the pod shows the larger size, and neither
//     the pod nor the server restarted;
//   - one insert larger than the space left fills it: the write is refused for
//     want of space, and with no edit of any kind the operator grows the
//     volume and the server accepts writes again;
//   - on the plain local class, which cannot expand, a volume over the
//     threshold gets the StorageGrowthBlocked condition.
func TestPostgresStorageGrows(t *testing.T) {
	requireCluster(t)
	applyDatabase(t, "growpg", "postgres", "15", 1, fmt.Sprintf(`  storage:
    size: 96Mi
    storageClassName: %s
    autoGrow: {thresholdPercent: 80, incrementPercent: 50, maximum: 1Gi}
  parameters: {max_wal_size: "32MB", min_wal_size: "32MB"}
`, localcluster.ExpandableStorageClassName))
	pod := "growpg-0"
	used, avail, size := volumeDF(t, pod)
	t.Logf("after initdb: %d KiB used of %d (%.0f%%)", used, size, usedPercent(used, avail))
	if size != 96*1024 {
		t.Fatalf("df shows %d KiB, want the claim's 96Mi", size)
	}
	uid := jsonpath(t, "pod/"+pod, "{.metadata.uid}")
	restarts := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}")
	started := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()")

	// Past the threshold, a few MiB at a time.
	var crossed time.Time
	for range 40 {
		mustSQL(t, postgresSuper, pod, "\\c app\n"+fillSQL(3)+"\ncheckpoint;")
		used, avail, _ = volumeDF(t, pod)
		if usedPercent(used, avail) >= 80 {
			crossed = time.Now()
			break
		}
	}
	if crossed.IsZero() {
		t.Fatalf("never past 80%%: %d KiB used, %d available", used, avail)
	}
	t.Logf("past the threshold: %.0f%% used", usedPercent(used, avail))
	eventually(t, 2*time.Minute, "the claim asks for more", func() error {
		if mi := quantityMi(t, "pvc/data-"+pod, "{.spec.resources.requests.storage}"); mi <= 96 {
			return fmt.Errorf("the claim asks for %dMi", mi)
		}
		return nil
	})
	requested := time.Since(crossed)
	grownMi := quantityMi(t, "pvc/data-"+pod, "{.spec.resources.requests.storage}")
	if grownMi != 144 {
		t.Errorf("grew to %dMi, want 144Mi (96Mi plus 50%%)", grownMi)
	}
	eventually(t, time.Minute, "df shows the larger volume", func() error {
		if _, _, size := volumeDF(t, pod); size != grownMi*1024 {
			return fmt.Errorf("df shows %d KiB", size)
		}
		return nil
	})
	resized := time.Since(crossed)
	eventually(t, time.Minute, "the claim's capacity", func() error {
		if mi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}"); mi != grownMi {
			return fmt.Errorf("capacity %dMi", mi)
		}
		return nil
	})
	eventually(t, 2*time.Minute, "the StatefulSet's claim template grows", func() error {
		if mi := quantityMi(t, "statefulset/growpg", "{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}"); mi != grownMi {
			return fmt.Errorf("the template asks for %dMi", mi)
		}
		return nil
	})
	templated := time.Since(crossed)
	t.Logf("threshold crossed -> claim asks for %dMi %v, df shows it %v, StatefulSet recreated with it %v",
		grownMi, requested.Round(time.Millisecond), resized.Round(time.Millisecond), templated.Round(time.Millisecond))
	kubectl(t, "wait", "--for=condition=Ready", "database/growpg", "--timeout=120s")
	if got := jsonpath(t, "pod/"+pod, "{.metadata.uid}"); got != uid {
		t.Error("the pod was replaced")
	}
	if got := jsonpath(t, "pod/"+pod, "{.status.containerStatuses[0].restartCount}"); got != restarts {
		t.Errorf("the container restarted: %s restarts, was %s", got, restarts)
	}
	if got := mustSQL(t, postgresSuper, pod, "select pg_postmaster_start_time()"); got != started {
		t.Errorf("the server restarted: started %s, was %s", got, started)
	}
	if got := jsonpath(t, "database/growpg", "{.status.storageSize}"); got != fmt.Sprintf("%dMi", grownMi) {
		t.Errorf("status.storageSize = %s", got)
	}

	// One insert larger than the space left: refused once the volume is
	// full. Should the operator grow the volume during the insert far
	// enough for it to succeed, another follows.
	var out string
	var err error
	var began, full time.Time
	for try := range 3 {
		_, avail, size = volumeDF(t, pod)
		mb := int(avail/1024) + 100
		began = time.Now()
		out, err = postgresSuper(t.Context(), pod, "\\c app\n"+fillSQL(mb))
		full = time.Now()
		if err != nil {
			t.Logf("inserting %d MiB into %d KiB with %d available: refused %v after it began", mb, size, avail, full.Sub(began).Round(time.Millisecond))
			break
		}
		t.Logf("try %d: the insert of %d MiB succeeded: the volume grew during it", try+1, mb)
	}
	if err == nil {
		t.Fatal("three inserts larger than the space left succeeded")
	}
	grownMi = quantityMi(t, "pvc/data-"+pod, "{.spec.resources.requests.storage}")
	// kubectl's error carries psql's standard error.
	refusal := out + err.Error()
	if !strings.Contains(refusal, "No space left on device") && !strings.Contains(refusal, "could not extend file") &&
		!strings.Contains(refusal, "server closed the connection") && !strings.Contains(refusal, "terminating connection") {
		t.Fatalf("the insert failed, not for want of space: %v: %s", err, out)
	}
	t.Logf("refused: %s", refusal)
	used, avail, _ = volumeDF(t, pod)
	t.Logf("after the refusal: df shows %d KiB used, %d available (%.0f%%)", used, avail, usedPercent(used, avail))
	// The operator grows the full volume by itself.
	eventually(t, 2*time.Minute, "the full volume grows", func() error {
		if mi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}"); mi <= grownMi {
			return fmt.Errorf("the claim has %dMi", mi)
		}
		return nil
	})
	regrown := time.Now()
	nowMi := quantityMi(t, "pvc/data-"+pod, "{.status.capacity.storage}")
	// A write that needs room (20 MiB, more than was left) is accepted
	// again, on the server as it runs or once it has restarted.
	var accepted time.Time
	attempts := 0
	eventually(t, 5*time.Minute, "writes of 20 MiB accepted again", func() error {
		attempts++
		out, err := postgresSuper(t.Context(), pod, "\\c app\n"+fillSQL(20)+"\ncreate table if not exists after_full (at timestamptz); insert into after_full values (now());")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		accepted = time.Now()
		return nil
	})
	t.Logf("disk full -> claim grown from %dMi to %dMi %v later with no edit -> 20 MiB written %v after the refusal (%d attempts)",
		grownMi, nowMi, regrown.Sub(full).Round(time.Millisecond), accepted.Sub(full).Round(time.Millisecond), attempts)
	if _, _, size := volumeDF(t, pod); size != nowMi*1024 {
		t.Errorf("df shows %d KiB, want %dMi", size, nowMi)
	}
	if got := mustSQL(t, postgresSuper, pod, "\\c app\nselect count(*) from after_full"); got != "1" {
		t.Errorf("%s rows after the full disk, want 1", got)
	}
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=growpg,reason=StorageGrowing", "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	t.Logf("StorageGrowing events:\n%s", events)
}

// TestPostgresStorageCannotGrowOnAFixedClass: on the plain local class
// (directories on the host's file system, no volume expansion) with the
// lowest threshold, 50%, the instance reports the host file system's
// usage; when that is past 50%, StorageGrowthBlocked says
// StorageClassCannotExpand and the claim is left as it is.
func TestPostgresStorageCannotGrowOnAFixedClass(t *testing.T) {
	requireCluster(t)
	applyDatabase(t, "fixedpg", "postgres", "15", 1, fmt.Sprintf(`  storage:
    size: 96Mi
    storageClassName: %s
    autoGrow: {thresholdPercent: 50, maximum: 400Mi}
`, localcluster.LocalStorageClassName))
	var usedBytes, capacityBytes int64
	eventually(t, time.Minute, "the instance reports its volume", func() error {
		u := jsonpath(t, "database/fixedpg", "{.status.instances[0].volumeUsedBytes}")
		c := jsonpath(t, "database/fixedpg", "{.status.instances[0].volumeCapacityBytes}")
		var err1, err2 error
		usedBytes, err1 = strconv.ParseInt(u, 10, 64)
		capacityBytes, err2 = strconv.ParseInt(c, 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("volume %q of %q", u, c)
		}
		return nil
	})
	percent := 100 * float64(usedBytes) / float64(capacityBytes)
	if percent < 50 {
		t.Skipf("the host's file system is %.0f%% used, below the lowest threshold: the refusal cannot be shown here", percent)
	}
	var cond string
	eventually(t, time.Minute, "StorageGrowthBlocked", func() error {
		cond = jsonpath(t, "database/fixedpg", `{.status.conditions[?(@.type=="StorageGrowthBlocked")].status} {.status.conditions[?(@.type=="StorageGrowthBlocked")].reason}: {.status.conditions[?(@.type=="StorageGrowthBlocked")].message}`)
		if !strings.HasPrefix(cond, "True StorageClassCannotExpand") {
			return fmt.Errorf("StorageGrowthBlocked = %q", cond)
		}
		return nil
	})
	t.Logf("%.0f%% used: %s", percent, cond)
	if got := jsonpath(t, "pvc/data-fixedpg-0", "{.spec.resources.requests.storage}"); got != "96Mi" {
		t.Errorf("the claim asks for %s", got)
	}
	events := kubectl(t, "get", "events", "--field-selector=involvedObject.name=fixedpg,reason=StorageGrowthBlocked", "-o", "jsonpath={.items[*].message}")
	if events == "" {
		t.Error("no StorageGrowthBlocked event")
	}
}
