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

package store

import (
	"encoding/json"
	"net/url"
	"strings"
)

// AzureStorageConnectionString is the key of an Azure connection string.
// Open does not read it, but Secrets finds the account key and SAS in it,
// since a Secret made for other tools often holds one.
const AzureStorageConnectionString = "AZURE_STORAGE_CONNECTION_STRING"

// Secrets returns the credentials in creds (the data of a credentials
// Secret) and in d's endpoint, for removal from every message a run
// writes. These are every value of creds but the Azure account's name
// (which is in every URL of the account, and no secret), and the parts of
// values that a message may quote alone: a service account key's private
// key, the lines of its PEM body, its private_key_id, client_secret and
// refresh_token; a SAS token's signature; an Azure connection string's
// AccountKey and SharedAccessSignature; and the user name and password of
// the endpoint's user information.
func Secrets(d Destination, creds map[string][]byte) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	addSAS := func(token string) {
		add(token)
		q, err := url.ParseQuery(strings.TrimPrefix(strings.TrimSpace(token), "?"))
		if err != nil {
			return
		}
		for _, sig := range q["sig"] {
			add(sig)
			add(url.QueryEscape(sig))
		}
	}
	for key, value := range creds {
		v := string(value)
		switch key {
		case AzureStorageAccount:
			continue
		case GCSServiceAccountKey:
			addServiceAccountKey(v, add)
		case AzureStorageSASToken:
			addSAS(v)
		case AzureStorageConnectionString:
			for part := range strings.SplitSeq(v, ";") {
				name, value, ok := strings.Cut(part, "=")
				switch {
				case !ok:
				case strings.EqualFold(strings.TrimSpace(name), "AccountKey"):
					add(value)
				case strings.EqualFold(strings.TrimSpace(name), "SharedAccessSignature"):
					addSAS(value)
				}
			}
		}
		add(v)
	}
	if u, err := url.Parse(d.Endpoint); err == nil && u.User != nil {
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(strings.TrimSuffix(u.User.String(), "@"))
	} else if err != nil {
		// A URL that does not parse: its user information by hand.
		if _, rest, ok := strings.Cut(d.Endpoint, "://"); ok {
			if info, _, ok := strings.Cut(rest, "@"); ok {
				user, pass, _ := strings.Cut(info, ":")
				add(user)
				add(pass)
			}
		}
	}
	return out
}

// addServiceAccountKey adds the secret fields of a service account key.
func addServiceAccountKey(v string, add func(string)) {
	var key map[string]any
	// A value that is no JSON object has no fields: the whole value is
	// removed all the same.
	_ = json.Unmarshal([]byte(v), &key)
	for _, field := range []string{"private_key", "private_key_id", "client_secret", "refresh_token"} {
		s, _ := key[field].(string)
		add(s)
		if field != "private_key" {
			continue
		}
		for line := range strings.SplitSeq(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				add(line)
			}
		}
	}
}

// missingError is an error of Open about the credentials Secret's keys.
type missingError struct{ error }

func (e missingError) Unwrap() error { return e.error }

func (e missingError) Is(target error) bool { return target == ErrCredentialsMissing }

// missing marks err as ErrCredentialsMissing, keeping its message.
func missing(err error) error { return missingError{err} }
