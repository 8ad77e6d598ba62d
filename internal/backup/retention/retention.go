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

// Package retention decides which backups to keep. It is pure: the store
// lists backups, Select says which may go.
//
// # Rules
//
// A Policy has four count rules (KeepLast, KeepDaily, KeepWeekly,
// KeepMonthly) and an age rule (MaxAge). A good backup is kept when at least
// one rule keeps it; the rules add up, none of them removes what another
// keeps. A field that is zero (or negative) is not set.
//
// The count rules only look at good backups (Item.Good). They walk the good
// backups from the newest to the oldest:
//
//   - KeepLast keeps the newest N good backups.
//   - KeepDaily keeps, for each of the N most recent calendar days that have
//     at least one good backup, the newest good backup of that day.
//   - KeepWeekly does the same with ISO 8601 weeks (Monday to Sunday; the
//     week of 29 December 2025 is week 1 of 2026).
//   - KeepMonthly does the same with calendar months.
//
// Days, weeks and months are those of Policy.Location (UTC when nil), so a
// backup taken at 23:30 UTC belongs to the next day in UTC+2.
//
// "The N most recent days that have a good backup" is counted back from the
// newest good backup, not from now: days without a good backup are skipped
// and do not use up the count. This is what restic and borg do. When backups
// stop for a while (an outage, a broken bucket, a cluster switched off for
// the holidays) a count rule still keeps N restore points instead of letting
// them expire one by one while nothing new replaces them. Retention never
// shrinks because backups stopped.
//
// MaxAge keeps every good backup taken at or after now-MaxAge. A good backup
// older than that is dropped unless a count rule or the guard keeps it: the
// count rules win over MaxAge, MaxAge never deletes what a count rule keeps.
// With MaxAge alone (no count rule), age alone decides. With count rules
// alone, a good backup that no count rule keeps is dropped, however recent.
//
// # The guard
//
// Whatever the policy, the newest good backup is always kept, even when it
// is older than MaxAge (all runs failed for months) or no rule selects it.
// A policy can never leave the store without a good backup when it had one.
//
// # Backups that are not good
//
// A backup that failed or whose checksum was never confirmed (Good is false)
// cannot be restored with confidence. It never counts for a count rule and no
// rule ever keeps it as a restore point. It is kept only as evidence of a
// failure in progress: a backup that is not good and is strictly newer than
// the newest good backup (or any backup that is not good when there is no
// good backup at all) is kept, so that whoever investigates the failing runs
// finds them. Once a good backup is newer, the failed ones before it are
// dropped. MaxAge still applies to them: when MaxAge is set, a backup that is
// not good and older than now-MaxAge is dropped, which bounds how much a long
// run of failures can pile up. Keeping or dropping backups that are not good
// never changes which good backups are kept.
//
// # Empty policy
//
// A Policy with every rule unset keeps everything, good or not: when nothing
// was configured, nothing is deleted.
package retention

import (
	"slices"
	"strings"
	"time"
)

// Policy says how many backups to keep. A zero field does not keep
// anything on its own; a backup is kept when any rule keeps it. The package
// documentation describes the rules precisely.
type Policy struct {
	// KeepLast keeps the newest N good backups.
	KeepLast int
	// KeepDaily keeps the newest good backup of each of the last N days
	// that have one, counted back from the newest good backup.
	KeepDaily int
	// KeepWeekly keeps the newest good backup of each of the last N ISO
	// weeks that have one, counted back from the newest good backup.
	KeepWeekly int
	// KeepMonthly keeps the newest good backup of each of the last N
	// months that have one, counted back from the newest good backup.
	KeepMonthly int
	// MaxAge keeps every good backup taken at or after now-MaxAge, and
	// drops older ones unless a count rule or the guard keeps them. It also
	// drops backups that are not good once they are older than now-MaxAge.
	// Zero means no age limit.
	MaxAge time.Duration
	// Location is the time zone of the days, weeks and months of
	// KeepDaily, KeepWeekly and KeepMonthly, usually that of the backup
	// schedule. Nil means UTC. It is not a rule: a Policy whose only field
	// set is Location is empty.
	Location *time.Location
}

// IsEmpty reports whether no rule is set, in which case Select keeps
// everything.
func (p Policy) IsEmpty() bool {
	return p.KeepLast <= 0 && p.KeepDaily <= 0 && p.KeepWeekly <= 0 &&
		p.KeepMonthly <= 0 && p.MaxAge <= 0
}

// Item is one backup in the store.
type Item struct {
	// Key identifies the backup's object.
	Key string
	// Time is when the backup was taken.
	Time time.Time
	// Good is true when the backup finished, was uploaded completely and
	// its checksum was recorded. Only good backups count for the rules.
	Good bool
}

// Select splits items into those to keep and those that may be deleted,
// following the rules of the package documentation. Every item ends up in
// exactly one of keep and drop. Both are sorted newest first; items taken at
// the same time are sorted by Key, then good before not good. Select does
// not modify items.
//
// Whatever the policy, the newest good backup is always kept, and an empty
// policy keeps everything.
func Select(items []Item, p Policy, now time.Time) (keep, drop []Item) {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, newestFirst)
	if p.IsEmpty() {
		return sorted, nil
	}

	loc := p.Location
	if loc == nil {
		loc = time.UTC
	}
	newestGood := slices.IndexFunc(sorted, func(it Item) bool { return it.Good })
	var cutoff time.Time
	if p.MaxAge > 0 {
		cutoff = now.Add(-p.MaxAge)
	}
	tooOld := func(t time.Time) bool { return p.MaxAge > 0 && t.Before(cutoff) }

	rules := []*countRule{
		{left: p.KeepLast, period: nil},
		{left: p.KeepDaily, period: func(t time.Time) period {
			y, m, d := t.In(loc).Date()
			return period{y, int(m), d}
		}},
		{left: p.KeepWeekly, period: func(t time.Time) period {
			y, w := t.In(loc).ISOWeek()
			return period{y, w, 0}
		}},
		{left: p.KeepMonthly, period: func(t time.Time) period {
			y, m, _ := t.In(loc).Date()
			return period{y, int(m), 0}
		}},
	}

	for i, it := range sorted {
		var kept bool
		if it.Good {
			kept = i == newestGood || (p.MaxAge > 0 && !tooOld(it.Time))
			for _, r := range rules {
				// Every rule sees every good backup, even one already
				// kept, so that each counts its own periods.
				if r.take(it.Time) {
					kept = true
				}
			}
		} else {
			failing := newestGood < 0 || it.Time.After(sorted[newestGood].Time)
			kept = failing && !tooOld(it.Time)
		}
		if kept {
			keep = append(keep, it)
		} else {
			drop = append(drop, it)
		}
	}
	return keep, drop
}

// period is a day, an ISO week or a month.
type period struct{ a, b, c int }

// countRule keeps the newest good backup of each of its last left periods.
// A nil period function makes every backup its own period (KeepLast).
type countRule struct {
	left    int
	period  func(time.Time) period
	last    period
	started bool
}

// take is called with good backups from the newest to the oldest and
// reports whether the rule keeps this one.
func (r *countRule) take(t time.Time) bool {
	if r.left <= 0 {
		return false
	}
	if r.period != nil {
		p := r.period(t)
		if r.started && p == r.last {
			return false
		}
		r.last, r.started = p, true
	}
	r.left--
	return true
}

// newestFirst orders items by time, newest first, then by key, then good
// before not good, so that the output does not depend on the input order.
func newestFirst(a, b Item) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	switch {
	case a.Good == b.Good:
		return 0
	case a.Good:
		return -1
	default:
		return 1
	}
}
