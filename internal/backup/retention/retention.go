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
package retention

import (
	"time"
)

// Policy says how many backups to keep. A zero field does not keep
// anything on its own; a backup is kept when any rule keeps it.
type Policy struct {
	// KeepLast keeps the newest N good backups.
	KeepLast int
	// KeepDaily keeps the newest good backup of each of the last N days
	// that have one.
	KeepDaily int
	// KeepWeekly keeps the newest good backup of each of the last N ISO
	// weeks that have one.
	KeepWeekly int
	// KeepMonthly keeps the newest good backup of each of the last N
	// months that have one.
	KeepMonthly int
	// MaxAge drops backups older than this, unless another rule keeps them.
	// Zero means no age limit.
	MaxAge time.Duration
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

// Select splits items into those to keep and those that may be deleted.
// Whatever the policy, the newest good backup is always kept.
func Select(items []Item, p Policy, now time.Time) (keep, drop []Item) {
	// Placeholder until the rules land: keeps everything, deletes nothing.
	return items, nil
}
