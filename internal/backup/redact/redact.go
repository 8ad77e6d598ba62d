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

// Package redact removes credentials from text: the errors, logs and
// results of the backup, restore, check and delete runs, which end up in a
// Backup's or Restore's status, in events and in pod logs.
//
// A Redactor is given the secret values a run holds (a database password,
// the values of the store's credentials Secret and their parts, see
// store.Secrets) and replaces every occurrence of each, and of the forms in
// which messages quote a value (escaped for a URL's query or path, or for
// a JSON string), by Mask. Longer values are replaced first, so that a
// value containing another is removed whole.
package redact

import (
	"cmp"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Mask replaces each secret.
const Mask = "***"

// Redactor replaces secret values in text. The zero value replaces
// nothing. A Redactor is safe for concurrent use once its values are
// added.
type Redactor struct {
	// secrets are the values and their quoted forms, longest first.
	secrets []string
}

// New returns a Redactor of values.
func New(values ...string) *Redactor {
	r := &Redactor{}
	r.Add(values...)
	return r
}

// Add adds values, and the forms in which messages quote them. Empty
// values are ignored.
func (r *Redactor) Add(values ...string) {
	for _, v := range values {
		for _, form := range []string{v, strings.TrimSpace(v), url.QueryEscape(v), url.PathEscape(v), jsonEscape(v)} {
			if form != "" && form != Mask && !slices.Contains(r.secrets, form) {
				r.secrets = append(r.secrets, form)
			}
		}
	}
	slices.SortStableFunc(r.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
}

// jsonEscape is v as it appears inside a JSON string.
func jsonEscape(v string) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data[1 : len(data)-1])
}

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, Mask)
	}
	return s
}

// Writer returns a writer that redacts each write before it goes to w.
// A secret is removed when a single write holds it whole, as a line
// printed with one call does.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	return writer{w: w, r: r}
}

type writer struct {
	w io.Writer
	r *Redactor
}

func (w writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// URL returns raw without user information, query or fragment, which
// may hold credentials, or a placeholder when raw does not parse.
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(an unparsable endpoint)"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}
