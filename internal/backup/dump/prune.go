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

package dump

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/internal/backup/retention"
)

// keyPattern matches the base name of a backup object: time, database
// (as in keys), extension.
var keyPattern = regexp.MustCompile(`^(\d{8}T\d{6}\.\d{3}Z)-([A-Za-z0-9_-]+)\.(pgdump|sql\.gz|archive\.gz)$`)

// Entry is one backup found in a bucket.
type Entry struct {
	// Key is the object's key (also when only the manifest is left).
	Key string
	// Time is when the backup started, from its key.
	Time time.Time
	// Database is the database's name as it appears in the key.
	Database string
	Ext      string
	// Object and HasManifest say what exists; Size is the object's.
	Object      bool
	Size        int64
	HasManifest bool
	// Manifest is the parsed manifest, when it exists and parses.
	Manifest *Manifest
}

// Good reports whether the backup is complete: object and manifest exist
// and agree on the size.
func (e Entry) Good() bool {
	return e.Object && e.Manifest != nil && e.Manifest.Size == e.Size && e.Manifest.SHA256 != ""
}

// List finds the backups in bucket, oldest first. Keys that are neither a
// backup object nor a manifest are ignored. Manifests are read; one that
// cannot be read or parsed makes its backup not good.
func List(ctx context.Context, bucket *blob.Bucket) ([]Entry, error) {
	byKey := map[string]*Entry{}
	entry := func(key string) *Entry {
		e := byKey[key]
		if e == nil {
			m := keyPattern.FindStringSubmatch(path.Base(key))
			if m == nil {
				return nil
			}
			t, err := time.Parse(keyTimeFormat, m[1])
			if err != nil {
				return nil
			}
			e = &Entry{Key: key, Time: t, Database: m[2], Ext: m[3]}
			byKey[key] = e
		}
		return e
	}
	it := bucket.List(nil)
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing the bucket: %w", err)
		}
		// Point-in-time objects are never dumps, though a MariaDB base
		// backup is named as one.
		if obj.IsDir || strings.HasPrefix(obj.Key, pointInTimeRoot) {
			continue
		}
		if k, ok := strings.CutSuffix(obj.Key, ManifestSuffix); ok {
			if e := entry(k); e != nil {
				e.HasManifest = true
			}
			continue
		}
		if e := entry(obj.Key); e != nil {
			e.Object, e.Size = true, obj.Size
		}
	}
	entries := make([]Entry, 0, len(byKey))
	for _, e := range byKey {
		if e.HasManifest && e.Object {
			if m, err := readManifest(ctx, bucket, e.Key); err == nil {
				e.Manifest = &m
			}
		}
		entries = append(entries, *e)
	}
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].Time.Equal(entries[j].Time) {
			return entries[i].Time.Before(entries[j].Time)
		}
		return entries[i].Key < entries[j].Key
	})
	return entries, nil
}

func readManifest(ctx context.Context, bucket *blob.Bucket, key string) (Manifest, error) {
	var m Manifest
	data, err := bucket.ReadAll(ctx, key+ManifestSuffix)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("the manifest of %s is invalid: %w", key, err)
	}
	if m.Key != key {
		return m, fmt.Errorf("the manifest of %s names another key, %q", key, m.Key)
	}
	return m, nil
}

// prune deletes the backups of the same database and type as src that the
// policy drops. It never deletes current, the backup just taken. It returns
// the keys deleted.
func prune(ctx context.Context, bucket *blob.Bucket, src Source, d dumper, current string, p retention.Policy, now time.Time) ([]string, error) {
	all, err := List(ctx, bucket)
	if err != nil {
		return nil, err
	}
	name := KeyName(src.Database)
	var items []retention.Item
	found := map[string]Entry{}
	for _, e := range all {
		if e.Database != name || e.Ext != d.ext {
			continue
		}
		found[e.Key] = e
		items = append(items, retention.Item{Key: e.Key, Time: e.Time, Good: e.Good()})
	}
	if _, ok := found[current]; !ok {
		return nil, fmt.Errorf("the new backup %s is not in the bucket's listing; nothing pruned", current)
	}
	_, drop := retention.Select(items, p, now)
	var pruned []string
	var errs []error
	for _, it := range drop {
		e, ok := found[it.Key]
		if !ok || it.Key == current {
			continue
		}
		// The manifest goes first: a backup whose object could not be
		// deleted is then incomplete, and pruned again next time.
		if e.HasManifest {
			if err := bucket.Delete(ctx, e.Key+ManifestSuffix); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				errs = append(errs, fmt.Errorf("deleting %s: %w", e.Key+ManifestSuffix, err))
				continue
			}
		}
		if e.Object {
			if err := bucket.Delete(ctx, e.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				errs = append(errs, fmt.Errorf("deleting %s: %w", e.Key, err))
				continue
			}
		}
		pruned = append(pruned, e.Key)
	}
	return pruned, errors.Join(errs...)
}
