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
	"testing"

	"gocloud.dev/blob/fileblob"
)

// TestListIgnoresPointInTimeObjects: a MariaDB base backup is a dump by
// name, under pitr/; dump listings (latest, retention, verification) never
// see it.
func TestListIgnoresPointInTimeObjects(t *testing.T) {
	ctx := context.Background()
	bucket, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	dumpKey := "2026/11/26/20261126T020000.000Z-app.sql.gz"
	baseKey := PointInTimePrefix("app") + "base/" + dumpKey
	for _, k := range []string{dumpKey, dumpKey + ManifestSuffix, baseKey, baseKey + ManifestSuffix} {
		if err := bucket.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := List(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Key != dumpKey {
		t.Errorf("List = %+v, want only %s", entries, dumpKey)
	}
}
