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
	"slices"
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/secrettest"
	"github.com/steward-dev/steward/internal/backup/store"
)

// TestSecretsCoverEveryCredential: what Secrets returns removes every
// planted value, and the parts of values a message may quote alone,
// whatever the Secret's keys; the Azure account's name, which is in every
// URL of the account, stays.
func TestSecretsCoverEveryCredential(t *testing.T) {
	p := secrettest.New(t)
	creds := map[string][]byte{"extra-key-some-tool-reads": []byte("extra-value-4711")}
	for _, c := range []map[string][]byte{
		p.S3Credentials(), p.GCSCredentials("https://oauth2.example/token"), p.AzureKeyCredentials("plantedaccount"),
	} {
		for k, v := range c {
			creds[k] = v
		}
	}
	creds[store.AzureStorageSASToken] = []byte(p.AzureSAS)
	d := store.Destination{Type: store.TypeS3, Bucket: "b", Endpoint: p.WithUser("https://s3.example:9000")}
	r := redact.New(store.Secrets(d, creds)...)

	var text strings.Builder
	for _, v := range append(p.Values(), "extra-value-4711") {
		if v == p.DBPassword {
			continue // not a store's credential: the runs add it themselves
		}
		text.WriteString("quoted " + v + " and escaped " + strings.NewReplacer("\n", `\n`, "/", "%2F", "+", "%2B", "=", "%3D").Replace(v) + "\n")
	}
	text.WriteString("GET https://plantedaccount.blob.core.windows.net/c?sig=" + p.AzureSASSignature + "&sp=r\n")
	text.WriteString("Get \"https://" + p.EndpointUser + ":***@s3.example:9000/b\"\n")
	got := r.String(text.String())
	if found := p.Find(strings.ReplaceAll(got, p.DBPassword, "")); len(found) > 0 || strings.Contains(got, "extra-value-4711") {
		t.Errorf("left after redaction: %v\n%s", found, got)
	}
	if !strings.Contains(got, "plantedaccount.blob.core.windows.net") {
		t.Errorf("the account's name was removed: %s", got)
	}
}

func TestSecretsOfAPartialServiceAccountKey(t *testing.T) {
	for _, v := range []string{"not json at all", `{"private_key": 42}`, ""} {
		got := store.Secrets(store.Destination{}, map[string][]byte{store.GCSServiceAccountKey: []byte(v)})
		if want := strings.TrimSpace(v); want != "" && !slices.Contains(got, want) {
			t.Errorf("Secrets of %q = %q: the value itself is missing", v, got)
		}
	}
}
