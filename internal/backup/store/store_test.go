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
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/store"
	"github.com/steward-dev/steward/internal/testenv/realserver"
	"github.com/steward-dev/steward/internal/testenv/storetest"
)

// emulators start each store for a test.
var emulators = []struct {
	name  string
	start func(testing.TB) (store.Destination, map[string][]byte)
}{
	{"s3", storetest.S3},
	{"gcs", storetest.GCS},
	{"azure", storetest.Azurite},
	{"file", storetest.File},
}

func open(t *testing.T, d store.Destination, creds map[string][]byte) *blob.Bucket {
	t.Helper()
	b, err := store.Open(context.Background(), d, creds)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func keys(t *testing.T, b *blob.Bucket) []string {
	t.Helper()
	var ks []string
	it := b.List(nil)
	for {
		o, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return ks
		}
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		ks = append(ks, o.Key)
	}
}

// TestRoundTrip streams a 5 MiB object into each store under a prefix, reads
// it back, lists it, and deletes it; an object outside the prefix stays
// invisible.
func TestRoundTrip(t *testing.T) {
	data := make([]byte, 5<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	for _, e := range emulators {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			d, creds := e.start(t)
			root := open(t, d, creds)
			if err := root.WriteAll(ctx, "other/outside", []byte("not mine"), nil); err != nil {
				t.Fatalf("writing outside the prefix: %v", err)
			}
			d.Prefix = "db1/"
			b := open(t, d, creds)
			if err := store.Check(ctx, b); err != nil {
				t.Fatalf("Check: %v", err)
			}

			start := time.Now()
			w, err := b.NewWriter(ctx, "dump-1", &blob.WriterOptions{ContentType: "application/octet-stream"})
			if err != nil {
				t.Fatal(err)
			}
			for p := data; len(p) > 0; {
				n := min(len(p), 64<<10)
				if _, err := w.Write(p[:n]); err != nil {
					t.Fatalf("writing: %v", err)
				}
				p = p[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatalf("closing the writer: %v", err)
			}

			r, err := b.NewReader(ctx, "dump-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes that differ from the %d written", len(got), len(data))
			}
			t.Logf("wrote and read 5 MiB in %v", time.Since(start))

			if ks := keys(t, b); len(ks) != 1 || ks[0] != "dump-1" {
				t.Errorf("prefixed listing = %q, want [dump-1]", ks)
			}
			if ks := keys(t, root); strings.Join(ks, ",") != "db1/dump-1,other/outside" {
				t.Errorf("whole bucket = %q, want the dump under db1/ and other/outside", ks)
			}
			if err := b.Delete(ctx, "dump-1"); err != nil {
				t.Fatalf("deleting: %v", err)
			}
			if ok, err := b.Exists(ctx, "dump-1"); err != nil || ok {
				t.Errorf("after Delete, Exists = %v, %v; want false, nil", ok, err)
			}
			if ks := keys(t, b); len(ks) != 0 {
				t.Errorf("after Delete, prefixed listing = %q, want none", ks)
			}
		})
	}
}

