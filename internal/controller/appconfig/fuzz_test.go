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
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
)

var (
	// applicationName is the schema's rule on spec.application.
	applicationName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// keyName is the schema's rule on a secretData key.
	keyName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// fuzzAppConfig is an AppConfig the schema admits, or nil: of application
// in the environment chosen, with data and overrides from "KEY=VALUE" and
// "ENV/KEY=VALUE" lines, and the secret values of "KEY=VALUE" lines of
// secrets, which must not be data keys.
func fuzzAppConfig(application, text, secrets string, env uint8) (*v1alpha1.AppConfig, map[string][]byte) {
	if len(application) > 40 || !applicationName.MatchString(application) {
		return nil, nil
	}
	ac := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-ns", Name: "shop", UID: "uid-appconfig", Generation: 1},
		Spec: v1alpha1.AppConfigSpec{Application: application, Environment: appconfig.Environments[env%3],
			Data: map[string]string{}, Overrides: map[string]map[string]string{}},
	}
	for _, line := range strings.Split(text, "\n") {
		kv, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.ReplaceAll(value, `\n`, "\n")
		if e, key, ok := strings.Cut(kv, "/"); ok {
			if ac.Spec.Overrides[e] == nil {
				ac.Spec.Overrides[e] = map[string]string{}
			}
			ac.Spec.Overrides[e][key] = value
			continue
		}
		ac.Spec.Data[kv] = value
	}
	values := map[string][]byte{}
	for _, line := range strings.Split(secrets, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if _, taken := ac.Spec.Data[key]; !ok || taken || !keyName.MatchString(key) {
			continue
		}
		if ac.Spec.SecretData == nil {
			ac.Spec.SecretData = map[string]v1alpha1.SecretValueRef{}
		}
		ac.Spec.SecretData[key] = v1alpha1.SecretValueRef{SecretName: "secrets", Key: key}
		values[key] = []byte(value)
	}
	for _, o := range ac.Spec.Overrides {
		for key := range values {
			delete(o, key)
		}
	}
	return ac, values
}

// FuzzPlan checks the first reconcile of any AppConfig the schema admits:
// the same plan every time; an invalid spec is a problem and renders
// nothing; a valid one renders a revision, its immutable ConfigMap and,
// with secret values, Secret, named within the API's limits and labelled
// validly, holding the rendered values and the secret keys' tokens, which
// becomes current and is what "<application>-config" holds.
func FuzzPlan(f *testing.F) {
	f.Add("shop", "LOG_LEVEL=debug\nDB_HOST=orders.${namespace}.svc\nDB_URL=postgresql://${DB_HOST}:5432/app\n"+
		"PUBLIC_URL=https://${application}.example.com\nprod/LOG_LEVEL=warn\nstaging/LOG_LEVEL=info",
		"PAYMENTS_TOKEN=sample-token-not-a-secret", uint8(2))
	f.Add("shop", "A=${B}\nB=${A}", "", uint8(0))
	f.Add("a-forty-character-application-name-xxxxx", "K=v", "S=s\nT=\x00\xff", uint8(1))
	f.Add("x", "A=${PAYMENTS_TOKEN}", "PAYMENTS_TOKEN=t", uint8(0))
	f.Fuzz(func(t *testing.T, application, text, secrets string, env uint8) {
		ac, values := fuzzAppConfig(application, text, secrets, env)
		if ac == nil {
			t.Skip("refused by the schema")
		}
		obs := observed{secrets: values, hashKey: []byte("0123456789abcdef0123456789abcdef"), newHashKey: len(values) > 0}
		p, err := computePlan(ac, obs, t0, resync)
		if err != nil {
			t.Fatalf("computePlan: %v", err)
		}
		// Conditions take the clock's time when they change, not now's.
		again, _ := computePlan(ac, obs, t0, resync)
		for _, st := range []*v1alpha1.AppConfigStatus{&p.status, &again.status} {
			for i := range st.Conditions {
				st.Conditions[i].LastTransitionTime = metav1.Time{}
			}
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatal("the plan differs from one computation to the next")
		}
		spec := appconfig.Spec{Data: ac.Spec.Data, Overrides: ac.Spec.Overrides}
		vars := appconfig.Vars{Namespace: ac.Namespace, Application: ac.Spec.Application}
		rendered, renderErr := appconfig.Render(spec, ac.Spec.Environment, vars)
		if renderErr != nil {
			if p.problem == nil || p.problem.Reason != v1alpha1.ReasonInvalidSpec || p.revision != nil || p.configMap != nil {
				t.Fatalf("an invalid spec (%v) planned problem %v, revision %v", renderErr, p.problem, p.revision)
			}
			return
		}
		if p.problem != nil {
			t.Fatalf("a valid spec planned the problem %+v", p.problem)
		}
		checkRevision(t, ac, p, rendered, values)
	})
}

