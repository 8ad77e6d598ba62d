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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/apply"
)

// newAC is an AppConfig for the pure tests, changed by mutate.
func newAC(mutate ...func(*v1alpha1.AppConfig)) *v1alpha1.AppConfig {
	ac := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-cfg", Namespace: "prod", UID: "uid-1", Generation: 1},
		Spec:       v1alpha1.AppConfigSpec{Application: "shop", Environment: "prod", Data: map[string]string{"A": "1"}},
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}

func TestLabels(t *testing.T) {
	ac := newAC()
	tests := []struct {
		name string
		got  map[string]string
		want map[string]string
	}{
		{"plain", Labels(ac), map[string]string{v1alpha1.LabelAppConfig: "shop-cfg", "app.kubernetes.io/managed-by": "steward"}},
		{"revision", RevisionLabels(ac, "abc"), map[string]string{v1alpha1.LabelAppConfig: "shop-cfg", v1alpha1.LabelRevision: "abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.want {
				if tt.got[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, tt.got[k], v, tt.got)
				}
			}
		})
	}
	if _, ok := Labels(ac)[v1alpha1.LabelRevision]; ok {
		t.Error("Labels carries a revision")
	}
}

func TestTokens(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	base := Tokens(key, map[string][]byte{"PASSWORD": []byte("s3cret")})
	tests := []struct {
		name     string
		key      []byte
		secrets  map[string][]byte
		wantSame bool
	}{
		{"same key and value", key, map[string][]byte{"PASSWORD": []byte("s3cret")}, true},
		{"other value", key, map[string][]byte{"PASSWORD": []byte("s3cret2")}, false},
		{"other hash key", []byte("another key"), map[string][]byte{"PASSWORD": []byte("s3cret")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokens(tt.key, tt.secrets)
			if len(got["PASSWORD"]) != 32 {
				t.Fatalf("token %q, want 32 hex digits", got["PASSWORD"])
			}
			if same := got["PASSWORD"] == base["PASSWORD"]; same != tt.wantSame {
				t.Errorf("token %s against %s: same = %v, want %v", got["PASSWORD"], base["PASSWORD"], same, tt.wantSame)
			}
			if got["PASSWORD"] == "s3cret" {
				t.Error("the token is the value")
			}
		})
	}
	// The key is part of the token: the same value under two keys differs.
	two := Tokens(key, map[string][]byte{"A": []byte("v"), "B": []byte("v")})
	if two["A"] == two["B"] {
		t.Error("equal values of two keys got equal tokens")
	}
	if got := Tokens(key, nil); got == nil || len(got) != 0 {
		t.Errorf("no secrets gave %v, want an empty map", got)
	}
}

