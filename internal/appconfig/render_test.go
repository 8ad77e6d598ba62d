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
	"errors"
	"maps"
	"strings"
	"testing"
)

var testVars = Vars{Namespace: "shop-ns", Application: "shop"}

func TestRender(t *testing.T) {
	base := map[string]string{
		"DB_HOST":   "db.${namespace}.svc",
		"DB_PORT":   "5432",
		"DB_URL":    "postgres://${DB_HOST}:${DB_PORT}/${application}",
		"LOG_LEVEL": "debug",
		"BANNER":    "${application} in ${environment} logs at ${LOG_LEVEL}",
	}
	tests := []struct {
		name string
		spec Spec
		env  string
		want map[string]string
	}{
		{
			name: "nested references and variables",
			spec: Spec{Data: base},
			env:  EnvDev,
			want: map[string]string{
				"DB_HOST":   "db.shop-ns.svc",
				"DB_PORT":   "5432",
				"DB_URL":    "postgres://db.shop-ns.svc:5432/shop",
				"LOG_LEVEL": "debug",
				"BANNER":    "shop in dev logs at debug",
			},
		},
		{
			name: "a prod override is not applied in staging",
			spec: Spec{Data: base, Overrides: map[string]map[string]string{EnvProd: {"LOG_LEVEL": "warn"}}},
			env:  EnvStaging,
			want: map[string]string{
				"DB_HOST":   "db.shop-ns.svc",
				"DB_PORT":   "5432",
				"DB_URL":    "postgres://db.shop-ns.svc:5432/shop",
				"LOG_LEVEL": "debug",
				"BANNER":    "shop in staging logs at debug",
			},
		},
		{
			name: "a prod override wins in prod and reaches the keys that refer to it",
			spec: Spec{Data: base, Overrides: map[string]map[string]string{EnvProd: {"LOG_LEVEL": "warn"}}},
			env:  EnvProd,
			want: map[string]string{
				"DB_HOST":   "db.shop-ns.svc",
				"DB_PORT":   "5432",
				"DB_URL":    "postgres://db.shop-ns.svc:5432/shop",
				"LOG_LEVEL": "warn",
				"BANNER":    "shop in prod logs at warn",
			},
		},
		{
			name: "an override may add a key and refer to data",
			spec: Spec{
				Data:      map[string]string{"HOST": "db"},
				Overrides: map[string]map[string]string{EnvDev: {"HOST": "localhost", "DEBUG_URL": "http://${HOST}:6060"}},
			},
			env:  EnvDev,
			want: map[string]string{"HOST": "localhost", "DEBUG_URL": "http://localhost:6060"},
		},
		{
			name: "escapes and lone dollars",
			spec: Spec{Data: map[string]string{
				"SHELL":    "echo $${HOME} and $${namespace}",
				"PASSWORD": "pa$$word$",
				"PRICE":    "5$ {not a ref} $ {x}",
				"DOLLAR":   "$",
				"TOTAL":    "${DOLLAR}${DOLLAR}5",
				"TRIPLE":   "$$${A}",
				"BRACES":   "}{$}",
			}},
			env: EnvDev,
			want: map[string]string{
				"SHELL":    "echo ${HOME} and ${namespace}",
				"PASSWORD": "pa$$word$",
				"PRICE":    "5$ {not a ref} $ {x}",
				"DOLLAR":   "$",
				"TOTAL":    "$$5",
				"TRIPLE":   "$${A}",
				"BRACES":   "}{$}",
			},
		},
		{
			name: "a referenced escape stays literal",
			spec: Spec{Data: map[string]string{"A": "$${B}", "B": "b", "C": "<${A}>"}},
			env:  EnvDev,
			want: map[string]string{"A": "${B}", "B": "b", "C": "<${B}>"},
		},
		{
			name: "no data",
			spec: Spec{},
			env:  EnvProd,
			want: map[string]string{},
		},
		{
			name: "a diamond renders the shared key once per use",
			spec: Spec{Data: map[string]string{"A": "${B}-${C}", "B": "${D}", "C": "${D}${D}", "D": "d"}},
			env:  EnvDev,
			want: map[string]string{"A": "d-dd", "B": "d", "C": "dd", "D": "d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := Validate(tt.spec, tt.env, testVars); errs != nil {
				t.Fatalf("Validate: %v", errs)
			}
			got, err := Render(tt.spec, tt.env, testVars)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Render:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRenderDoesNotChangeItsInput(t *testing.T) {
	data := map[string]string{"A": "${B}", "B": "b"}
	prod := map[string]string{"B": "p"}
	spec := Spec{Data: data, Overrides: map[string]map[string]string{EnvProd: prod}}
	if _, err := Render(spec, EnvProd, testVars); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(data, map[string]string{"A": "${B}", "B": "b"}) || !maps.Equal(prod, map[string]string{"B": "p"}) {
		t.Errorf("input changed: data %q, prod %q", data, prod)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		env  string
		want []string
	}{
		{
			name: "unknown reference with a suggestion",
			spec: Spec{Data: map[string]string{"DB_HOST": "db", "DB_URL": "postgres://${DB_HOSTT}:5432"}},
			want: []string{`key "DB_URL", position 12: unknown reference ${DB_HOSTT} (did you mean ${DB_HOST}?)`},
		},
		{
			name: "unknown reference without a suggestion",
			spec: Spec{Data: map[string]string{"DB_HOST": "db", "DB_URL": "${PASSWORD}"}},
			want: []string{`key "DB_URL", position 1: unknown reference ${PASSWORD}`},
		},
		{
			name: "suggestions: a swap, a variable, the first of two candidates",
			spec: Spec{Data: map[string]string{
				"AB": "x", "AC": "x",
				"S": "${BA} ${namespce} ${A}",
			}},
			want: []string{
				`key "S", position 1: unknown reference ${BA} (did you mean ${AB}?)`,
				`key "S", position 7: unknown reference ${namespce} (did you mean ${namespace}?)`,
				`key "S", position 19: unknown reference ${A} (did you mean ${AB}?)`,
			},
		},
		{
			name: "invalid key names are never suggested",
			spec: Spec{Data: map[string]string{"1": "x", "B-": "x", "SRC": "${A}${B}"}},
			want: []string{
				`key "1", position 1: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "B-", position 2: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "SRC", position 1: unknown reference ${A}`,
				`key "SRC", position 5: unknown reference ${B}`,
			},
		},
		{
			name: "variables are case sensitive",
			spec: Spec{Data: map[string]string{"A": "${NAMESPACE}"}},
			want: []string{`key "A", position 1: unknown reference ${NAMESPACE}`},
		},
		{
			name: "cycle of length 1",
			spec: Spec{Data: map[string]string{"A": "x${A}"}},
			want: []string{`key "A", position 2: reference cycle A -> A`},
		},
		{
			name: "cycle of length 2",
			spec: Spec{Data: map[string]string{"A": "${B}", "B": "${A}"}},
			want: []string{`key "A", position 1: reference cycle A -> B -> A`},
		},
		{
			name: "cycle of length 3 named from its first key",
			spec: Spec{Data: map[string]string{"C": "c${A}", "A": "a${B}", "B": "${namespace}${C}"}},
			want: []string{`key "A", position 2: reference cycle A -> B -> C -> A`},
		},
		{
			name: "a cycle reachable from keys outside it is reported once",
			spec: Spec{Data: map[string]string{
				"ENTRY": "${X}", "OTHER": "${X}${Y}",
				"X": "${Y}", "Y": "${Z}", "Z": "${Y}",
			}},
			want: []string{`key "Y", position 1: reference cycle Y -> Z -> Y`},
		},
		{
			name: "two cycles through one key: the shortest is named",
			spec: Spec{Data: map[string]string{"A": "${C}${B}", "B": "${D}", "C": "${A}", "D": "${A}"}},
			want: []string{`key "A", position 1: reference cycle A -> C -> A`},
		},
		{
			name: "separate cycles are each reported",
			spec: Spec{Data: map[string]string{"A": "${A}", "B": "${C}", "C": "${B}"}},
			want: []string{
				`key "A", position 1: reference cycle A -> A`,
				`key "B", position 1: reference cycle B -> C -> B`,
			},
		},
		{
			name: "a cycle made by an override",
			spec: Spec{
				Data:      map[string]string{"A": "${B}", "B": "b"},
				Overrides: map[string]map[string]string{EnvProd: {"B": "${A}"}},
			},
			env:  EnvProd,
			want: []string{`key "A", position 1: reference cycle A -> B -> A`},
		},
		{
			name: "invalid key names",
			spec: Spec{Data: map[string]string{
				"1ST": "x", "db.host": "x", "my-key": "x", "": "x", "namespace": "x", "OK_1": "x",
				strings.Repeat("K", 254): "x",
			}},
			want: []string{
				`key "": invalid key name: must not be empty`,
				`key "1ST", position 1: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "` + strings.Repeat("K", 254) + `": invalid key name: longer than 253 bytes`,
				`key "db.host", position 3: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "my-key", position 3: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "namespace": invalid key name: reserved for the variable ${namespace}`,
			},
		},
		{
			name: "unterminated reference",
			spec: Spec{Data: map[string]string{"X": "abc ${DB_HOST"}},
			want: []string{`key "X", position 5: unterminated ${: no closing }`},
		},
		{
			name: "empty and invalid reference names",
			spec: Spec{Data: map[string]string{"X": "${}-${A B}-${A${B}}-${1A}"}},
			want: []string{
				`key "X", position 1: empty reference ${}`,
				`key "X", position 5: invalid reference ${A B}: a name must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "X", position 12: invalid reference ${A${B}: a name must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`key "X", position 21: invalid reference ${1A}: a name must match ^[A-Za-z_][A-Za-z0-9_]*$`,
			},
		},
		{
			name: "unknown environment",
			spec: Spec{Data: map[string]string{"A": "a"}},
			env:  "qa",
			want: []string{`environment "qa": must be one of dev, staging, prod`},
		},
		{
			name: "errors in overrides name the override; other environments get key and syntax checks",
			spec: Spec{
				Data: map[string]string{"LOG_LEVEL": "info"},
				Overrides: map[string]map[string]string{
					EnvProd:    {"LOG_LEVEL": "${LOGLEVEL}"},
					EnvStaging: {"LOG-LEVEL": "${", "OK": "${UNKNOWN_IN_STAGING_ONLY}"},
					"qa":       {"A": "a"},
				},
			},
			env: EnvProd,
			want: []string{
				`overrides.prod key "LOG_LEVEL", position 1: unknown reference ${LOGLEVEL} (did you mean ${LOG_LEVEL}?)`,
				`overrides.qa: unknown environment "qa": must be one of dev, staging, prod`,
				`overrides.staging key "LOG-LEVEL", position 1: unterminated ${: no closing }`,
				`overrides.staging key "LOG-LEVEL", position 4: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
			},
		},
		{
			name: "many errors at once, sorted by field, key and position",
			spec: Spec{
				Data: map[string]string{
					"Z":   "${}${NOPE}",
					"B":   "${B}",
					"A":   "${MISSING} ${",
					"a.b": "${A}",
				},
				Overrides: map[string]map[string]string{EnvDev: {"C": "${ZZ}"}},
			},
			env: EnvDev,
			want: []string{
				`key "A", position 1: unknown reference ${MISSING}`,
				`key "A", position 12: unterminated ${: no closing }`,
				`key "B", position 1: reference cycle B -> B`,
				`key "Z", position 1: empty reference ${}`,
				`key "Z", position 4: unknown reference ${NOPE}`,
				`key "a.b", position 2: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`,
				`overrides.dev key "C", position 1: unknown reference ${ZZ} (did you mean ${Z}?)`,
			},
		},
		{
			name: "rendered data over the limit",
			spec: Spec{Data: bomb(24)},
			want: []string{`rendered data is larger than 1048576 bytes (keys and values; the largest value is key "K00", over 1048576 bytes)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == "" {
				env = EnvDev
			}
			errs := Validate(tt.spec, env, testVars)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Error()
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate:\n got %q\nwant %q", got, tt.want)
			}
			_, err := Render(tt.spec, env, testVars)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Render error %v, want a *ValidationError", err)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Render error:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
			var fe FieldError
			if !errors.As(err, &fe) || fe != errs[0] {
				t.Errorf("errors.As(FieldError) = %v, want the first error %v", fe, errs[0])
			}
		})
	}
}

// bomb returns keys K00..K<n-1> where each key doubles the next one, so that
// K00 renders to 2^(n-1) bytes.
func bomb(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n-1; i++ {
		next := "${" + keyName(i+1) + "}"
		m[keyName(i)] = next + next
	}
	m[keyName(n-1)] = "x"
	return m
}

func keyName(i int) string { return "K" + string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestFieldErrorPositions(t *testing.T) {
	// The position is the byte of the '$', counted in bytes, not runes.
	errs := Validate(Spec{Data: map[string]string{"A": "é${B}"}}, EnvDev, testVars)
	if len(errs) != 1 || errs[0].Key != "A" || errs[0].Position != 3 || errs[0].Field != "data" {
		t.Fatalf("got %#v, want key A at position 3 of data", errs)
	}
}

func TestRenderedSizeLimitBoundary(t *testing.T) {
	// A renders to B's value: keys and values add up to exactly the limit.
	b := strings.Repeat("v", MaxRenderedBytes/2-1)
	ok := Spec{Data: map[string]string{"A": "${B}", "B": b}}
	if errs := Validate(ok, EnvDev, testVars); errs != nil {
		t.Fatalf("at the limit: %v", errs)
	}
	if _, err := Render(ok, EnvDev, testVars); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	oneMore := Spec{Data: map[string]string{"A": "${B}", "B": b + "v"}}
	if errs := Validate(oneMore, EnvDev, testVars); len(errs) != 1 {
		t.Fatalf("one byte over the limit: got %v, want one error", errs)
	}
	over := Spec{Data: map[string]string{"A": strings.Repeat("v", MaxRenderedBytes)}}
	if errs := Validate(over, EnvDev, testVars); len(errs) != 1 {
		t.Fatalf("over the limit: got %v, want one error", errs)
	}
}
