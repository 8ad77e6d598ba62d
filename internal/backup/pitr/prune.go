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
	"strings"
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
		kept, _ := retention.Select(items, *p, now)
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
		for _, b := range bases {
			if keptKeys[b.Key] {
				continue
			}
			for _, key := range b.objectKeys() {
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
	if oldest.GTID != "" || strings.HasSuffix(oldest.Key, dumpSuffix) {
		n, err := pruneBinlogs(ctx, bucket, database, oldest)
		res.Segments = n
		return res, err
	}
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

// pruneBinlogs deletes the binary log files whose every transaction the
// oldest kept base backup holds, except the newest file, which is still
// being written. A file goes whole: its later chunks need its first.
func pruneBinlogs(ctx context.Context, bucket *blob.Bucket, database string, oldest Base) (int, error) {
	state, err := ParseGTIDState(oldest.GTID)
	if err != nil {
		return 0, fmt.Errorf("base backup %s: %w", oldest.Key, err)
	}
	chunks, err := listChunks(ctx, bucket, database)
	if err != nil || len(chunks) == 0 {
		return 0, err
	}
	type file struct{ stream, name string }
	last := map[file]GTIDState{}
	for _, c := range chunks {
		last[file{c.Stream, c.File}] = c.To
	}
	newest := chunks[len(chunks)-1]
	n := 0
	var errs []error
	for _, c := range chunks {
		f := file{c.Stream, c.File}
		if (c.Stream == newest.Stream && c.File == newest.File) || !state.Covers(last[f]) {
			continue
		}
		if err := bucket.Delete(ctx, c.Key); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", c.Key, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
