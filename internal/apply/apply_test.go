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

package apply

import "testing"

func TestContains(t *testing.T) {
	tests := []struct {
		name       string
		live, want any
		contains   bool
	}{
		{"equal scalars", 3.0, 3.0, true},
		{"different scalars", 3.0, 2.0, false},
		{"extra live keys", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 1.0}, true},
		{"missing key", map[string]any{"a": 1.0}, map[string]any{"b": 1.0}, false},
		{"changed nested value", map[string]any{"spec": map[string]any{"replicas": 5.0}}, map[string]any{"spec": map[string]any{"replicas": 3.0}}, false},
		{"empty map wanted, key absent", map[string]any{}, map[string]any{"labels": map[string]any{}}, true},
		{"list elements matched in any order", []any{"x", "y"}, []any{"y"}, true},
		{"list element missing", []any{"x"}, []any{"x", "y"}, false},
		{
			"list of maps with defaulted fields",
			[]any{map[string]any{"name": "app", "image": "a:1", "imagePullPolicy": "IfNotPresent"}},
			[]any{map[string]any{"name": "app", "image": "a:1"}},
			true,
		},
		{
			"list of maps with drifted field",
			[]any{map[string]any{"name": "app", "image": "a:2"}},
			[]any{map[string]any{"name": "app", "image": "a:1"}},
			false,
		},
		{"type mismatch", "3", 3.0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.live, tt.want); got != tt.contains {
				t.Errorf("Contains(%v, %v) = %v, want %v", tt.live, tt.want, got, tt.contains)
			}
		})
	}
}

func TestHashIsStable(t *testing.T) {
	a := map[string]any{"b": 1.0, "a": map[string]any{"y": "1", "x": "2"}}
	b := map[string]any{"a": map[string]any{"x": "2", "y": "1"}, "b": 1.0}
	ha, err := hashOf(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := hashOf(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Errorf("hash depends on key order: %s != %s", ha, hb)
	}
	b["b"] = 2.0
	if hc, _ := hashOf(b); hc == ha {
		t.Errorf("hash did not change with content")
	}
}