func checkRevision(t *testing.T, ac *v1alpha1.AppConfig, p plan, rendered map[string]string, secrets map[string][]byte) {
	t.Helper()
	cm := p.revision
	name := p.status.LatestRevision
	if len(name) != 10 || p.status.CurrentRevision != name || len(p.status.Revisions) != 1 ||
		p.status.Revisions[0].Keys != int32(len(rendered)+len(secrets)) {
		t.Fatalf("status %+v", p.status)
	}
	checkMeta(t, ac, *cm.Name, cm.Labels, cm.OwnerReferences)
	if *cm.Name != ac.RevisionName(name) || cm.Labels[v1alpha1.LabelRevision] != name || !*cm.Immutable {
		t.Fatalf("revision ConfigMap %s labelled %v", *cm.Name, cm.Labels)
	}
	if !maps.Equal(cm.Data, rendered) {
		t.Fatalf("revision holds %q, want the rendered %q", cm.Data, rendered)
	}
	size := 0
	for k, v := range cm.Data {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			t.Fatalf("ConfigMap key %q: %v", k, errs)
		}
		size += len(k) + len(v)
	}
	if size > appconfig.MaxRenderedBytes {
		t.Fatalf("%d bytes rendered, more than %d", size, appconfig.MaxRenderedBytes)
	}
	tokens := map[string]string{}
	if raw := cm.Annotations[v1alpha1.AnnotationSecretTokens]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &tokens); err != nil {
			t.Fatalf("tokens %q: %v", raw, err)
		}
	}
	if len(tokens) != len(secrets) || (p.revisionSecret != nil) != (len(secrets) > 0) || (p.hashKey != nil) != (len(secrets) > 0) {
		t.Fatalf("%d tokens, revision Secret %v, hash key %v for %d secret values", len(tokens), p.revisionSecret, p.hashKey, len(secrets))
	}
	for k := range secrets {
		if _, ok := tokens[k]; !ok {
			t.Fatalf("no token for the secret key %s", k)
		}
	}
	if s := p.revisionSecret; s != nil {
		checkMeta(t, ac, *s.Name, s.Labels, s.OwnerReferences)
		if *s.Name != *cm.Name || !*s.Immutable || len(s.Data) != len(secrets) {
			t.Fatalf("revision Secret %s of %d keys", *s.Name, len(s.Data))
		}
	}
	if c := p.configMap; c == nil || *c.Name != ac.ConfigName() || !maps.Equal(c.Data, rendered) {
		t.Fatalf("%s holds %+v, want the rendered values", ac.ConfigName(), c)
	} else {
		checkMeta(t, ac, *c.Name, c.Labels, c.OwnerReferences)
	}
	if (p.configSecret != nil) != (len(secrets) > 0) {
		t.Fatalf("config Secret %v for %d secret values", p.configSecret, len(secrets))
	}
}

// checkMeta checks a rendered object's name, labels and controller.
func checkMeta(t *testing.T, ac *v1alpha1.AppConfig, name string, labels map[string]string, refs []metav1ac.OwnerReferenceApplyConfiguration) {
	t.Helper()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Fatalf("object %q: %v", name, errs)
	}
	for k, v := range labels {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			t.Fatalf("%s: label %s=%q", name, k, v)
		}
	}
	if labels[v1alpha1.LabelAppConfig] != ac.Name {
		t.Fatalf("%s: labels %v", name, labels)
	}
	if len(refs) != 1 || *refs[0].UID != ac.UID || !*refs[0].Controller || *refs[0].Kind != "AppConfig" {
		t.Fatalf("%s: owner references %s", name, fmt.Sprint(refs))
	}
}
