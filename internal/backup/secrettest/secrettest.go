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

// Package secrettest plants distinctive credentials for tests that prove
// no credential leaves a backup run: random values of every kind a
// credentials Secret or a database login holds, and stores that answer
// every request with an error quoting the credentials the request carried,
// as some S3-compatible stores and proxies do. A test provokes errors with
// them, then looks for every planted value in what the run and the operator
// wrote. It is a normal package so that tests of several packages can
// import it; no production code uses it.
package secrettest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/steward-dev/steward/internal/backup/store"
)

// Planted are random credentials of every kind, each with a marker that
// makes it easy to tell in a failure message.
type Planted struct {
	S3AccessKeyID, S3SecretAccessKey, S3SessionToken string
	// GCSPrivateKey is a PEM RSA key; GCSPrivateKeyID names it.
	GCSPrivateKey, GCSPrivateKeyID string
	// AzureKey is an account key; AzureSASSignature is the signature of
	// AzureSAS, a SAS token; AzureConnectionKey is the account key in
	// AzureConnectionString.
	AzureKey, AzureSAS, AzureSASSignature     string
	AzureConnectionString, AzureConnectionKey string
	// DBPassword is a database password.
	DBPassword string
	// EndpointUser and EndpointPassword are user information in an
	// endpoint URL: http://USER:PASSWORD@host.
	EndpointUser, EndpointPassword string
}

// rsaKey is generated once: a key takes a while.
var rsaKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// New plants a fresh set of credentials.
func New(t testing.TB) Planted {
	t.Helper()
	key, err := rsaKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	random := func(marker string, n int) string {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return marker + hex.EncodeToString(b)
	}
	b64 := func(n int) string {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	p := Planted{
		S3AccessKeyID:      strings.ToUpper(random("AKIAPLANTED", 6)),
		S3SecretAccessKey:  random("s3secret/", 12) + "+x=",
		S3SessionToken:     random("s3token", 24) + "/+=",
		GCSPrivateKey:      string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		GCSPrivateKeyID:    random("gcskeyid", 16),
		AzureKey:           b64(64),
		AzureSASSignature:  b64(32),
		AzureConnectionKey: b64(64),
		DBPassword:         random("dbpass'\"", 10),
		EndpointUser:       random("epuser", 8),
		EndpointPassword:   random("eppass", 8),
	}
	p.AzureSAS = "?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2099-01-01T00%3A00%3A00Z&spr=https%2Chttp&sig=" + url.QueryEscape(p.AzureSASSignature)
	p.AzureConnectionString = "DefaultEndpointsProtocol=https;AccountName=plantedaccount;AccountKey=" + p.AzureConnectionKey + ";EndpointSuffix=core.windows.net"
	return p
}

// Values are every planted value, and the parts a message might quote: the
// lines of the private key's PEM body.
func (p Planted) Values() []string {
	v := []string{
		p.S3AccessKeyID, p.S3SecretAccessKey, p.S3SessionToken, p.GCSPrivateKey, p.GCSPrivateKeyID,
		p.AzureKey, p.AzureSAS, p.AzureSASSignature, p.AzureConnectionString, p.AzureConnectionKey,
		p.DBPassword, p.EndpointUser, p.EndpointPassword,
	}
	for line := range strings.SplitSeq(p.GCSPrivateKey, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			v = append(v, line)
		}
	}
	return v
}

// Find returns the planted values that text holds, each named by its
// start.
func (p Planted) Find(text string) []string {
	var found []string
	for _, v := range p.Values() {
		if strings.Contains(text, v) || strings.Contains(text, url.QueryEscape(v)) {
			found = append(found, fmt.Sprintf("%.16s…", v))
		}
	}
	return found
}

// S3Credentials is the data of an s3 credentials Secret with the planted
// key, secret and session token.
func (p Planted) S3Credentials() map[string][]byte {
	return map[string][]byte{
		store.AWSAccessKeyID:     []byte(p.S3AccessKeyID),
		store.AWSSecretAccessKey: []byte(p.S3SecretAccessKey),
		store.AWSSessionToken:    []byte(p.S3SessionToken),
	}
}

// GCSCredentials is the data of a gcs credentials Secret: a service account
// key with the planted private key, whose tokens come from tokenURI.
func (p Planted) GCSCredentials(tokenURI string) map[string][]byte {
	data, err := json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": "planted-project",
		"private_key_id": p.GCSPrivateKeyID, "private_key": p.GCSPrivateKey,
		"client_email": "planted@planted-project.iam.gserviceaccount.com", "client_id": "1234567890",
		"token_uri": tokenURI,
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return map[string][]byte{store.GCSServiceAccountKey: data}
}

// AzureKeyCredentials is the data of an azure credentials Secret with the
// planted shared key, and a connection string Steward does not read.
func (p Planted) AzureKeyCredentials(account string) map[string][]byte {
	return map[string][]byte{
		store.AzureStorageAccount:          []byte(account),
		store.AzureStorageKey:              []byte(p.AzureKey),
		store.AzureStorageConnectionString: []byte(p.AzureConnectionString),
	}
}

// AzureSASCredentials is the data of an azure credentials Secret with the
// planted SAS token.
func (p Planted) AzureSASCredentials(account string) map[string][]byte {
	return map[string][]byte{
		store.AzureStorageAccount:  []byte(account),
		store.AzureStorageSASToken: []byte(p.AzureSAS),
	}
}

// WithUser returns endpoint with the planted user information.
func (p Planted) WithUser(endpoint string) string {
	scheme, rest, _ := strings.Cut(endpoint, "://")
	return scheme + "://" + p.EndpointUser + ":" + p.EndpointPassword + "@" + rest
}

// ClosedEndpoint is an http:// URL on a loopback port nothing listens on.
func ClosedEndpoint(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

// EchoS3 starts an S3 endpoint that refuses every request with a 403 whose
// message quotes the request's URL, Authorization header (with the access
// key id) and session token, and returns its URL.
func EchoS3(t testing.TB) string {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>%s</Message></Error>`,
			html.EscapeString(fmt.Sprintf("refused %s %s signed %q with token %q", r.Method, r.URL, r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token"))))
	}))
}

// EchoAzure starts an Azure blob endpoint that refuses every request with
// a 403 whose message quotes the request's URL, SAS included, and returns
// its URL for account.
func EchoAzure(t testing.TB, account string) string {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("x-ms-error-code", "AuthenticationFailed")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>%s</Message></Error>`,
			html.EscapeString(fmt.Sprintf("Server failed to authenticate %s %s (authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))))
	})) + "/" + account
}

// TokenServer starts an OAuth token endpoint that refuses every grant with
// an error quoting the request's body (the signed assertion), and returns
// its URL.
func TokenServer(t testing.TB) string {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"error":             "invalid_grant",
			"error_description": "Invalid JWT Signature: " + r.PostForm.Get("assertion") + " key " + assertionKeyID(r.PostForm.Get("assertion")),
		})
	}))
}

// assertionKeyID is the kid of a JWT's header.
func assertionKeyID(jwt string) string {
	header, _, _ := strings.Cut(jwt, ".")
	data, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return ""
	}
	var h struct {
		KeyID string `json:"kid"`
	}
	_ = json.Unmarshal(data, &h)
	return h.KeyID
}

func serve(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	srv.Config.ErrorLog = nil
	t.Cleanup(srv.Close)
	return srv.URL
}
