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

package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/realserver"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// TestProbe: each store passes, and the test object is gone afterwards.
func TestProbe(t *testing.T) {
	for _, e := range emulators {
		t.Run(e.name, func(t *testing.T) {
			d, creds := e.start(t)
			d.Prefix = "team/db"
			b := open(t, d, creds)
			if err := store.Probe(context.Background(), b); err != nil {
				t.Fatalf("Probe: %v", err)
			}
			d.Prefix = ""
			if ks := keys(t, open(t, d, creds)); len(ks) != 0 {
				t.Errorf("the bucket holds %q after Probe, want nothing", ks)
			}
		})
	}
}

// TestProbeFailures: a missing bucket, refused credentials and an
// unreachable store fail Probe within seconds, with the sentinel error
// that says which, and a message naming the store.
func TestProbeFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) (store.Destination, map[string][]byte)
		spoil func(*store.Destination, map[string][]byte)
		want  error
	}{
		{"s3 missing bucket", storetest.S3, func(d *store.Destination, _ map[string][]byte) { d.Bucket = "missing" }, store.ErrBucketNotFound},
		{"gcs missing bucket", storetest.GCS, func(d *store.Destination, _ map[string][]byte) { d.Bucket = "missing" }, store.ErrBucketNotFound},
		{"azure missing container", storetest.Azurite, func(d *store.Destination, _ map[string][]byte) { d.Bucket = "missing" }, store.ErrBucketNotFound},
		{"s3 wrong secret", storetest.S3, func(_ *store.Destination, c map[string][]byte) {
			c[store.AWSSecretAccessKey] = []byte("wrong-secret-0123456789")
		}, store.ErrCredentialsRefused},
		{"azure wrong key", storetest.Azurite, func(_ *store.Destination, c map[string][]byte) {
			c[store.AzureStorageKey] = []byte("d3Jvbmcta2V5LTc3Mzk=")
		}, store.ErrCredentialsRefused},
		{"s3 unreachable", storetest.S3, func(d *store.Destination, _ map[string][]byte) {
			d.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", realserver.FreePort(t))
		}, store.ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, creds := tc.start(t)
			tc.spoil(&d, creds)
			start := time.Now()
			err := store.Probe(context.Background(), open(t, d, creds))
			t.Logf("Probe after %v: %v", time.Since(start).Round(time.Millisecond), err)
			if !errors.Is(err, tc.want) {
				t.Errorf("Probe = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), d.Type+" ") {
				t.Errorf("the error does not name the %s store", d.Type)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("Probe took %v, want seconds", took)
			}
		})
	}
}
