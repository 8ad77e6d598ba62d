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

package retention

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const day = 24 * time.Hour

// yearNow is one hour after the last backup of the simulated year.
var yearNow = time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)

// year returns one good backup a day, 2025-01-01 to 2025-12-31 at 02:00
// UTC, keyed by date, oldest first.
func year() []Item {
	var items []Item
	for t := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC); t.Year() == 2025; t = t.AddDate(0, 0, 1) {
		items = append(items, Item{Key: t.Format(time.DateOnly), Time: t, Good: true})
	}
	return items
}

// keys returns the keys of items, in order.
func keys(items []Item) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// dates returns the 2025 dates from..to (inclusive, "MM-DD"), newest
// first.
func dates(from, to string) []string {
	a, _ := time.Parse(time.DateOnly, "2025-"+from)
	b, _ := time.Parse(time.DateOnly, "2025-"+to)
	var out []string
	for t := b; !t.Before(a); t = t.AddDate(0, 0, -1) {
		out = append(out, t.Format(time.DateOnly))
	}
	return out
}

func policyString(p Policy) string {
	return fmt.Sprintf("keepLast=%d keepDaily=%d keepWeekly=%d keepMonthly=%d maxAge=%s",
		p.KeepLast, p.KeepDaily, p.KeepWeekly, p.KeepMonthly, p.MaxAge)
}

// yearPolicies returns the 32 combinations of the rules, each either unset
// or set to one value.
func yearPolicies() []Policy {
	var out []Policy
	for mask := range 32 {
		var p Policy
		if mask&1 != 0 {
			p.KeepLast = 3
		}
		if mask&2 != 0 {
			p.KeepDaily = 7
		}
		if mask&4 != 0 {
			p.KeepWeekly = 4
		}
		if mask&8 != 0 {
			p.KeepMonthly = 12
		}
		if mask&16 != 0 {
			p.MaxAge = 14 * day
		}
		out = append(out, p)
	}
	return out
}

// TestYearGolden runs every combination of the rules over a year of daily
// backups and compares the kept dates with testdata/year.golden. Run
// `go test ./internal/backup/retention/ -update` to rewrite it.
func TestYearGolden(t *testing.T) {
	items := year()
	var b strings.Builder
	for _, p := range yearPolicies() {
		keep, drop := Select(items, p, yearNow)
		if len(keep)+len(drop) != len(items) {
			t.Fatalf("%s: %d kept + %d dropped, want %d", policyString(p), len(keep), len(drop), len(items))
		}
		fmt.Fprintf(&b, "== %s (kept %d)\n", policyString(p), len(keep))
		for _, k := range keys(keep) {
			fmt.Fprintln(&b, k)
		}
		fmt.Fprintln(&b)
	}
	got := b.String()

	path := filepath.Join("testdata", "year.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d: got %q, want %q (run with -update if intended)", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: got %d lines, want %d (run with -update if intended)", path, len(gl), len(wl))
	}
}

