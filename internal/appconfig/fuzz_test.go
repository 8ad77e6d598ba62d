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
	"maps"
	"slices"
	"strings"
	"testing"
)

// fuzzSpec reads a spec from lines "KEY=VALUE" (data) and "ENV/KEY=VALUE"
// (overrides); "\n" in a value is written as "\\n".
func fuzzSpec(text string) Spec {
	spec := Spec{Data: map[string]string{}, Overrides: map[string]map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		kv, value, _ := strings.Cut(line, "=")
		value = strings.ReplaceAll(value, `\n`, "\n")
		if env, key, ok := strings.Cut(kv, "/"); ok {
			if spec.Overrides[env] == nil {
				spec.Overrides[env] = map[string]string{}
			}
			spec.Overrides[env][key] = value
			continue
		}
		spec.Data[kv] = value
	}
	return spec
}

func FuzzRender(f *testing.F) {
	f.Add("A=${B}\nB=b\nprod/B=${namespace}", "prod")
	f.Add("A=${A}", "dev")
	f.Add("A=${B}\nB=${C}\nC=${A}\nD=${A}", "dev")
	f.Add("A=$${B}\nB=${}\nC=${X", "staging")
	f.Add("1A=x\nnamespace=y\nqa/Z=z", "qa")
	f.Add("A=${B}${B}\nB=${C}${C}\nC=${D}${D}\nD=xxxxxxxx", "dev")
	f.Add("A=pa$$word $ {x} $${y}\nB=${environment}-${application}", "dev")
	f.Fuzz(func(t *testing.T, text, env string) {
		spec := fuzzSpec(text)
		errs := Validate(spec, env, testVars)
		got, err := Render(spec, env, testVars)
		if (errs == nil) != (err == nil) {
			t.Fatalf("Validate returned %v but Render returned error %v", errs, err)
		}
		if again := Validate(spec, env, testVars); !slices.Equal(errs, again) {
			t.Fatalf("Validate is not deterministic: %v, then %v", errs, again)
		}
		sorted := slices.Clone(errs)
		sortErrors(sorted)
		if !slices.Equal(errs, sorted) {
			t.Fatalf("Validate is not sorted: %v", errs)
		}

		// The renderer finds problems on its own; it must agree with the
		// checks of Validate on the same values.
		values, fields := effective(spec, env)
		vars := variables(env, testVars)
		checked := checkValues(values, fields, vars)
		rendered, rerr := renderValues(values, vars)
		if (len(checked) == 0) != (rerr == nil) {
			t.Fatalf("checkValues returned %v but renderValues returned error %v", checked, rerr)
		}
		if err != nil {
			return
		}
		if !maps.Equal(got, rendered) {
			t.Fatalf("Render %q differs from renderValues %q", got, rendered)
		}
		if len(got) != len(values) {
			t.Fatalf("rendered %d keys, want %d", len(got), len(values))
		}
		for k, v := range values {
			r, ok := got[k]
			if !ok {
				t.Fatalf("key %q missing from the rendered values", k)
			}
			if !strings.Contains(v, "$") && r != v {
				t.Fatalf("key %q: value %q without references rendered as %q", k, v, r)
			}
		}
	})
}
