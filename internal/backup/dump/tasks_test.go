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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/secrettest"
	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/realserver"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// cmdRun is one run of Main as a pod runs it: its environment, the
// credentials Secret as files, and its termination log.
type cmdRun struct {
	env map[string]string
}

// newCommand configures a run for destination d with creds as its
// credentials Secret.
func newCommand(t *testing.T, d store.Destination, creds map[string][]byte) *cmdRun {
	t.Helper()
	dir := t.TempDir()
	for k, v := range creds {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &cmdRun{env: map[string]string{
		dumpcmd.EnvDestinationType: d.Type, dumpcmd.EnvDestinationBucket: d.Bucket, dumpcmd.EnvDestinationPrefix: d.Prefix,
		dumpcmd.EnvDestinationEndpoint: d.Endpoint, dumpcmd.EnvDestinationRegion: d.Region,
		dumpcmd.EnvStoreCredentialsDir: dir, dumpcmd.EnvTerminationLog: filepath.Join(t.TempDir(), "termination-log"),
	}}
}

// run runs name and returns its exit code, its result as written to the
// termination log, and its log.
func (c *cmdRun) run(t *testing.T, name string) (int, dumpcmd.Result, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	code := Main(ctx, name, func(k string) string { return c.env[k] }, log)
	data, err := os.ReadFile(c.env[dumpcmd.EnvTerminationLog])
	if err != nil {
		t.Fatal(err)
	}
	res, err := dumpcmd.ParseResult(string(data))
	if err != nil {
		t.Fatalf("%s wrote no result: %v; log:\n%s", name, err, log.String())
	}
	return code, res, string(data), log.String()
}

// TestCheckCommand: `steward backup-check` passes on every store, needs no
// database, and leaves nothing behind.
func TestCheckCommand(t *testing.T) {
	for name, start := range map[string]func(testing.TB) (store.Destination, map[string][]byte){
		"s3": storetest.S3, "gcs": storetest.GCS, "azure": storetest.Azurite, "file": storetest.File,
	} {
		t.Run(name, func(t *testing.T) {
			d, creds := start(t)
			d.Prefix = "team/app"
			code, res, raw, log := newCommand(t, d, creds).run(t, dumpcmd.CommandCheck)
			if code != 0 || !res.Succeeded || res.Error != "" || res.Reason != "" {
				t.Fatalf("exit code %d, result %s, log:\n%s", code, raw, log)
			}
			d.Prefix = ""
			b, err := OpenBucket(context.Background(), d, creds)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()
			if entries, err := b.List(nil).Next(context.Background()); err == nil {
				t.Errorf("the check left %s behind", entries.Key)
			}
		})
	}
}

// TestCheckCommandReasons: a failed check says why in its result's reason.
func TestCheckCommandReasons(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*store.Destination, map[string][]byte)
		want  string
	}{
		{"missing bucket", func(d *store.Destination, _ map[string][]byte) { d.Bucket = "missing" }, v1alpha1.ReasonBucketNotFound},
		{"wrong secret", func(_ *store.Destination, c map[string][]byte) {
			c[store.AWSSecretAccessKey] = []byte("wrong-0123456789")
		}, v1alpha1.ReasonCredentialsRefused},
		{"missing key", func(_ *store.Destination, c map[string][]byte) { delete(c, store.AWSSecretAccessKey) }, v1alpha1.ReasonCredentialsMissing},
		{"closed port", func(d *store.Destination, _ map[string][]byte) { d.Endpoint = secrettest.ClosedEndpoint(t) }, v1alpha1.ReasonDestinationUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, creds := storetest.S3(t)
			tc.spoil(&d, creds)
			code, res, raw, _ := newCommand(t, d, creds).run(t, dumpcmd.CommandCheck)
			if code == 0 || res.Succeeded || res.Reason != tc.want || !strings.Contains(res.Error, "s3 bucket") {
				t.Errorf("exit code %d, result %s; want reason %s and the store named", code, raw, tc.want)
			}
		})
	}
}

