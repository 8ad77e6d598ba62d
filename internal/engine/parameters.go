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

package engine

import (
	"maps"
	"slices"
	"strings"
)

// InvalidParameter is a parameter whose value the engine would refuse.
type InvalidParameter struct {
	// Key is the parameter's name as the user wrote it.
	Key string
	// Err says what is wrong with the value and what is expected, e.g.
	// `"not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`.
	Err error
}

// CheckParameters checks the value of every parameter with
// e.CheckParameter and returns the refused ones sorted by key; nil when
// every value is acceptable. Parameters the engine does not know are
// accepted. It is pure: admission and the reconciler both use it.
func CheckParameters(e Engine, params map[string]string) []InvalidParameter {
	var bad []InvalidParameter
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if err := e.CheckParameter(k, params[k]); err != nil {
			bad = append(bad, InvalidParameter{Key: k, Err: err})
		}
	}
	return bad
}

// Alternatives lists values for a message: "a", "a or b", "a, b or c".
func Alternatives(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
