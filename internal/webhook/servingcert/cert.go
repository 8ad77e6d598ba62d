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

// Package servingcert provisions the webhook server's TLS certificate when
// nothing else does (no cert-manager, no mounted Secret): a self-signed CA
// and a serving certificate issued by it, shared by every replica through a
// Secret, and the CA written into the webhook configuration's caBundle so
// that the API server trusts the replicas.
package servingcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

const (
	// CAValidity is how long a generated CA is valid. It outlives many
	// serving certificates, so that renewing one changes no caBundle and
	// replicas still serving the old certificate stay trusted.
	CAValidity = 10 * 365 * 24 * time.Hour
	// CertValidity is how long a generated serving certificate is valid.
	CertValidity = 365 * 24 * time.Hour
	// RenewBefore is how long before expiry a certificate is replaced, on
	// the operator's next start.
	RenewBefore = 30 * 24 * time.Hour
)

// Bundle is a CA and a serving certificate it issued, PEM-encoded.
type Bundle struct {
	// CACert is the CA certificate, for the caBundle.
	CACert []byte
	// CAKey is the CA's private key; empty when the CA cannot issue more.
	CAKey []byte
	// Cert and Key are the serving certificate and its private key.
	Cert, Key []byte
}

// NewCA generates a self-signed ECDSA P-256 CA valid from now for CAValidity.
func NewCA(now time.Time) (Bundle, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "steward-webhook-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Bundle{}, fmt.Errorf("creating the CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Bundle{}, err
	}
	return Bundle{CACert: encodeCert(der), CAKey: keyPEM}, nil
}

// Issue returns b with a new ECDSA P-256 serving certificate from b's CA for
// dnsNames and ips, valid from now for CertValidity (at most until the CA
// expires).
func (b Bundle) Issue(dnsNames []string, ips []net.IP, now time.Time) (Bundle, error) {
	ca, err := parseCert(b.CACert)
	if err != nil {
		return Bundle{}, fmt.Errorf("reading the CA certificate: %w", err)
	}
	caKey, err := parseKey(b.CAKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("reading the CA key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Bundle{}, err
	}
	cn := "localhost"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	notAfter := now.Add(CertValidity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	if !tmpl.NotAfter.After(now) {
		return Bundle{}, errors.New("the CA has expired")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Bundle{}, fmt.Errorf("creating the serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Bundle{}, err
	}
	b.Cert, b.Key = encodeCert(der), keyPEM
	return b, nil
}

// Generate returns a new CA and a serving certificate from it.
func Generate(dnsNames []string, ips []net.IP, now time.Time) (Bundle, error) {
	ca, err := NewCA(now)
	if err != nil {
		return Bundle{}, err
	}
	return ca.Issue(dnsNames, ips, now)
}

// Verify checks that the serving certificate matches its key, chains to the
// CA, and is valid for every DNS name and IP at every time from now until
// RenewBefore from now.
func (b Bundle) Verify(dnsNames []string, ips []net.IP, now time.Time) error {
	pair, err := parseCert(b.Cert)
	if err != nil {
		return fmt.Errorf("reading the serving certificate: %w", err)
	}
	key, err := parseKey(b.Key)
	if err != nil {
		return fmt.Errorf("reading the serving key: %w", err)
	}
	if !key.PublicKey.Equal(pair.PublicKey) {
		return errors.New("the serving key does not match the certificate")
	}
	ca, err := parseCert(b.CACert)
	if err != nil {
		return fmt.Errorf("reading the CA certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, at := range []time.Time{now, now.Add(RenewBefore)} {
		opts := x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := pair.Verify(opts); err != nil {
			return err
		}
	}
	for _, name := range dnsNames {
		if err := pair.VerifyHostname(name); err != nil {
			return err
		}
	}
	for _, ip := range ips {
		if err := pair.VerifyHostname(ip.String()); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(bytes.TrimSpace(data))
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, errors.New("no PEM EC private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}