func TestRevisionNameOf(t *testing.T) {
	a := RevisionNameOf(appconfig.NewRevision(map[string]string{"A": "1"}, nil))
	tests := []struct {
		name     string
		rev      appconfig.Revision
		wantSame bool
	}{
		{"same values", appconfig.NewRevision(map[string]string{"A": "1"}, map[string]string{}), true},
		{"other value", appconfig.NewRevision(map[string]string{"A": "2"}, nil), false},
		{"one more key", appconfig.NewRevision(map[string]string{"A": "1", "B": "1"}, nil), false},
		{"a secret token", appconfig.NewRevision(map[string]string{"A": "1"}, map[string]string{"S": "t"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RevisionNameOf(tt.rev)
			if len(got) != 10 {
				t.Fatalf("name %q, want 10 characters", got)
			}
			if (got == a) != tt.wantSame {
				t.Errorf("name %s against %s, want same = %v", got, a, tt.wantSame)
			}
		})
	}
}

func TestRevisionConfigMap(t *testing.T) {
	ac := newAC()
	tests := []struct {
		name       string
		tokens     map[string]string
		wantTokens bool
	}{
		{"values only", nil, false},
		{"empty tokens", map[string]string{}, false},
		{"secret keys", map[string]string{"PASSWORD": "tok"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := RevisionConfigMap(ac, "abc", map[string]string{"A": "1"}, tt.tokens)
			if *cm.Name != "shop-config-abc" || *cm.Namespace != "prod" {
				t.Errorf("name %s/%s, want prod/shop-config-abc", *cm.Namespace, *cm.Name)
			}
			if !*cm.Immutable || cm.Data["A"] != "1" || len(cm.Data) != 1 {
				t.Errorf("immutable %v, data %v", *cm.Immutable, cm.Data)
			}
			if cm.Labels[v1alpha1.LabelRevision] != "abc" || cm.Labels[v1alpha1.LabelAppConfig] != "shop-cfg" {
				t.Errorf("labels %v", cm.Labels)
			}
			raw, ok := cm.Annotations[v1alpha1.AnnotationSecretTokens]
			if ok != tt.wantTokens {
				t.Fatalf("tokens annotation present = %v, want %v", ok, tt.wantTokens)
			}
			if !ok {
				return
			}
			var got map[string]string
			if err := json.Unmarshal([]byte(raw), &got); err != nil || !maps.Equal(got, tt.tokens) {
				t.Errorf("tokens annotation %s decodes to %v (%v), want %v", raw, got, err, tt.tokens)
			}
			rev := appconfig.ReadRevision(&corev1.ConfigMap{Data: cm.Data, ObjectMeta: metav1.ObjectMeta{Annotations: cm.Annotations}})
			if !rev.IsSecret("PASSWORD") || rev.IsSecret("A") {
				t.Errorf("read back, secret keys are %v", rev.SecretKeys)
			}
		})
	}
}

func TestRenderedObjects(t *testing.T) {
	ac := newAC()
	data := map[string][]byte{"PASSWORD": []byte("s3cret")}
	values := map[string]string{"A": "1"}
	// Through their JSON form, as the API server gets them.
	revCM := apply.Convert[corev1.ConfigMap](RevisionConfigMap(ac, "abc", values, nil))
	curCM := apply.Convert[corev1.ConfigMap](ConfigMap(ac, "abc", values))
	revS := apply.Convert[corev1.Secret](RevisionSecret(ac, "abc", data))
	curS := apply.Convert[corev1.Secret](ConfigSecret(ac, "abc", data))
	tests := []struct {
		name          string
		obj           client.Object
		immutable     *bool
		data          map[string]string
		wantName      string
		wantImmutable bool
	}{
		{"revision ConfigMap", revCM, revCM.Immutable, revCM.Data, "shop-config-abc", true},
		{"current ConfigMap", curCM, curCM.Immutable, curCM.Data, "shop-config", false},
		{"revision Secret", revS, revS.Immutable, stringData(revS.Data), "shop-config-abc", true},
		{"current Secret", curS, curS.Immutable, stringData(curS.Data), "shop-config", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.obj.GetName() != tt.wantName || tt.obj.GetNamespace() != "prod" {
				t.Errorf("name %s/%s, want prod/%s", tt.obj.GetNamespace(), tt.obj.GetName(), tt.wantName)
			}
			if immutable := tt.immutable != nil && *tt.immutable; immutable != tt.wantImmutable {
				t.Errorf("immutable %v, want %v", immutable, tt.wantImmutable)
			}
			l := tt.obj.GetLabels()
			if l[v1alpha1.LabelRevision] != "abc" || l[v1alpha1.LabelAppConfig] != "shop-cfg" || l["app.kubernetes.io/managed-by"] != "steward" {
				t.Errorf("labels %v", l)
			}
			if !metav1.IsControlledBy(tt.obj, ac) {
				t.Errorf("owner references %+v, want the AppConfig as controller", tt.obj.GetOwnerReferences())
			}
			if len(tt.data) != 1 || (tt.data["A"] != "1" && tt.data["PASSWORD"] != "s3cret") {
				t.Errorf("data %v", tt.data)
			}
			// A revision's own objects are pruned unless kept; the current ones never.
			if got := pruned(ac, tt.obj, map[string]bool{}); got != tt.wantImmutable {
				t.Errorf("pruned when its revision is not kept: %v, want %v", got, tt.wantImmutable)
			}
			if pruned(ac, tt.obj, map[string]bool{"abc": true}) {
				t.Error("pruned when its revision is kept")
			}
		})
	}
	if revS.Type != corev1.SecretTypeOpaque || curS.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret types %s and %s, want Opaque", revS.Type, curS.Type)
	}
}

func stringData(d map[string][]byte) map[string]string {
	out := make(map[string]string, len(d))
	for k, v := range d {
		out[k] = string(v)
	}
	return out
}

func TestHashKeySecret(t *testing.T) {
	ac := newAC()
	key := []byte("0123456789abcdef0123456789abcdef")
	s := HashKeySecret(ac, key)
	tests := []struct {
		name string
		ok   bool
	}{
		{"named after the application", s.Name == "shop-config-hash-key" && s.Namespace == "prod"},
		{"holds the key", string(s.Data[hashKeyField]) == string(key) && len(s.Data) == 1},
		{"immutable and opaque", s.Immutable != nil && *s.Immutable && s.Type == corev1.SecretTypeOpaque},
		{"controlled by the AppConfig", metav1.IsControlledBy(s, ac)},
		{"labelled as the AppConfig's, without a revision", s.Labels[v1alpha1.LabelAppConfig] == "shop-cfg" && s.Labels[v1alpha1.LabelRevision] == ""},
		{"never pruned", !pruned(ac, s, map[string]bool{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("Secret %+v", s)
			}
		})
	}
}

func TestRestartPatch(t *testing.T) {
	tests := []struct {
		name, appConfig, hash string
	}{
		{"plain", "shop", "0123abcd"},
		{"quotes stay JSON", "shop", `a"b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := RestartPatch(newAC(func(ac *v1alpha1.AppConfig) { ac.Name = tt.appConfig }), tt.hash)
			var patch struct {
				Spec struct {
					Template struct {
						Metadata struct {
							Annotations map[string]string `json:"annotations"`
						} `json:"metadata"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(raw, &patch); err != nil {
				t.Fatalf("patch %s: %v", raw, err)
			}
			got := patch.Spec.Template.Metadata.Annotations
			if len(got) != 1 || got[v1alpha1.AppConfigAnnotation(tt.appConfig)] != tt.hash {
				t.Errorf("annotations %v, want %s: %s", got, v1alpha1.AppConfigAnnotation(tt.appConfig), tt.hash)
			}
		})
	}
}