// write streams a small object and returns the error of the write or of
// closing the writer.
func write(ctx context.Context, b *blob.Bucket) error {
	w, err := b.NewWriter(ctx, "dump-x", nil)
	if err != nil {
		return err
	}
	if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// TestWrongCredentials shows that refused credentials fail Check and a
// write with errors that name the store and do not contain the secret.
func TestWrongCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, secret, want string
		start              func(testing.TB) (store.Destination, map[string][]byte)
		creds              func(map[string][]byte) map[string][]byte
	}{
		{
			name: "s3 secret", secret: "wrong-secret-4af1c9", want: `s3 bucket "backups" at http://127.0.0.1:`,
			start: storetest.S3,
			creds: func(c map[string][]byte) map[string][]byte {
				c[store.AWSSecretAccessKey] = []byte("wrong-secret-4af1c9")
				return c
			},
		},
		{
			name: "s3 key id", secret: storetest.S3SecretAccessKey, want: `s3 bucket "backups"`,
			start: storetest.S3,
			creds: func(c map[string][]byte) map[string][]byte {
				c[store.AWSAccessKeyID] = []byte("UNKNOWNKEY")
				return c
			},
		},
		{
			name: "azure key", secret: "d3Jvbmcta2V5LTc3Mzk=", want: `azure container "backups" at http://127.0.0.1:`,
			start: storetest.Azurite,
			creds: func(c map[string][]byte) map[string][]byte {
				c[store.AzureStorageKey] = []byte("d3Jvbmcta2V5LTc3Mzk=")
				return c
			},
		},
		{
			name: "azure sas", secret: "c2lnbmF0dXJlLXdyb25n", want: `azure container "backups"`,
			start: storetest.Azurite,
			creds: func(c map[string][]byte) map[string][]byte {
				delete(c, store.AzureStorageKey)
				c[store.AzureStorageSASToken] = []byte("?sv=2021-08-06&se=2099-01-01T00%3A00%3A00Z&sr=c&sp=rwdl&sig=c2lnbmF0dXJlLXdyb25n")
				return c
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d, creds := tc.start(t)
			b := open(t, d, tc.creds(creds))
			for what, err := range map[string]error{"Check": store.Check(ctx, b), "write": write(ctx, b)} {
				if err == nil {
					t.Errorf("%s with wrong credentials succeeded", what)
					continue
				}
				msg := err.Error()
				t.Logf("%s: %s", what, msg)
				if !strings.Contains(msg, tc.want) {
					t.Errorf("%s error %q does not name the store (%s)", what, msg, tc.want)
				}
				if strings.Contains(msg, tc.secret) {
					t.Errorf("%s error contains the secret: %q", what, msg)
				}
				if what == "Check" && !errors.Is(err, store.ErrCredentialsRefused) {
					t.Errorf("Check error %q is not ErrCredentialsRefused", msg)
				}
			}
		})
	}
}

