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

package password

import (
	"strings"
	"testing"
)

// TestNew: 32 characters of the base32 alphabet, which need no quoting in
// a URI, a shell or a configuration file, and a new one each time.
func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p := New()
		if len(p) != 32 || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("New() = %d characters, not all base32", len(p))
		}
		if seen[p] {
			t.Fatal("New() repeated a password")
		}
		seen[p] = true
	}
}
