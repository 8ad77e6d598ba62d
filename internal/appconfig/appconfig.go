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
	"slices"
	"sort"
	"strings"
)

// The environments an AppConfig renders for.
const (
	EnvDev     = "dev"
	EnvStaging = "staging"
	EnvProd    = "prod"
)

// Environments lists the environments in promotion order.
var Environments = []string{EnvDev, EnvStaging, EnvProd}

// The variables a value may refer to besides keys.
const (
	VarNamespace   = "namespace"
	VarEnvironment = "environment"
	VarApplication = "application"
)

// MaxKeyLength is the longest key name, the limit of a ConfigMap key.
const MaxKeyLength = 253

// MaxRenderedBytes bounds the rendered data, counted as the sum of the lengths
// of every key and its rendered value: the size limit of a ConfigMap. It also
// stops values that double at every level of reference from exhausting memory.
const MaxRenderedBytes = 1 << 20

// Spec is the data of an AppConfig that rendering reads.
type Spec struct {
	// Data maps keys to values that may contain references.
	Data map[string]string
	// Overrides maps an environment to the values that replace or add to Data
	// in that environment.
	Overrides map[string]map[string]string
}

// Vars are the values of the variables other than ${environment}, which is
// the environment being rendered.
type Vars struct {
	Namespace   string
	Application string
}

// FieldError is one problem in a Spec.
type FieldError struct {
	// Field is where the value lives: "data", "overrides.<environment>", or
	// empty for a problem with the whole spec.
	Field string
	// Key is the key the problem is in; empty for a problem with the whole
	// spec or an overrides entry.
	Key string
	// Position is the 1-based byte position in the value (for an invalid key
	// name, in the key) of the problem; 0 when it does not apply.
	Position int
	// Message describes the problem.
	Message string
}

// Error formats the error as, for example,
// `key "DB_URL", position 12: unknown reference ${DB_HOSTT}`, with the
// override first when the value comes from one: `overrides.prod key "A": ...`.
func (e FieldError) Error() string {
	var b strings.Builder
	if e.Field != "" && e.Field != fieldData {
		b.WriteString(e.Field)
		if e.Key != "" {
			b.WriteByte(' ')
		}
	}
	if e.Key != "" || e.Field == fieldData {
		fmt.Fprintf(&b, "key %q", e.Key)
	}
	if e.Position > 0 {
		fmt.Fprintf(&b, ", position %d", e.Position)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ValidationError is every problem Validate found, sorted.
type ValidationError struct {
	Errors []FieldError
}

// Error lists every problem, one a line.
func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns each problem, so that errors.As finds a FieldError.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

const fieldData = "data"

func overridesField(env string) string { return "overrides." + env }

// Validate returns every problem in spec when rendered for env, sorted by
// field (the whole spec first, then data, then the overrides by
// environment name), key, position and message; nil when Render succeeds.
func Validate(spec Spec, env string, vars Vars) []FieldError {
	var errs []FieldError
	if !slices.Contains(Environments, env) {
		errs = append(errs, FieldError{Message: fmt.Sprintf("environment %q: must be one of %s", env, strings.Join(Environments, ", "))})
	}
	errs = append(errs, checkKeys(fieldData, spec.Data)...)
	for oenv, values := range spec.Overrides {
		field := overridesField(oenv)
		if !slices.Contains(Environments, oenv) {
			errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("unknown environment %q: must be one of %s", oenv, strings.Join(Environments, ", "))})
		}
		errs = append(errs, checkKeys(field, values)...)
		if oenv == env {
			continue // checked below with the data
		}
		for key, value := range values {
			_, serrs := parse(value)
			for _, se := range serrs {
				errs = append(errs, FieldError{Field: field, Key: key, Position: se.col, Message: se.msg})
			}
		}
	}
	values, fields := effective(spec, env)
	errs = append(errs, checkValues(values, fields, variables(env, vars))...)
	sortErrors(errs)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Render returns the values of spec for env with every reference replaced,
// or a *ValidationError listing what Validate found.
func Render(spec Spec, env string, vars Vars) (map[string]string, error) {
	if errs := Validate(spec, env, vars); errs != nil {
		return nil, &ValidationError{Errors: errs}
	}
	values, _ := effective(spec, env)
	return renderValues(values, variables(env, vars))
}

// effective applies the overrides for env to the data, and tells for each key
// which field its value comes from.
func effective(spec Spec, env string) (values, fields map[string]string) {
	values = make(map[string]string, len(spec.Data))
	fields = make(map[string]string, len(spec.Data))
	for k, v := range spec.Data {
		values[k] = v
		fields[k] = fieldData
	}
	for k, v := range spec.Overrides[env] {
		values[k] = v
		fields[k] = overridesField(env)
	}
	return values, fields
}

func variables(env string, vars Vars) map[string]string {
	return map[string]string{
		VarNamespace:   vars.Namespace,
		VarEnvironment: env,
		VarApplication: vars.Application,
	}
}

// checkKeys reports invalid and reserved key names.
func checkKeys(field string, values map[string]string) []FieldError {
	var errs []FieldError
	for key := range values {
		switch {
		case key == "":
			errs = append(errs, FieldError{Field: field, Key: key, Message: "invalid key name: must not be empty"})
		case len(key) > MaxKeyLength:
			errs = append(errs, FieldError{Field: field, Key: key, Message: fmt.Sprintf("invalid key name: longer than %d bytes", MaxKeyLength)})
		case badNameByte(key) >= 0:
			errs = append(errs, FieldError{Field: field, Key: key, Position: badNameByte(key) + 1, Message: "invalid key name: must match " + namePattern})
		case key == VarNamespace || key == VarEnvironment || key == VarApplication:
			errs = append(errs, FieldError{Field: field, Key: key, Message: fmt.Sprintf("invalid key name: reserved for the variable ${%s}", key)})
		}
	}
	return errs
}

// sortErrors orders errors by field (the whole spec first, then data, then
// overrides), key, position and message.
func sortErrors(errs []FieldError) {
	rank := func(field string) int {
		switch field {
		case "":
			return 0
		case fieldData:
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if ra, rb := rank(a.Field), rank(b.Field); ra != rb {
			return ra < rb
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Position != b.Position {
			return a.Position < b.Position
		}
		return a.Message < b.Message
	})
}
