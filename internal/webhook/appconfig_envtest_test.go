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

package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
	"github.com/steward-dev/steward/internal/webhook"
)

// k8s is an admin client of an API server whose AppConfig, AppStack and
// Database webhooks call the validators, served by a manager in this process.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A fuzz run needs no API server: the fuzz targets are pure, and each
	// fuzz worker runs TestMain too and is killed before it could stop one.
	if apitest.FuzzOnly() {
		return m.Run()
	}
	env, err := apitest.StartWithWebhooks()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()

	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:        scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(env.WebhookOptions()),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := webhook.SetupAppConfigWebhook(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := webhook.SetupAppStackWebhook(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := webhook.SetupDatabaseWebhook(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if err := waitServing(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func waitServing(mgr ctrl.Manager) error {
	check := mgr.GetWebhookServer().StartedChecker()
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check(req)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server not serving after 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var names int

func newAppConfig(ns string, data map[string]string, mutate ...func(*v1alpha1.AppConfig)) *v1alpha1.AppConfig {
	names++
	c := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ac%d", names)},
		Spec:       v1alpha1.AppConfigSpec{Application: "shop", Environment: "dev", Data: data},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// expectInvalid checks that err is the AppConfig webhook's Invalid answer,
// and that its message, as kubectl prints it, contains every one of wants.
func expectInvalid(t *testing.T, err error, wants ...string) {
	t.Helper()
	expectDenied(t, err, "vappconfig.steward.dev", wants...)
}

// expectDenied checks that err is the Invalid answer of the webhook named
// hook, and that its message contains every one of wants.
func expectDenied(t *testing.T, err error, hook string, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("admitted, want rejected")
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v (reason %s), want an Invalid error", err, apierrors.ReasonForError(err))
	}
	if !strings.Contains(err.Error(), `admission webhook "`+hook+`" denied the request`) {
		t.Errorf("error %q does not come from the webhook", err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
}

func TestAppConfigWebhookRejectsCycle(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{"A": "${B}", "B": "x${A}", "C": "${C}"})
	expectInvalid(t, k8s.Create(context.Background(), c),
		`spec.data: Invalid value: key "A", position 1: reference cycle A -> B -> A`,
		`spec.data: Invalid value: key "C", position 1: reference cycle C -> C`)
}

func TestAppConfigWebhookRejectsUnknownReference(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{"DB_HOST": "db", "DB_URL": "postgres://${DB_HOSTT}:5432/${namespace}"})
	err := k8s.Create(context.Background(), c)
	expectInvalid(t, err,
		`spec.data: Invalid value: key "DB_URL", position 12: unknown reference ${DB_HOSTT} (did you mean ${DB_HOST}?)`)
	// The client gets the problem as a cause too, the way kubectl and
	// other tools find the field.
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) != 1 {
		t.Fatalf("want one cause, got %#v", err)
	}
	if got := status.Status().Details.Causes[0].Field; got != "spec.data" {
		t.Errorf("cause field = %q, want spec.data", got)
	}
}

func TestAppConfigWebhookChecksOtherEnvironmentsOverrides(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{"LEVEL": "info", "LOG": "${LEVEL}"}, func(c *v1alpha1.AppConfig) {
		c.Spec.Overrides = map[string]map[string]string{
			"staging": {"LOG": "${LEVEL"},
			"prod":    {"LEVEL": "warn", "LOG": "level=${LEVL}"},
		}
	})
	expectInvalid(t, k8s.Create(context.Background(), c),
		`spec.overrides.prod: Invalid value: key "LOG", position 7: unknown reference ${LEVL} (did you mean ${LEVEL}?)`,
		`spec.overrides.staging: Invalid value: key "LOG", position 1: unterminated ${: no closing }`)
}

func TestAppConfigWebhookForbidsSecretReference(t *testing.T) {
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{"DB_URL": "postgres://app:${DB_PASSWORD}@db"}, func(c *v1alpha1.AppConfig) {
		c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"DB_PASSWORD": {SecretName: "db", Key: "password"}}
	})
	expectInvalid(t, k8s.Create(context.Background(), c),
		`spec.data: Forbidden: key "DB_URL", position 16: ${DB_PASSWORD} refers to a secretData key`)
}

func TestAppConfigWebhookAdmitsValid(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{
		"HOST": "${application}.${namespace}.svc", "URL": "https://${HOST}/", "LITERAL": "$${HOME}",
	}, func(c *v1alpha1.AppConfig) {
		c.Spec.Overrides = map[string]map[string]string{"prod": {"HOST": "shop.example.com"}}
		c.Spec.SecretData = map[string]v1alpha1.SecretValueRef{"TOKEN": {SecretName: "api", Key: "token"}}
	})
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatalf("valid AppConfig rejected: %v", err)
	}
	c.Spec.Data["PORT"] = "8443"
	c.Spec.Data["URL"] = "https://${HOST}:${PORT}/"
	if err := k8s.Update(ctx, c); err != nil {
		t.Fatalf("valid update rejected: %v", err)
	}
}

func TestAppConfigWebhookRejectsUpdateIntroducingCycle(t *testing.T) {
	ctx := context.Background()
	ns := apitest.Namespace(t, k8s)
	c := newAppConfig(ns, map[string]string{"A": "${B}", "B": "b"})
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Data["B"] = "${A}"
	expectInvalid(t, k8s.Update(ctx, c), `spec.data: Invalid value: key "A", position 1: reference cycle A -> B -> A`)

	var stored v1alpha1.AppConfig
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Data["B"] != "b" {
		t.Errorf("the rejected update was stored: %v", stored.Spec.Data)
	}
}
