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

package servingcert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

var (
	names = []string{"steward-webhook.steward-system.svc", "steward-webhook.steward-system.svc.cluster.local", "localhost"}
	ips   = []net.IP{net.IPv4(127, 0, 0, 1)}
	now   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func TestGenerateVerifiesForTheNames(t *testing.T) {
	b, err := Generate(names, ips, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(names, ips, now); err != nil {
		t.Fatalf("a fresh bundle does not verify: %v", err)
	}
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		t.Fatalf("the serving pair does not load as a TLS certificate: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.CACert) {
		t.Fatal("the CA does not parse")
	}
	for _, host := range append([]string{"127.0.0.1"}, names...) {
		_, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now.Add(time.Minute)})
		if err != nil {
			t.Errorf("not valid for %s: %v", host, err)
		}
	}
	leaf := pair.Leaf
	if got := leaf.NotAfter.Sub(now); got != CertValidity {
		t.Errorf("serving certificate valid for %s, want %s", got, CertValidity)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key algorithm %s, want ECDSA", leaf.PublicKeyAlgorithm)
	}
	if leaf.IsCA {
		t.Error("the serving certificate is a CA")
	}
}

func TestVerifyRejects(t *testing.T) {
	b, err := Generate(names, ips, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Generate(names, ips, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		b     Bundle
		names []string
		at    time.Time
		want  string
	}{
		{"other name", b, []string{"other.steward-system.svc"}, now, "not other.steward-system.svc"},
		{"expiring within RenewBefore", b, names, now.Add(CertValidity - RenewBefore + time.Hour), "expired"},
		{"other CA", Bundle{CACert: other.CACert, Cert: b.Cert, Key: b.Key}, names, now, "unknown authority"},
		{"other key", Bundle{CACert: b.CACert, Cert: b.Cert, Key: other.Key}, names, now, "does not match"},
		{"empty", Bundle{}, names, now, "no PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.b.Verify(tc.names, ips, tc.at)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIssueKeepsTheCA(t *testing.T) {
	b, err := Generate(names, ips, now)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(CertValidity - RenewBefore/2)
	renewed, err := b.Issue(names, ips, later)
	if err != nil {
		t.Fatal(err)
	}
	if string(renewed.CACert) != string(b.CACert) {
		t.Error("renewal changed the CA")
	}
	if string(renewed.Cert) == string(b.Cert) {
		t.Error("renewal kept the certificate")
	}
	if err := renewed.Verify(names, ips, later); err != nil {
		t.Errorf("renewed bundle does not verify: %v", err)
	}
}
