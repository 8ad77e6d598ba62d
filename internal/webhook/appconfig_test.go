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

package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func appConfig(data map[string]string) *v1alpha1.AppConfig {
	return &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"},
		Spec:       v1alpha1.AppConfigSpec{Application: "shop", Environment: "dev", Data: data},
	}
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		obj    *v1alpha1.AppConfig
		want   []string
		mutate func(*v1alpha1.AppConfig)
	}{
		{name: "valid", obj: appConfig(map[string]string{"A": "${B}", "B": "${environment}"})},
		{name: "invalid key", obj: appConfig(map[string]string{"1ST": "x"}),
			want: []string{`spec.data: Invalid value: key "1ST", position 1: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$`}},
		{name: "overrides of the rendered environment", obj: appConfig(map[string]string{"A": "a"}),
			mutate: func(c *v1alpha1.AppConfig) { c.Spec.Overrides = map[string]map[string]string{"dev": {"A": "${ZZZ}"}} },
			want:   []string{`spec.overrides.dev: Invalid value: key "A", position 1: unknown reference ${ZZZ}`}},
		{name: "data problem reported once", obj: appConfig(map[string]string{"A": "${"}),
			mutate: func(c *v1alpha1.AppConfig) {
				c.Spec.Overrides = map[string]map[string]string{"staging": {"B": "b"}, "prod": {"C": "c"}}
			},
			want: []string{`spec.data: Invalid value: key "A", position 1: unterminated ${: no closing }`}},
		{name: "secret key in an override", obj: appConfig(map[string]string{"A": "a"}),
			mutate: func(c *v1alpha1.AppConfig) {
				c.Spec.Overrides = map[string]map[string]string{"prod": {"A": "${TOKEN}"}}
				c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"TOKEN": {SecretName: "s", Key: "k"}}
			},
			want: []string{`spec.overrides.prod: Forbidden: key "A", position 1: ${TOKEN} refers to a secretData key: secret values are never rendered into the ConfigMap, so data cannot refer to them`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mutate != nil {
				tc.mutate(tc.obj)
			}
			var got []string
			for _, e := range Problems(tc.obj) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestProblemsAreBounded(t *testing.T) {
	data := map[string]string{}
	for i := range 30 {
		data[fmt.Sprintf("K%02d", i)] = "${MISSING}"
	}
	errs := Problems(appConfig(data))
	if len(errs) != maxErrors+1 {
		t.Fatalf("got %d errors, want %d", len(errs), maxErrors+1)
	}
	if got := errs[maxErrors].Error(); got != "spec: Invalid value: and 10 more problems" {
		t.Errorf("last error = %q", got)
	}
}

func TestValidateUpdateAdmitsUnchangedInvalidSpec(t *testing.T) {
	ctx := context.Background()
	old := appConfig(map[string]string{"A": "${A}"})
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"team": "shop"}
	if _, err := appConfigValidator.ValidateUpdate(ctx, old, labelled); err != nil {
		t.Errorf("a metadata-only update of a spec that predates the webhook was rejected: %v", err)
	}
	changed := labelled.DeepCopy()
	changed.Spec.Data["B"] = "b"
	if _, err := appConfigValidator.ValidateUpdate(ctx, old, changed); err == nil {
		t.Error("a change to an invalid spec was admitted")
	}
}
