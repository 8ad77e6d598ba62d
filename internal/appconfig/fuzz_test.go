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
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
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

// FuzzParse checks the parser on any value: every reference and error
// points at the "$" that starts it, references are valid names, and a value
// without errors is its segments again, literal "${" escaped as "$${".
func FuzzParse(f *testing.F) {
	f.Add("postgresql://${DB_HOST}:5432/app")
	f.Add("pa$$word $ {x} $${y} $$${z}")
	f.Add("${} ${1A} ${A-B} ${A")
	f.Add("$$$${A}${B}${C}x")
	f.Fuzz(func(t *testing.T, s string) {
		segs, errs := parse(s)
		var rebuilt strings.Builder
		for i, seg := range segs {
			if seg.ref == "" {
				if seg.lit == "" || (i > 0 && segs[i-1].ref == "") {
					t.Fatalf("%q: literal segments %+v not merged", s, segs)
				}
				rebuilt.WriteString(strings.ReplaceAll(seg.lit, "${", "$${"))
				continue
			}
			if badNameByte(seg.ref) >= 0 {
				t.Fatalf("%q: reference to the invalid name %q", s, seg.ref)
			}
			if seg.col < 1 || !strings.HasPrefix(s[seg.col-1:], "${"+seg.ref+"}") {
				t.Fatalf("%q: reference %q at position %d", s, seg.ref, seg.col)
			}
			rebuilt.WriteString("${" + seg.ref + "}")
		}
		for _, e := range errs {
			if e.col < 1 || e.col > len(s) || s[e.col-1] != '$' {
				t.Fatalf("%q: error %q at position %d", s, e.msg, e.col)
			}
		}
		if len(errs) == 0 && rebuilt.String() != s {
			t.Fatalf("%q parsed as %+v, which writes back as %q", s, segs, rebuilt.String())
		}
	})
}

// fuzzMap reads "KEY=VALUE" lines.
func fuzzMap(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// FuzzRevision checks what decides a consumer's rollout: a revision read
// back from its ConfigMap hashes as the one written; the hash of the used
// keys ignores their order and repeats; and Changed lists exactly the used
// keys whose hash changed.
func FuzzRevision(f *testing.F) {
	f.Add("A=1\nB=2", "PASS=t1", "A=1\nB=3", "PASS=t1", "A,PASS")
	f.Add("A=1\nB=3", "PASS=t1", "A=1\nB=3", "PASS=t2", "")
	f.Add("A=1", "", "B=1", "A=x", "A,B,A")
	f.Add("A=", "", "", "", "A")
	f.Fuzz(func(t *testing.T, data, tokens, nextData, nextTokens, used string) {
		var keys []string
		if used != "" {
			keys = strings.Split(used, ",")
		}
		r := fuzzRevision(t, fuzzMap(data), fuzzMap(tokens))
		next := fuzzRevision(t, fuzzMap(nextData), fuzzMap(nextTokens))

		shuffled := append(slices.Clone(keys), keys...)
		slices.Reverse(shuffled)
		if len(keys) > 0 && r.Hash(keys) != r.Hash(shuffled) {
			t.Fatalf("the hash of %q differs from that of %q", keys, shuffled)
		}
		changed := r.Changed(next, keys)
		if !slices.IsSorted(changed) || len(slices.Compact(slices.Clone(changed))) != len(changed) {
			t.Fatalf("Changed %q is not sorted and unique", changed)
		}
		if (len(changed) > 0) != (r.Hash(keys) != next.Hash(keys)) {
			t.Fatalf("Changed %q, but the hashes of %q are %s and %s", changed, keys, r.Hash(keys), next.Hash(keys))
		}
		candidates := keys
		if len(keys) == 0 {
			candidates = append(slices.Collect(maps.Keys(r.hashValues())), slices.Collect(maps.Keys(next.hashValues()))...)
		}
		for _, k := range candidates {
			if slices.Contains(changed, k) != (r.Hash([]string{k}) != next.Hash([]string{k})) {
				t.Fatalf("key %q: Changed %q disagrees with its hash", k, changed)
			}
		}
		for _, k := range changed {
			if !slices.Contains(candidates, k) {
				t.Fatalf("Changed lists %q, which is not used", k)
			}
		}
	})
}

// fuzzRevision writes a revision's ConfigMap as the AppConfig controller
// does and reads it back, checking that it reads as the revision written.
// Secret keys are names, as the schema has them, and tokens hex; a key
// cannot be both secret and not.
func fuzzRevision(t *testing.T, data, tokens map[string]string) Revision {
	t.Helper()
	for k, v := range tokens {
		if badNameByte(k) >= 0 || !utf8.ValidString(v) {
			delete(tokens, k)
		}
		delete(data, k)
	}
	written := NewRevision(data, tokens)
	cm := &corev1.ConfigMap{Data: data}
	if len(tokens) > 0 {
		raw, err := json.Marshal(tokens)
		if err != nil {
			t.Fatal(err)
		}
		cm.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationSecretTokens: string(raw)}}
	}
	read := ReadRevision(cm)
	if written.Hash(nil) != read.Hash(nil) || !slices.Equal(written.SecretKeys, read.SecretKeys) {
		t.Fatalf("revision %v/%v reads back as %v", data, tokens, read)
	}
	for k := range data {
		if !read.Has(k) || read.IsSecret(k) {
			t.Fatalf("key %q of the data: Has %v, IsSecret %v", k, read.Has(k), read.IsSecret(k))
		}
	}
	for k := range tokens {
		if !read.Has(k) || !read.IsSecret(k) {
			t.Fatalf("secret key %q: Has %v, IsSecret %v", k, read.Has(k), read.IsSecret(k))
		}
	}
	return read
}