// TestYearByEye checks a few combinations by hand, so that the golden file
// is anchored to expectations a reader can verify.
func TestYearByEye(t *testing.T) {
	monthEnds := []string{
		"2025-12-31", "2025-11-30", "2025-10-31", "2025-09-30", "2025-08-31", "2025-07-31",
		"2025-06-30", "2025-05-31", "2025-04-30", "2025-03-31", "2025-02-28", "2025-01-31",
	}
	tests := []struct {
		name   string
		policy Policy
		want   []string
	}{
		{"keepLast 3", Policy{KeepLast: 3}, dates("12-29", "12-31")},
		{"keepDaily 7 keeps Dec 25 to 31", Policy{KeepDaily: 7}, dates("12-25", "12-31")},
		// 2025-12-31 is a Wednesday of ISO week 2026-W01; the three weeks
		// before end on Sundays 28, 21 and 14 December.
		{"keepWeekly 4", Policy{KeepWeekly: 4}, []string{"2025-12-31", "2025-12-28", "2025-12-21", "2025-12-14"}},
		{"keepMonthly 12 keeps the last day of each month", Policy{KeepMonthly: 12}, monthEnds},
		{"keepMonthly 24 stops at the first month", Policy{KeepMonthly: 24}, monthEnds},
		// now-14d is 2025-12-18 03:00, one hour after that day's backup.
		{"maxAge 14d keeps Dec 19 to 31", Policy{MaxAge: 14 * day}, dates("12-19", "12-31")},
		{"maxAge is a union with the count rules", Policy{KeepMonthly: 3, MaxAge: 14 * day},
			append(dates("12-19", "12-31"), "2025-11-30", "2025-10-31")},
		{"overlapping rules keep each backup once", Policy{KeepLast: 3, KeepDaily: 7, KeepWeekly: 3},
			append(dates("12-25", "12-31"), "2025-12-21")},
		{"empty policy keeps the whole year", Policy{}, dates("01-01", "12-31")},
		{"Location alone is an empty policy", Policy{Location: time.FixedZone("UTC+2", 2*3600)}, dates("01-01", "12-31")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, drop := Select(year(), tt.policy, yearNow)
			if got := keys(keep); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			if len(keep)+len(drop) != 365 {
				t.Errorf("%d kept + %d dropped, want 365", len(keep), len(drop))
			}
		})
	}
}

// history returns one backup a day at 02:00 UTC for days from..to
// (inclusive, as days before yearNow), oldest first; good says which are
// good.
func history(from, to int, good func(daysAgo int) bool) []Item {
	var items []Item
	for ago := from; ago >= to; ago-- {
		t := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, -ago)
		items = append(items, Item{Key: t.Format(time.DateOnly), Time: t, Good: good(ago)})
	}
	return items
}

func TestGuardNewestGoodIsAlwaysKept(t *testing.T) {
	// A year of daily runs; the last 60 (2025-11-02 to 2025-12-31) failed.
	items := history(365, 1, func(ago int) bool { return ago > 60 })
	const newestGood = "2025-11-01"
	tests := []struct {
		name   string
		policy Policy
		want   []string
	}{
		// The 7 most recent days with a good backup are Oct 26 to Nov 1;
		// the failed runs of the last 30 days (after Dec 2 03:00) are kept
		// as evidence, the older failed ones dropped.
		{"keepDaily 7 and maxAge 30d", Policy{KeepDaily: 7, MaxAge: 30 * day},
			append(dates("12-03", "12-31"), dates("10-26", "11-01")...)},
		{"maxAge 30d alone", Policy{MaxAge: 30 * day},
			append(dates("12-03", "12-31"), newestGood)},
		{"maxAge 1h", Policy{MaxAge: time.Hour}, []string{newestGood}},
		{"keepLast 1", Policy{KeepLast: 1}, append(dates("11-02", "12-31"), newestGood)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, drop := Select(items, tt.policy, yearNow)
			if got := keys(keep); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			for _, it := range drop {
				if it.Key == newestGood {
					t.Errorf("dropped the newest good backup %s", it.Key)
				}
			}
		})
	}
}

func TestAllFailedHistory(t *testing.T) {
	items := history(90, 1, func(int) bool { return false })
	tests := []struct {
		name     string
		policy   Policy
		wantKeep int
	}{
		{"empty policy keeps everything", Policy{}, 90},
		{"count rules keep every failed run as evidence", Policy{KeepLast: 3, KeepDaily: 7}, 90},
		// now-30d is 2025-12-02 03:00: Dec 3 to Dec 31 remain.
		{"maxAge drops failed runs older than it", Policy{KeepDaily: 7, MaxAge: 30 * day}, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, drop := Select(items, tt.policy, yearNow)
			if len(keep) != tt.wantKeep || len(keep)+len(drop) != len(items) {
				t.Fatalf("kept %d, dropped %d; want %d kept of %d", len(keep), len(drop), tt.wantKeep, len(items))
			}
			for _, it := range drop {
				if !it.Time.Before(yearNow.Add(-tt.policy.MaxAge)) {
					t.Errorf("dropped %s, which is within maxAge", it.Key)
				}
			}
		})
	}
}

