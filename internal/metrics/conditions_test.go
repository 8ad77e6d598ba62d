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

package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestConditionsCollector exports one series per True problem condition,
// with the time it turned True, and none for healthy objects or for
// conditions that are not problems.
func TestConditionsCollector(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(time.Unix(1_800_000_000, 0))
	cond := func(typ, status, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, LastTransitionTime: since}
	}
	objs := []v1alpha1.Conditioned{
		&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "a"}, Status: v1alpha1.WebAppStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReady, "False", "CrashLooping"), cond(v1alpha1.ConditionDegraded, "True", "CrashLooping"),
		}}},
		&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "fine", Namespace: "a"}, Status: v1alpha1.WebAppStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReady, "True", "Available"), cond(v1alpha1.ConditionDegraded, "False", "Available"),
		}}},
		&v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "b"}, Status: v1alpha1.BackupStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionBackupStale, "True", v1alpha1.ReasonStale), cond(v1alpha1.ConditionLastBackupSucceeded, "False", "Failed"),
		}}},
		&v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "b"}, Status: v1alpha1.RestoreStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionDegraded, "True", v1alpha1.ReasonRestoreFailed), cond(v1alpha1.ConditionStalled, "True", v1alpha1.ReasonRestoreFailed),
		}}},
	}
	builder := fake.NewClientBuilder().WithScheme(scheme)
	for _, o := range objs {
		builder = builder.WithObjects(o)
	}
	// No informer: every scrape lists.
	c := newConditionsCollector(&fakeCache{Reader: builder.Build(), informers: &informertest.FakeInformers{Error: errors.New("no informers")}}, elected(), testDesc)
	want := `# HELP steward_condition_true_since_timestamp_seconds h
# TYPE steward_condition_true_since_timestamp_seconds gauge
steward_condition_true_since_timestamp_seconds{condition="BackupStale",kind="Backup",name="nightly",namespace="b",reason="NoRecentSuccess"} 1.8e+09
steward_condition_true_since_timestamp_seconds{condition="Degraded",kind="Restore",name="back",namespace="b",reason="RestoreFailed"} 1.8e+09
steward_condition_true_since_timestamp_seconds{condition="Degraded",kind="WebApp",name="shop",namespace="a",reason="CrashLooping"} 1.8e+09
steward_condition_true_since_timestamp_seconds{condition="Stalled",kind="Restore",name="back",namespace="b",reason="RestoreFailed"} 1.8e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestCertificateNotAfter reads the expiry of a PEM certificate and fails
// on a file without one.
func TestCertificateNotAfter(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := time.Unix(1_900_000_000, 0)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "steward-webhook"},
		NotBefore: time.Unix(1_700_000_000, 0), NotAfter: notAfter,
	}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "steward-webhook"}}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile := filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := CertificateNotAfter(certFile)
	if err != nil || got != notAfter.Unix() {
		t.Errorf("CertificateNotAfter = %d, %v; want %d", got, err, notAfter.Unix())
	}
	if err := os.WriteFile(filepath.Join(dir, "bad"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CertificateNotAfter(filepath.Join(dir, "bad")); err == nil {
		t.Error("a file without a certificate was read")
	}
}
