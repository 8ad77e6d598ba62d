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

package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certValidity is how long every generated certificate is valid.
const certValidity = 365 * 24 * time.Hour

// keyPair is a PEM-encoded certificate and its private key.
type keyPair struct {
	cert, key []byte
}

// pki is the cluster's certificate authority and the credentials it issued.
// The CA, the API server's serving pair and the service-account key pair are
// also written to files under dir, for the components' flags.
type pki struct {
	dir string

	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte

	// admin is a client pair in the system:masters group.
	admin keyPair
	// controllerManager and scheduler are client pairs for the users the
	// default RBAC policy grants those components' permissions to.
	controllerManager keyPair
	scheduler         keyPair
}

// Paths of the files newPKI writes, relative to its directory.
const (
	caCertFile        = "ca.crt"
	servingCertFile   = "apiserver.crt"
	servingKeyFile    = "apiserver.key"
	serviceAccountKey = "sa.key"
	serviceAccountPub = "sa.pub"
)

// newPKI generates a CA, a serving certificate for the API server (for
// 127.0.0.1, the kubernetes Service's IP and serverIPs), client certificates
// for the admin, kube-controller-manager and kube-scheduler, and a
// service-account signing key pair, all ECDSA P-256, writing the files the
// components read into dir.
func newPKI(dir string, serviceIP net.IP, serverIPs ...net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the PKI directory: %w", err)
	}
	p := &pki{dir: dir}
	if err := p.initCA(); err != nil {
		return nil, fmt.Errorf("generating the CA: %w", err)
	}

	serving, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{
			"localhost",
			"kubernetes",
			"kubernetes.default",
			"kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1), serviceIP}, serverIPs...),
	})
	if err != nil {
		return nil, fmt.Errorf("issuing the API server's serving certificate: %w", err)
	}

	clients := []struct {
		pair    *keyPair
		subject pkix.Name
	}{
		{&p.admin, pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}}},
		{&p.controllerManager, pkix.Name{CommonName: "system:kube-controller-manager"}},
		{&p.scheduler, pkix.Name{CommonName: "system:kube-scheduler"}},
	}
	for _, client := range clients {
		if *client.pair, err = p.client(client.subject); err != nil {
			return nil, err
		}
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service-account key: %w", err)
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account public key: %w", err)
	}

	files := map[string][]byte{
		caCertFile:        p.caPEM,
		servingCertFile:   serving.cert,
		servingKeyFile:    serving.key,
		serviceAccountKey: saKeyPEM,
		serviceAccountPub: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
	}
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return p, nil
}

// client issues a client certificate for subject: its common name is the
// user, its organizations the groups.
func (p *pki) client(subject pkix.Name) (keyPair, error) {
	pair, err := p.issue(&x509.Certificate{
		Subject:     subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return keyPair{}, fmt.Errorf("issuing the client certificate of %s: %w", subject.CommonName, err)
	}
	return pair, nil
}

// path returns the path of one of the PKI files.
func (p *pki) path(name string) string {
	return filepath.Join(p.dir, name)
}

// initCA generates the self-signed certificate authority.
func (p *pki) initCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "steward-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return fmt.Errorf("signing the certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing the certificate: %w", err)
	}
	p.caCert, p.caKey = cert, key
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

// issue signs a certificate for a new key with the CA. template supplies the
// subject, names and extended key usages; issue fills in the rest.
func (p *pki) issue(template *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating the key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return keyPair{}, err
	}
	now := time.Now()
	template.SerialNumber = serial
	template.NotBefore = now.Add(-time.Hour)
	template.NotAfter = now.Add(certValidity)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, template, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing the certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  keyPEM,
	}, nil
}

// encodeKey PEM-encodes an ECDSA private key in SEC 1 form.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// serialNumber returns a random 128-bit certificate serial number.
func serialNumber() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}

// writeKubeconfig writes a kubeconfig for server that authenticates with the
// client pair and trusts caPEM, all embedded.
func writeKubeconfig(path, server, user string, caPEM []byte, client keyPair) error {
	const name = "steward-local"
	config := clientcmdapi.NewConfig()
	config.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: client.cert,
		ClientKeyData:         client.key,
	}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	config.CurrentContext = name
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
