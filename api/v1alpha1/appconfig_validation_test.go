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

package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func newAppConfig(mutate ...func(*v1alpha1.AppConfig)) *v1alpha1.AppConfig {
	names++
	c := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ac%d", names)},
		Spec:       v1alpha1.AppConfigSpec{Application: "shop", Environment: "dev", Data: map[string]string{"A": "1"}},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func TestAppConfigAdmission(t *testing.T) {
	ctx := context.Background()
	ok := newAppConfig()
	if err := k8s.Create(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if *ok.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("revisionHistoryLimit default = %d, want 10", *ok.Spec.RevisionHistoryLimit)
	}
	ok.Spec.Application = "other"
	expectInvalid(t, k8s.Update(ctx, ok), "application is immutable")

	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.AppConfig)
		want   string
	}{
		{"unknown environment", func(c *v1alpha1.AppConfig) { c.Spec.Environment = "qa" }, "spec.environment"},
		{"override for unknown environment", func(c *v1alpha1.AppConfig) {
			c.Spec.Overrides = map[string]map[string]string{"production": {"A": "2"}}
		}, "overrides are keyed by environment"},
		{"secret key also in data", func(c *v1alpha1.AppConfig) {
			c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"A": {SecretName: "s", Key: "k"}}
		}, "both data and secretData"},
		{"secret key also in an override", func(c *v1alpha1.AppConfig) {
			c.Spec.Overrides = map[string]map[string]string{"prod": {"PASS": "x"}}
			c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"PASS": {SecretName: "s", Key: "k"}}
		}, "both an override and secretData"},
		{"invalid secret key", func(c *v1alpha1.AppConfig) {
			c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"db-password": {SecretName: "s", Key: "k"}}
		}, "secretData keys must match"},
		{"revision not a hash", func(c *v1alpha1.AppConfig) { c.Spec.Revision = "latest" }, "spec.revision"},
		{"name too long", func(c *v1alpha1.AppConfig) { c.Name = fmt.Sprintf("%064d", 0) }, "at most 63 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectInvalid(t, k8s.Create(ctx, newAppConfig(tc.mutate)), tc.want)
		})
	}
}

func TestWebAppConfigUseAdmission(t *testing.T) {
	ctx := context.Background()
	app := func(use v1alpha1.ConfigUse) *v1alpha1.WebApp {
		names++
		return &v1alpha1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w%d", names)},
			Spec:       v1alpha1.WebAppSpec{Image: "nginx:1.27", Config: []v1alpha1.ConfigUse{use}},
		}
	}
	good := app(v1alpha1.ConfigUse{AppConfig: "shop", Keys: []string{"DB_HOST", "LOG_LEVEL"}})
	if err := k8s.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	if good.Spec.Config[0].As != v1alpha1.ConfigAsEnv {
		t.Errorf("as default = %q, want Env", good.Spec.Config[0].As)
	}
	expectInvalid(t, k8s.Create(ctx, app(v1alpha1.ConfigUse{AppConfig: "shop", MountPath: "/etc/shop"})), "mountPath applies only when as is Files")
	expectInvalid(t, k8s.Create(ctx, app(v1alpha1.ConfigUse{AppConfig: "shop", Keys: []string{"log-level"}})), "spec.config[0].keys[0]")
	if err := k8s.Create(ctx, app(v1alpha1.ConfigUse{AppConfig: "shop", As: v1alpha1.ConfigAsFiles, MountPath: "/etc/shop"})); err != nil {
		t.Errorf("files with a mount path: %v", err)
	}
}