// TestAzureSAS opens Azurite's container with a SAS token instead of the
// shared key.
func TestAzureSAS(t *testing.T) {
	ctx := context.Background()
	d, creds := storetest.Azurite(t)
	cred, err := container.NewSharedKeyCredential(storetest.AzuriteAccount, storetest.AzuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	q, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    time.Now().Add(time.Hour),
		Permissions:   (&sas.ContainerPermissions{Read: true, Write: true, Delete: true, List: true, Create: true}).String(),
		ContainerName: d.Bucket,
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	delete(creds, store.AzureStorageKey)
	creds[store.AzureStorageSASToken] = []byte(q.Encode())
	b := open(t, d, creds)
	if err := store.Check(ctx, b); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := write(ctx, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// TestUnreachable shows that a store on a closed port fails Check and a
// write within seconds, with errors that name the store.
func TestUnreachable(t *testing.T) {
	for _, e := range emulators[:3] {
		t.Run(e.name, func(t *testing.T) {
			d, creds := e.start(t)
			d.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", realserver.FreePort(t))
			if d.Type == store.TypeAzure {
				d.Endpoint += "/" + storetest.AzuriteAccount
			}
			b := open(t, d, creds)
			ctx := context.Background()
			start := time.Now()
			err := store.Check(ctx, b)
			took := time.Since(start)
			t.Logf("Check after %v: %v", took, err)
			if !errors.Is(err, store.ErrUnreachable) {
				t.Errorf("Check = %v, want ErrUnreachable", err)
			}
			if err != nil && !strings.Contains(err.Error(), d.Endpoint) {
				t.Errorf("Check error %q does not name the endpoint %s", err, d.Endpoint)
			}
			if took > 15*time.Second {
				t.Errorf("Check took %v, want seconds", took)
			}
			start = time.Now()
			err = write(ctx, b)
			took = time.Since(start)
			t.Logf("write after %v: %v", took, err)
			if err == nil || !strings.Contains(err.Error(), d.Type+" ") {
				t.Errorf("write = %v, want an error naming the %s store", err, d.Type)
			}
			if took > 15*time.Second {
				t.Errorf("write took %v, want seconds", took)
			}
		})
	}
}

// TestEnvironmentIgnored sets the AWS, Google and Azure environment
// variables that the SDKs' default chains read to bogus values and shows
// that Open uses only the Secret: the emulators check the S3 signature and
// the Azure shared key, and the bogus endpoints are closed ports.
func TestEnvironmentIgnored(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", realserver.FreePort(t))
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":                 "AKIABOGUSFROMENV",
		"AWS_SECRET_ACCESS_KEY":             "bogus-secret-from-env",
		"AWS_SESSION_TOKEN":                 "bogus-token-from-env",
		"AWS_PROFILE":                       "bogus-profile",
		"AWS_CONFIG_FILE":                   "/nonexistent/aws/config",
		"AWS_SHARED_CREDENTIALS_FILE":       "/nonexistent/aws/credentials",
		"AWS_REGION":                        "bogus-region-1",
		"AWS_ENDPOINT_URL":                  "http://" + closed,
		"AWS_ENDPOINT_URL_S3":               "http://" + closed,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://" + closed,
		"STORAGE_EMULATOR_HOST":             closed,
		"GOOGLE_APPLICATION_CREDENTIALS":    "/nonexistent/google.json",
		"AZURE_STORAGE_ACCOUNT":             "bogusaccount",
		"AZURE_STORAGE_KEY":                 "Ym9ndXMta2V5",
		"AZURE_CLIENT_ID":                   "bogus",
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	for _, e := range emulators[:3] {
		t.Run(e.name, func(t *testing.T) {
			d, creds := e.start(t)
			b := open(t, d, creds)
			if err := store.Check(ctx, b); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := write(ctx, b); err != nil {
				t.Fatalf("write: %v", err)
			}
		})
	}
	t.Run("s3 without a Secret", func(t *testing.T) {
		d, _ := storetest.S3(t)
		_, err := store.Open(ctx, d, map[string][]byte{})
		if err == nil || !strings.Contains(err.Error(), store.AWSAccessKeyID) {
			t.Errorf("Open with the keys only in the environment = %v, want an error naming %s", err, store.AWSAccessKeyID)
		}
	})
}

// TestOpenErrors shows that a missing or malformed Secret key is named,
// without its value.
func TestOpenErrors(t *testing.T) {
	const value = "the-secret-value-39d1"
	for _, tc := range []struct {
		name  string
		d     store.Destination
		creds map[string][]byte
		want  string
	}{
		{"s3 no key id", store.Destination{Type: "s3", Bucket: "b"}, map[string][]byte{store.AWSSecretAccessKey: []byte(value)}, store.AWSAccessKeyID},
		{"s3 no secret", store.Destination{Type: "s3", Bucket: "b"}, map[string][]byte{store.AWSAccessKeyID: []byte(value)}, store.AWSSecretAccessKey},
		{"gcs no key", store.Destination{Type: "gcs", Bucket: "b"}, nil, store.GCSServiceAccountKey},
		{"gcs bad key", store.Destination{Type: "gcs", Bucket: "b"}, map[string][]byte{store.GCSServiceAccountKey: []byte(`{"type":"service_account","private_key":"` + value + `"}`)}, store.GCSServiceAccountKey},
		{"azure no account", store.Destination{Type: "azure", Bucket: "b"}, map[string][]byte{store.AzureStorageKey: []byte(value)}, store.AzureStorageAccount},
		{"azure no key", store.Destination{Type: "azure", Bucket: "b"}, map[string][]byte{store.AzureStorageAccount: []byte("acct")}, store.AzureStorageSASToken},
		{"azure bad key", store.Destination{Type: "azure", Bucket: "b"}, map[string][]byte{store.AzureStorageAccount: []byte("acct"), store.AzureStorageKey: []byte(value + "!")}, store.AzureStorageKey},
		{"unknown type", store.Destination{Type: "ftp", Bucket: "b"}, nil, `"ftp"`},
		{"no bucket", store.Destination{Type: "s3"}, nil, "bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := store.Open(context.Background(), tc.d, tc.creds)
			if err == nil {
				_ = b.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s", err, tc.want)
			}
			if strings.Contains(err.Error(), value) {
				t.Errorf("error %q contains the secret", err)
			}
		})
	}
}
