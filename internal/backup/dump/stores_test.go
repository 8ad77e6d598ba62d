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
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/backup/retention"
	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// TestRoundTripThroughEveryStore backs up a real PostgreSQL and a real
// MariaDB database into each object store emulator, through store.Open as
// the backup pods do, and restores into fresh databases: row for row equal.
func TestRoundTripThroughEveryStore(t *testing.T) {
	t.Parallel()
	pg := startPostgres(t)
	fillPostgres(t, pg.source())
	pgWant := pgDigest(t, pg.source())
	my := startMariaDB(t)
	fillMariaDB(t, my.source())
	myWant := myDigest(t, my.source())

	stores := map[string]func(testing.TB) (store.Destination, map[string][]byte){
		"s3": storetest.S3, "gcs": storetest.GCS, "azure": storetest.Azurite,
	}
	for name, start := range stores {
		t.Run(name, func(t *testing.T) {
			d, creds := start(t)
			d.Prefix = "prod/" + name + "/"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			bucket, err := OpenBucket(ctx, d, creds)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = bucket.Close() }()

			rep, err := Backup(ctx, pg.source(), bucket, Options{Retention: &retention.Policy{KeepLast: 1}})
			if err != nil {
				t.Fatalf("PostgreSQL backup to %s: %v", name, err)
			}
			target := pg.createDatabase(t, "from_"+name)
			if _, err := Restore(ctx, bucket, rep.Manifest.Key, target, RestoreOptions{}); err != nil {
				t.Fatalf("PostgreSQL restore from %s: %v", name, err)
			}
			if got := pgDigest(t, target); got != pgWant {
				t.Errorf("PostgreSQL through %s: restored %s, source %s", name, got, pgWant)
			}

			rep, err = Backup(ctx, my.source(), bucket, Options{})
			if err != nil {
				t.Fatalf("MariaDB backup to %s: %v", name, err)
			}
			mtarget := my.createDatabase(t, "from_"+name)
			if _, err := Restore(ctx, bucket, Latest, mtarget, RestoreOptions{}); err != nil {
				t.Fatalf("MariaDB restore from %s: %v", name, err)
			}
			if got := myDigest(t, mtarget); got != myWant {
				t.Errorf("MariaDB through %s: restored %s, source %s", name, got, myWant)
			}
		})
	}
}

// TestStoreRefusesCredentials: a backup to a store that refuses the
// credentials fails with a message naming the store, without the secret,
// and deletes nothing.
func TestStoreRefusesCredentials(t *testing.T) {
	t.Parallel()
	pg := startPostgres(t)
	fillPostgres(t, pg.source())
	d, creds := storetest.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	good, err := OpenBucket(ctx, d, creds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(ctx, pg.source(), good, Options{}); err != nil {
		t.Fatal(err)
	}
	before, err := List(ctx, good)
	if err != nil {
		t.Fatal(err)
	}

	wrong := map[string][]byte{}
	for k, v := range creds {
		wrong[k] = v
	}
	wrong[store.AWSSecretAccessKey] = []byte("wrong-secret-0123456789")
	bad, err := OpenBucket(ctx, d, wrong)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backup(ctx, pg.source(), bad, Options{Retention: &retention.Policy{KeepLast: 1}})
	if err == nil {
		t.Fatal("a backup with refused credentials succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "s3") || strings.Contains(msg, "wrong-secret-0123456789") || strings.Contains(msg, pg.source().Password) {
		t.Errorf("error %q: want the store named and no secret", msg)
	}
	after, err := List(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("%d backups before, %d after a failed run: something was deleted or left behind", len(before), len(after))
	}
}