// TestDeleteCommand: `steward backup-delete` deletes every dump and
// manifest of its database, good or not, and nothing else; without a
// database name it deletes nothing.
func TestDeleteCommand(t *testing.T) {
	d, creds := storetest.S3(t)
	d.Prefix = "team"
	ctx := context.Background()
	bucket, err := OpenBucket(ctx, d, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	now := time.Now()
	ours := []string{putBackup(t, bucket, now.Add(-48*time.Hour), "shop", true), putBackup(t, bucket, now.Add(-24*time.Hour), "shop", false)}
	theirs := putBackup(t, bucket, now.Add(-24*time.Hour), "billing", true)
	if err := bucket.WriteAll(ctx, "notes.txt", []byte("not a dump"), nil); err != nil {
		t.Fatal(err)
	}
	// Point-in-time recovery objects: the shop's go with its dumps.
	pitrOurs := []string{"pitr/shop/base/20261126T020000.000Z.tar.gz", "pitr/shop/wal/000000010000000000000003.gz"}
	pitrTheirs := "pitr/billing/wal/000000010000000000000003.gz"
	for _, k := range append(pitrOurs, pitrTheirs) {
		if err := bucket.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}

	c := newCommand(t, d, creds)
	if code, res, raw, _ := c.run(t, dumpcmd.CommandDelete); code == 0 || !strings.Contains(res.Error, "unknown") {
		t.Errorf("without a database name: exit code %d, result %s", code, raw)
	}
	c.env[dumpcmd.EnvDBName] = "shop"
	code, res, raw, log := c.run(t, dumpcmd.CommandDelete)
	if code != 0 || !res.Succeeded || res.Deleted != 2 {
		t.Fatalf("exit code %d, result %s, log:\n%s", code, raw, log)
	}
	var left []string
	for _, k := range append(ours, theirs, "notes.txt") {
		for _, key := range []string{k, k + ManifestSuffix} {
			if ok, _ := bucket.Exists(ctx, key); ok {
				left = append(left, key)
			}
		}
	}
	for _, k := range append(pitrOurs, pitrTheirs) {
		if ok, _ := bucket.Exists(ctx, k); ok {
			left = append(left, k)
		}
	}
	want := []string{theirs, theirs + ManifestSuffix, "notes.txt", pitrTheirs}
	if !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
}

// TestCommandsNeverLeakCredentials plants distinctive credentials of every
// kind, provokes errors that quote them (stores that echo what a request
// carried, user information in the endpoint, a SAS token in a URL that
// cannot be reached, an OAuth token endpoint that quotes the signed
// assertion and its key's id, a password in a host name) and looks for
// every planted value in the results and logs of the backup, check and
// delete commands. Where the store's own error quotes a credential, the
// test shows that it does, so that the provocation is real.
func TestCommandsNeverLeakCredentials(t *testing.T) {
	p := secrettest.New(t)
	gcs, _ := storetest.GCS(t)
	azurite, _ := storetest.Azurite(t)
	s3, s3Creds := storetest.S3(t)
	s3Creds[store.AWSSessionToken] = []byte(p.S3SessionToken)
	for _, tc := range []struct {
		name string
		d    store.Destination
		// creds is the credentials Secret's data.
		creds map[string][]byte
		// reason is the result's; echoes, that the store's error quotes a
		// planted value.
		reason string
		echoes bool
	}{
		{"s3 store that echoes the request", store.Destination{Type: store.TypeS3, Bucket: "backups", Endpoint: p.WithUser(secrettest.EchoS3(t))},
			p.S3Credentials(), v1alpha1.ReasonCredentialsRefused, true},
		// The S3 client drops the user information from its requests'
		// URLs: the messages never quote it, but they could.
		{"s3 endpoint with user information, unreachable", store.Destination{Type: store.TypeS3, Bucket: "backups", Endpoint: p.WithUser(secrettest.ClosedEndpoint(t))},
			p.S3Credentials(), v1alpha1.ReasonDestinationUnreachable, false},
		{"s3 missing bucket", store.Destination{Type: store.TypeS3, Bucket: "missing", Endpoint: s3.Endpoint, Region: s3.Region},
			s3Creds, v1alpha1.ReasonBucketNotFound, false},
		{"gcs key refused by its token endpoint", store.Destination{Type: store.TypeGCS, Bucket: "backups", Endpoint: gcs.Endpoint},
			p.GCSCredentials(secrettest.TokenServer(t)), v1alpha1.ReasonCredentialsRefused, true},
		{"azure SAS, unreachable", store.Destination{Type: store.TypeAzure, Bucket: "backups", Endpoint: secrettest.ClosedEndpoint(t) + "/plantedaccount"},
			p.AzureSASCredentials("plantedaccount"), v1alpha1.ReasonDestinationUnreachable, true},
		{"azure store that echoes the SAS", store.Destination{Type: store.TypeAzure, Bucket: "backups", Endpoint: secrettest.EchoAzure(t, "plantedaccount")},
			p.AzureSASCredentials("plantedaccount"), v1alpha1.ReasonCredentialsRefused, true},
		{"azure key refused", store.Destination{Type: store.TypeAzure, Bucket: "backups", Endpoint: azurite.Endpoint},
			p.AzureKeyCredentials(storetest.AzuriteAccount), v1alpha1.ReasonCredentialsRefused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.echoes {
				raw := rawError(t, tc.d, tc.creds)
				if len(p.Find(raw)) == 0 {
					t.Errorf("the store's own error quotes no planted value, so this case proves nothing: %s", raw)
				}
			}
			c := newCommand(t, tc.d, tc.creds)
			c.env[dumpcmd.EnvDBPassword] = p.DBPassword
			c.env[dumpcmd.EnvDBName] = "shop"
			for _, name := range []string{dumpcmd.CommandCheck, dumpcmd.CommandDelete} {
				code, res, raw, log := c.run(t, name)
				t.Logf("%s: %s", name, res.Error)
				if code == 0 || res.Succeeded || !strings.Contains(res.Error, tc.d.Type+" ") {
					t.Errorf("%s: exit code %d, result %s: want a failure naming the store", name, code, raw)
				}
				if name == dumpcmd.CommandCheck && res.Reason != tc.reason {
					t.Errorf("%s: reason %q, want %q", name, res.Reason, tc.reason)
				}
				if found := p.Find(raw + log); len(found) > 0 {
					t.Errorf("%s: the result or log holds %v:\n%s\n%s", name, found, raw, log)
				}
			}
		})
	}

	// A backup's own errors: the database password in a host name that
	// does not resolve, which the dump tool quotes.
	t.Run("backup with a password in the host name", func(t *testing.T) {
		bin := realserver.Require(t, pg15)
		c := newCommand(t, store.Destination{Type: store.TypeS3, Bucket: "backups", Endpoint: p.WithUser(secrettest.EchoS3(t))}, p.S3Credentials())
		for k, v := range map[string]string{
			dumpcmd.EnvDBType: TypePostgreSQL, dumpcmd.EnvDBHost: "host-" + strings.Trim(p.DBPassword, `'"`) + ".invalid", dumpcmd.EnvDBName: "shop",
			dumpcmd.EnvDBUsername: "backup", dumpcmd.EnvDBPassword: strings.Trim(p.DBPassword, `'"`), dumpcmd.EnvDBBinDir: bin,
		} {
			c.env[k] = v
		}
		code, res, raw, log := c.run(t, dumpcmd.CommandBackup)
		t.Logf("backup: %s", res.Error)
		if code == 0 || res.Succeeded || res.Error == "" {
			t.Errorf("exit code %d, result %s", code, raw)
		}
		if found := p.Find(raw + log); len(found) > 0 {
			t.Errorf("the result or log holds %v:\n%s\n%s", found, raw, log)
		}
		if !strings.Contains(raw+log, "***") {
			t.Errorf("nothing was redacted: the provocation did not quote the password:\n%s\n%s", raw, log)
		}
	})
}

// rawError is the error of a check of d opened with creds, as the store
// gives it, unredacted.
func rawError(t *testing.T, d store.Destination, creds map[string][]byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := OpenBucket(ctx, d, creds)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = b.Close() }()
	if err := store.Probe(ctx, b); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("the check of %s passed", d.Type)
}
