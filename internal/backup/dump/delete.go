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
	"errors"
	"fmt"
	"io"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// DeleteDumps deletes every backup of database (by its name in the keys)
// in bucket, good or not: its manifest first, then its object. It returns
// how many backups it deleted. An empty database name deletes nothing:
// without it no backup can be told to be the database's.
func DeleteDumps(ctx context.Context, bucket *blob.Bucket, database string) (int, error) {
	if database == "" {
		return 0, errors.New("the dumped database's name is unknown, so no dump can be told to be its; nothing was deleted")
	}
	entries, err := List(ctx, bucket)
	if err != nil {
		return 0, err
	}
	name := KeyName(database)
	n := 0
	for _, e := range entries {
		if e.Database != name {
			continue
		}
		for _, key := range []string{e.Key + ManifestSuffix, e.Key} {
			if err := bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return n, fmt.Errorf("deleting %s: %w", key, err)
			}
		}
		n++
	}
	return n, nil
}

// PointInTimePrefix is where a database's point-in-time recovery objects
// are (base backups, archived WAL): pitr/<database as in keys>/.
func PointInTimePrefix(database string) string { return pointInTimeRoot + KeyName(database) + "/" }

// pointInTimeRoot holds every database's point-in-time objects; List
// ignores it.
const pointInTimeRoot = "pitr/"

// DeletePointInTime deletes every point-in-time recovery object of
// database and returns how many it deleted. An empty name deletes
// nothing.
func DeletePointInTime(ctx context.Context, bucket *blob.Bucket, database string) (int, error) {
	if database == "" {
		return 0, nil
	}
	n := 0
	it := bucket.List(&blob.ListOptions{Prefix: PointInTimePrefix(database)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("listing %s: %w", PointInTimePrefix(database), err)
		}
		if obj.IsDir {
			continue
		}
		if err := bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return n, fmt.Errorf("deleting %s: %w", obj.Key, err)
		}
		n++
	}
}