func TestFailedBackupsAroundGoodOnes(t *testing.T) {
	at := func(d, h int) time.Time { return time.Date(2025, 12, d, h, 0, 0, 0, time.UTC) }
	items := []Item{
		{Key: "f1", Time: at(20, 2)},
		{Key: "g1", Time: at(21, 2), Good: true},
		{Key: "f2", Time: at(22, 2)},
		{Key: "g2", Time: at(23, 2), Good: true},
		{Key: "f3", Time: at(24, 2)},
		{Key: "f4", Time: at(25, 2)},
		{Key: "g3-tie", Time: at(25, 2), Good: true},
		{Key: "f5", Time: at(26, 2)},
	}
	// f5 is newer than the newest good backup: kept. f4 has the same time
	// as it: not newer, dropped. Failed runs never use up KeepLast.
	keep, drop := Select(items, Policy{KeepLast: 2}, yearNow)
	if got, want := keys(keep), []string{"f5", "g3-tie", "g2"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if got, want := keys(drop), []string{"f4", "f3", "f2", "g1", "f1"}; !slices.Equal(got, want) {
		t.Errorf("dropped %v, want %v", got, want)
	}
}

func TestSeveralBackupsPerDay(t *testing.T) {
	at := func(d, h, m int) time.Time { return time.Date(2025, 6, d, h, m, 0, 0, time.UTC) }
	items := []Item{
		{Key: "01 01:00", Time: at(1, 1, 0), Good: true},
		{Key: "01 13:00", Time: at(1, 13, 0), Good: true},
		{Key: "01 23:30", Time: at(1, 23, 30), Good: false},
		{Key: "02 01:00", Time: at(2, 1, 0), Good: true},
		{Key: "02 13:00", Time: at(2, 13, 0), Good: true},
		{Key: "03 01:00", Time: at(3, 1, 0), Good: true},
		{Key: "03 13:00", Time: at(3, 13, 0), Good: true},
		{Key: "03 23:30", Time: at(3, 23, 30), Good: true},
	}
	now := at(4, 3, 0)
	// The newest good backup of each day; June 1 23:30 failed, so 13:00
	// stands for that day.
	keep, _ := Select(items, Policy{KeepDaily: 3}, now)
	if got, want := keys(keep), []string{"03 23:30", "02 13:00", "01 13:00"}; !slices.Equal(got, want) {
		t.Errorf("keepDaily 3: kept %v, want %v", got, want)
	}
	keep, _ = Select(items, Policy{KeepLast: 2, KeepDaily: 2}, now)
	if got, want := keys(keep), []string{"03 23:30", "03 13:00", "02 13:00"}; !slices.Equal(got, want) {
		t.Errorf("keepLast 2 keepDaily 2: kept %v, want %v", got, want)
	}
}

func TestLocation(t *testing.T) {
	plus2 := time.FixedZone("UTC+2", 2*3600)
	tests := []struct {
		name   string
		items  []Item
		policy Policy
		want   []string
	}{
		{
			// 23:30 UTC on June 1 is 01:30 on June 2 in UTC+2.
			name: "day in UTC",
			items: []Item{
				{Key: "A 06-01 20:00Z", Time: time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC), Good: true},
				{Key: "B 06-01 23:30Z", Time: time.Date(2025, 6, 1, 23, 30, 0, 0, time.UTC), Good: true},
				{Key: "C 06-02 10:00Z", Time: time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC), Good: true},
			},
			policy: Policy{KeepDaily: 2},
			want:   []string{"C 06-02 10:00Z", "B 06-01 23:30Z"},
		},
		{
			name: "day in UTC+2",
			items: []Item{
				{Key: "A 06-01 20:00Z", Time: time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC), Good: true},
				{Key: "B 06-01 23:30Z", Time: time.Date(2025, 6, 1, 23, 30, 0, 0, time.UTC), Good: true},
				{Key: "C 06-02 10:00Z", Time: time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC), Good: true},
			},
			policy: Policy{KeepDaily: 2, Location: plus2},
			want:   []string{"C 06-02 10:00Z", "A 06-01 20:00Z"},
		},
		{
			// Sunday 2025-06-08 23:30 UTC is Monday in UTC+2: a new ISO week.
			name: "week in UTC+2",
			items: []Item{
				{Key: "Sat", Time: time.Date(2025, 6, 7, 12, 0, 0, 0, time.UTC), Good: true},
				{Key: "Sun 23:30Z", Time: time.Date(2025, 6, 8, 23, 30, 0, 0, time.UTC), Good: true},
			},
			policy: Policy{KeepWeekly: 2, Location: plus2},
			want:   []string{"Sun 23:30Z", "Sat"},
		},
		{
			name: "week in UTC",
			items: []Item{
				{Key: "Sat", Time: time.Date(2025, 6, 7, 12, 0, 0, 0, time.UTC), Good: true},
				{Key: "Sun 23:30Z", Time: time.Date(2025, 6, 8, 23, 30, 0, 0, time.UTC), Good: true},
			},
			policy: Policy{KeepWeekly: 2},
			want:   []string{"Sun 23:30Z"},
		},
		{
			// 2025-01-31 23:30 UTC is February 1 in UTC+2.
			name: "month in UTC+2",
			items: []Item{
				{Key: "Jan 30", Time: time.Date(2025, 1, 30, 12, 0, 0, 0, time.UTC), Good: true},
				{Key: "Jan 31 23:30Z", Time: time.Date(2025, 1, 31, 23, 30, 0, 0, time.UTC), Good: true},
			},
			policy: Policy{KeepMonthly: 2, Location: plus2},
			want:   []string{"Jan 31 23:30Z", "Jan 30"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, _ := Select(tt.items, tt.policy, yearNow)
			if got := keys(keep); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEmptyInput(t *testing.T) {
	for _, p := range []Policy{{}, {KeepLast: 1}, {MaxAge: day}} {
		keep, drop := Select(nil, p, yearNow)
		if len(keep) != 0 || len(drop) != 0 {
			t.Errorf("%s: kept %v, dropped %v", policyString(p), keep, drop)
		}
	}
}

// randomHistory returns up to 60 backups over the 200 days before now, some
// slightly in the future, some at the same time, about a third not good.
func randomHistory(r *rand.Rand) []Item {
	n := r.IntN(61)
	items := make([]Item, 0, n)
	for i := range n {
		var at time.Time
		if i > 0 && r.IntN(10) == 0 {
			at = items[r.IntN(i)].Time // same time as another backup
		} else {
			at = yearNow.Add(-time.Duration(r.Int64N(int64(200*day))) + time.Duration(r.Int64N(int64(time.Hour))))
		}
		items = append(items, Item{Key: fmt.Sprintf("b%03d", i), Time: at, Good: r.IntN(3) != 0})
	}
	return items
}

func randomPolicy(r *rand.Rand) Policy {
	field := func(limit int) int {
		if r.IntN(2) == 0 {
			return 0
		}
		return r.IntN(limit) + 1
	}
	p := Policy{
		KeepLast:    field(10),
		KeepDaily:   field(14),
		KeepWeekly:  field(8),
		KeepMonthly: field(6),
		MaxAge:      time.Duration(field(100)) * day,
	}
	switch r.IntN(3) {
	case 1:
		p.Location = time.FixedZone("UTC+2", 2*3600)
	case 2:
		p.Location = time.FixedZone("UTC-9:30", -(9*3600 + 1800))
	}
	return p
}

func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20260101, 42))
	for iter := range 500 {
		items := randomHistory(r)
		p := randomPolicy(r)
		input := slices.Clone(items)
		keep, drop := Select(items, p, yearNow)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("iteration %d, %s: %s", iter, policyString(p), fmt.Sprintf(format, args...))
		}

		if !slices.Equal(items, input) {
			fail("Select modified its input")
		}

		// keep and drop partition items.
		count := map[Item]int{}
		for _, it := range items {
			count[it]++
		}
		for _, it := range slices.Concat(keep, drop) {
			count[it]--
		}
		for it, c := range count {
			if c != 0 {
				fail("item %s appears %d times too few in keep and drop", it.Key, c)
			}
		}

		// Both are sorted newest first.
		for _, out := range [][]Item{keep, drop} {
			if !slices.IsSortedFunc(out, func(a, b Item) int { return b.Time.Compare(a.Time) }) {
				fail("output not sorted newest first: %v", keys(out))
			}
		}

		// The output does not depend on the input order.
		shuffled := slices.Clone(items)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		keep2, drop2 := Select(shuffled, p, yearNow)
		if !slices.Equal(keep, keep2) || !slices.Equal(drop, drop2) {
			fail("output depends on input order")
		}

		var goods []Item
		for _, it := range items {
			if it.Good {
				goods = append(goods, it)
			}
		}
		dropped := func(it Item) bool { return slices.Contains(drop, it) }

		// The newest good backup is kept.
		if len(goods) > 0 {
			newest := slices.MaxFunc(goods, func(a, b Item) int { return a.Time.Compare(b.Time) })
			if !slices.ContainsFunc(keep, func(it Item) bool { return it.Good && it.Time.Equal(newest.Time) }) {
				fail("no good backup at the newest good time %s kept", newest.Time)
			}
			for _, it := range items {
				if !it.Good && !it.Time.After(newest.Time) && !dropped(it) && !p.IsEmpty() {
					fail("kept %s, not good and older than the newest good backup", it.Key)
				}
			}
		}

		for _, g := range goods {
			// Good backups selected by KeepLast are never dropped: a good
			// backup with at most KeepLast good ones at or after its time
			// (itself included) is among the newest KeepLast.
			atOrAfter := 0
			for _, o := range goods {
				if !o.Time.Before(g.Time) {
					atOrAfter++
				}
			}
			if atOrAfter <= p.KeepLast && dropped(g) {
				fail("dropped %s, one of the newest %d good backups", g.Key, p.KeepLast)
			}
			// Good backups within MaxAge are never dropped.
			if p.MaxAge > 0 && !g.Time.Before(yearNow.Add(-p.MaxAge)) && dropped(g) {
				fail("dropped good %s within maxAge", g.Key)
			}
		}

		// Not-good backups older than MaxAge are dropped; no good backup is
		// kept beyond what the rules allow.
		keptGood := 0
		for _, it := range keep {
			if it.Good {
				keptGood++
			} else if p.MaxAge > 0 && it.Time.Before(yearNow.Add(-p.MaxAge)) {
				fail("kept %s, not good and older than maxAge", it.Key)
			}
		}
		if !p.IsEmpty() && p.MaxAge == 0 {
			if limit := 1 + p.KeepLast + p.KeepDaily + p.KeepWeekly + p.KeepMonthly; keptGood > limit {
				fail("kept %d good backups, rules allow at most %d", keptGood, limit)
			}
		}

		// An empty policy drops nothing.
		if p.IsEmpty() {
			if len(drop) != 0 {
				fail("empty policy dropped %v", keys(drop))
			}
		}
		var empty Policy
		empty.Location = p.Location
		if _, d := Select(items, empty, yearNow); len(d) != 0 {
			fail("empty policy dropped %v", keys(d))
		}
	}
}
