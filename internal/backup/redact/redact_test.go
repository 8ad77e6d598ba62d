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

package redact_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/backup/redact"
)

func TestString(t *testing.T) {
	const secret = `s3cr3t/with+odd "chars"=`
	r := redact.New(secret, "short", "")
	for _, tc := range []struct{ name, in, want string }{
		{"as is", "login with " + secret + " failed", "login with *** failed"},
		{"query escaped", "GET /x?sig=s3cr3t%2Fwith%2Bodd+%22chars%22%3D&a=b", "GET /x?sig=***&a=b"},
		{"path escaped", "PUT /s3cr3t%2Fwith+odd%20%22chars%22=", "PUT /***"},
		{"in JSON", `{"error":"bad key s3cr3t/with+odd \"chars\"="}`, `{"error":"bad key ***"}`},
		{"twice, and another", secret + secret + " short", "****** ***"},
		{"nothing to remove", "connection refused", "connection refused"},
		{"no empty value removed", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestLongestFirst: a value that contains another is removed whole, not
// around the shorter one.
func TestLongestFirst(t *testing.T) {
	r := redact.New("key", "key-and-more")
	if got := r.String("a key-and-more b key"); got != "a *** b ***" {
		t.Errorf("got %q", got)
	}
}

func TestNilAndZero(t *testing.T) {
	var r *redact.Redactor
	if got := r.String("x"); got != "x" {
		t.Errorf("nil Redactor: %q", got)
	}
	if got := (&redact.Redactor{}).String("x"); got != "x" {
		t.Errorf("zero Redactor: %q", got)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := redact.New("hunter2").Writer(&buf)
	n, err := fmt.Fprintf(w, "password %s refused\n", "hunter2")
	if err != nil || n != len("password hunter2 refused\n") {
		t.Errorf("Fprintf = %d, %v: want the length written by the caller", n, err)
	}
	if got := buf.String(); got != "password *** refused\n" || strings.Contains(got, "hunter2") {
		t.Errorf("wrote %q", got)
	}
}
