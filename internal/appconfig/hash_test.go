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

package appconfig

import (
	"fmt"
	"testing"
)

func TestHashStableAcrossMapOrderAndKeyOrder(t *testing.T) {
	values := map[string]string{}
	for i := 0; i < 50; i++ {
		values[fmt.Sprintf("K%d", i)] = fmt.Sprintf("v%d", i)
	}
	want := Hash(values, nil)
	for i := 0; i < 20; i++ {
		// A fresh map iterates in a different order.
		copied := map[string]string{}
		for k, v := range values {
			copied[k] = v
		}
		if got := Hash(copied, nil); got != want {
			t.Fatalf("Hash of a copy = %s, want %s", got, want)
		}
	}
	if a, b := Hash(values, []string{"K1", "K2"}), Hash(values, []string{"K2", "K1", "K2"}); a != b {
		t.Errorf("key order or duplicates change the hash: %s != %s", a, b)
	}
	if len(want) != 64 {
		t.Errorf("hash %q has %d characters, want 64", want, len(want))
	}
}

func TestHash(t *testing.T) {
	base := map[string]string{"DB_HOST": "db", "LOG_LEVEL": "info", "UNUSED": "x"}
	used := []string{"DB_HOST", "LOG_LEVEL"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for bk, bv := range base {
			m[bk] = bv
		}
		m[k] = v
		return m
	}
	without := func(k string) map[string]string {
		m := with(k, "")
		delete(m, k)
		return m
	}
	tests := []struct {
		name        string
		a, b        map[string]string
		keys        []string
		wantChanged bool
	}{
		{"a used key changes", base, with("LOG_LEVEL", "warn"), used, true},
		{"an unused key changes", base, with("UNUSED", "y"), used, false},
		{"an unused key is added", base, with("NEW", "y"), used, false},
		{"an unused key is removed", base, without("UNUSED"), used, false},
		{"a used key is removed", base, without("DB_HOST"), used, true},
		{"any key changes when all keys are used", base, with("UNUSED", "y"), nil, true},
		{"a key is added when all keys are used", base, with("NEW", ""), []string{}, true},
		{"nothing changes", base, with("DB_HOST", "db"), nil, false},
		{"a listed key that is absent differs from an empty value", without("DB_HOST"), with("DB_HOST", ""), used, true},
		{"key and value boundaries are unambiguous", map[string]string{"a": "bc"}, map[string]string{"ab": "c"}, nil, true},
		{"a value cannot pass for the end of a key", map[string]string{"a": "\x00"}, map[string]string{"a\x01": ""}, nil, true},
		{"value boundaries between keys are unambiguous", map[string]string{"a": "b", "c": ""}, map[string]string{"a": "", "c": "b"}, nil, true},
		{"listed keys that are absent in both", map[string]string{}, map[string]string{"OTHER": "x"}, []string{"MISSING"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := Hash(tt.a, tt.keys), Hash(tt.b, tt.keys)
			if (ha != hb) != tt.wantChanged {
				t.Errorf("Hash: %s vs %s, want changed %v", ha, hb, tt.wantChanged)
			}
			if got := Changed(tt.a, tt.b, tt.keys); got != tt.wantChanged {
				t.Errorf("Changed = %v, want %v", got, tt.wantChanged)
			}
			if got := Changed(tt.b, tt.a, tt.keys); got != tt.wantChanged {
				t.Errorf("Changed (swapped) = %v, want %v", got, tt.wantChanged)
			}
		})
	}
}

func TestHashSubsetDiffersFromAll(t *testing.T) {
	values := map[string]string{"A": "a", "B": "b"}
	if Hash(values, []string{"A"}) == Hash(values, nil) {
		t.Error("hashing one key equals hashing every key")
	}
	if Hash(values, []string{"A", "B"}) != Hash(values, nil) {
		t.Error("listing every key differs from listing none")
	}
}

func FuzzHashChanged(f *testing.F) {
	f.Add("a", "bc", "ab", "c", "a")
	f.Add("K", "", "K", "x", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, used string) {
		a := map[string]string{k1: v1}
		b := map[string]string{k2: v2}
		var keys []string
		if used != "" {
			keys = []string{used}
		}
		if (Hash(a, keys) != Hash(b, keys)) != Changed(a, b, keys) {
			t.Fatalf("Hash and Changed disagree for %q, %q, keys %q", a, b, keys)
		}
	})
}
