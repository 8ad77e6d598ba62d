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

package pitr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/retention"
)

// Pruned is what Prune deleted and what recovery can still reach.
type Pruned struct {
	Bases    int
	Segments int
	// FirstRecoverable is the end of the oldest kept base backup: the
	// earliest time a recovery can reach.
	FirstRecoverable *time.Time
}

// Prune deletes the base backups the policy does not keep (the newest is
// always kept), then every archived segment, partial segment and history
// file that only older base backups needed: those before the start
// segment of the oldest kept one. A nil policy keeps every base backup
// and still deletes nothing else.
func Prune(ctx context.Context, bucket *blob.Bucket, database string, p *retention.Policy, now time.Time) (Pruned, error) {
	var res Pruned
	bases, err := ListBases(ctx, bucket, database)
	if err != nil || len(bases) == 0 {
		return res, err
	}
	keep := bases
	if p != nil && !p.IsEmpty() {
		items := make([]retention.Item, len(bases))
		for i, b := range bases {
			items[i] = retention.Item{Key: b.Key, Time: b.StartTime, Good: true}
		}
		kept, drop := retention.Select(items, *p, now)
		keptKeys := map[string]bool{}
		for _, k := range kept {
			keptKeys[k.Key] = true
		}
		keep = nil
		for _, b := range bases {
			if keptKeys[b.Key] {
				keep = append(keep, b)
			}
		}
		var errs []error
		for _, d := range drop {
			for _, key := range []string{d.Key, Base{Key: d.Key}.manifestKey()} {
				if err := bucket.Delete(ctx, key); err != nil && !isNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting %s: %w", key, err))
				}
			}
			res.Bases++
		}
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
	}
	oldest := keep[0]
	first := oldest.EndTime
	res.FirstRecoverable = &first
	start, ok := ParseSegment(oldest.StartSegment)
	if !ok {
		return res, fmt.Errorf("base backup %s has no start segment", oldest.Key)
	}
	arch, err := listArchive(ctx, bucket, database)
	if err != nil {
		return res, err
	}
	var errs []error
	del := func(key string) {
		if err := bucket.Delete(ctx, key); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", key, err))
			return
		}
		res.Segments++
	}
	for name := range arch.segments {
		if s, _ := ParseSegment(name); s.No < start.No {
			del(walKey(database, name))
		}
	}
	for name := range arch.partial {
		if s, _ := ParseSegment(name); s.No < start.No {
			del(walKey(database, name+partialSuffix))
		}
	}
	return res, errors.Join(errs...)
}
