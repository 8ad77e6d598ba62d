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
	"strings"
)

// renderValues replaces every reference in values. It finds malformed,
// unknown and cyclic references and oversized data on its own, so that tests
// can check it agrees with checkValues; Render only calls it on values that
// passed Validate.
func renderValues(values, vars map[string]string) (map[string]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	out := make(map[string]string, len(values))
	state := make(map[string]int, len(values))
	total := 0
	var resolve func(key string) (string, error)
	resolve = func(key string) (string, error) {
		switch state[key] {
		case done:
			return out[key], nil
		case visiting:
			return "", fmt.Errorf("key %q: reference cycle", key)
		}
		state[key] = visiting
		segs, serrs := parse(values[key])
		if len(serrs) > 0 {
			return "", fmt.Errorf("key %q, position %d: %s", key, serrs[0].col, serrs[0].msg)
		}
		var b strings.Builder
		for _, s := range segs {
			var part string
			if s.ref == "" {
				part = s.lit
			} else if v, ok := vars[s.ref]; ok {
				part = v
			} else if _, ok := values[s.ref]; ok {
				v, err := resolve(s.ref)
				if err != nil {
					return "", err
				}
				part = v
			} else {
				return "", fmt.Errorf("key %q, position %d: unknown reference ${%s}", key, s.col, s.ref)
			}
			if b.Len()+len(part) > MaxRenderedBytes {
				return "", fmt.Errorf("key %q: rendered value larger than %d bytes", key, MaxRenderedBytes)
			}
			b.WriteString(part)
		}
		state[key] = done
		out[key] = b.String()
		return out[key], nil
	}
	for _, key := range sortedKeys(values) {
		v, err := resolve(key)
		if err != nil {
			return nil, err
		}
		total += len(key) + len(v)
		if total > MaxRenderedBytes {
			return nil, fmt.Errorf("rendered data larger than %d bytes", MaxRenderedBytes)
		}
	}
	return out, nil
}
