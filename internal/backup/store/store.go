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

// Package store opens the object stores that backups are streamed to, with
// one library, gocloud.dev/blob, for every kind of store.
//
// Open takes a Destination and the data of a Kubernetes Secret, and returns a
// *blob.Bucket scoped to the destination's prefix. Credentials come only from
// that Secret: the process environment, shared configuration files
// (~/.aws, gcloud's application default credentials) and instance metadata
// services are never consulted. The Secret keys per type are:
//
//   - s3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and optionally
//     AWS_SESSION_TOKEN. When Endpoint is set (an S3-compatible store or an
//     emulator), requests use path-style addressing.
//   - gcs: service-account.json, a service account key in JSON. With an
//     Endpoint (an emulator) and no key, requests are anonymous.
//   - azure: AZURE_STORAGE_ACCOUNT, and either AZURE_STORAGE_KEY (shared key)
//     or AZURE_STORAGE_SAS_TOKEN. Endpoint is optional; for Azurite it is
//     http://127.0.0.1:PORT/devstoreaccount1.
//   - file: no credentials; Bucket is a directory, created when missing.
//
// Every error returned by the bucket, and by Open and Check, names the store
// type, the bucket and the endpoint, and never contains a credential.
// Network calls are retried a few times with short backoffs, so that a dead
// store fails a backup within seconds rather than minutes.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/internal/backup/redact"
)

// Store types, the values of Destination.Type.
const (
	TypeS3    = "s3"
	TypeGCS   = "gcs"
	TypeAzure = "azure"
	TypeFile  = "file"
)

// Secret keys read by Open.
const (
	// AWSAccessKeyID is the S3 access key ID (required for s3).
	AWSAccessKeyID = "AWS_ACCESS_KEY_ID"
	// AWSSecretAccessKey is the S3 secret access key (required for s3).
	AWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	// AWSSessionToken is an optional S3 session token for temporary
	// credentials.
	AWSSessionToken = "AWS_SESSION_TOKEN"
	// GCSServiceAccountKey holds a GCS service account key in JSON
	// (required for gcs unless Endpoint points at an emulator).
	GCSServiceAccountKey = "service-account.json"
	// AzureStorageAccount is the Azure storage account name (required for
	// azure).
	AzureStorageAccount = "AZURE_STORAGE_ACCOUNT"
	// AzureStorageKey is the account's shared key; one of it and
	// AzureStorageSASToken is required for azure.
	AzureStorageKey = "AZURE_STORAGE_KEY"
	// AzureStorageSASToken is a shared access signature for the container or
	// account, with or without its leading "?".
	AzureStorageSASToken = "AZURE_STORAGE_SAS_TOKEN"
)

// Timeouts and retries of the network stores.
const (
	// DialTimeout bounds establishing one connection.
	DialTimeout = 10 * time.Second
	// ResponseHeaderTimeout bounds waiting for a response's headers once a
	// request has been sent.
	ResponseHeaderTimeout = 2 * time.Minute
	// MaxAttempts is how many times a failing request is tried in all.
	MaxAttempts = 3
	// MaxBackoff bounds the wait between two attempts.
	MaxBackoff = 2 * time.Second
	// CheckTimeout bounds Check when its context has no earlier deadline.
	CheckTimeout = 30 * time.Second
)

// Destination says where backups go.
type Destination struct {
	// Type is the kind of store: s3, gcs, azure or file.
	Type string
	// Bucket is the bucket (s3, gcs), container (azure) or directory
	// (file).
	Bucket string
	// Prefix is prepended to every key as a folder: a "/" is added when it
	// does not end in one.
	Prefix string
	// Endpoint is the URL of an S3-compatible store, an emulator or an
	// Azure blob service; empty for the cloud provider's own endpoint.
	Endpoint string
	// Region is the S3 region; us-east-1 when empty.
	Region string
}

// Errors that Check wraps, so that callers can tell what failed with
// errors.Is.
var (
	// ErrUnreachable means the store could not be reached (connection
	// refused, DNS failure, timeout).
	ErrUnreachable = errors.New("store unreachable")
	// ErrCredentialsRefused means the store refused the credentials or
	// denied access to the bucket.
	ErrCredentialsRefused = errors.New("credentials refused")
	// ErrBucketNotFound means the bucket, container or directory does not
	// exist.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrCredentialsMissing means the credentials Secret lacks a key the
	// store needs, or holds a value that cannot be one (Open's errors).
	ErrCredentialsMissing = errors.New("credentials missing")
)

// Open returns a bucket for d scoped to d.Prefix, using only the credentials
// in creds (the data of a Kubernetes Secret; see the package documentation
// for its keys). It does not contact the store; use Check for that. The
// caller closes the bucket.
func Open(ctx context.Context, d Destination, creds map[string][]byte) (*blob.Bucket, error) {
	l := label{typ: d.Type, bucket: d.Bucket, endpoint: redact.URL(d.Endpoint)}
	if d.Bucket == "" {
		return nil, fmt.Errorf("%s: the bucket is empty", l)
	}
	var (
		b   *blob.Bucket
		err error
	)
	switch d.Type {
	case TypeS3:
		b, err = openS3(ctx, d, creds, l)
	case TypeGCS:
		b, err = openGCS(ctx, d, creds, l)
	case TypeAzure:
		b, err = openAzure(ctx, d, creds, l)
	case TypeFile:
		b, err = openFile(d, l)
	default:
		return nil, fmt.Errorf("unknown store type %q: want %s, %s, %s or %s", d.Type, TypeS3, TypeGCS, TypeAzure, TypeFile)
	}
	if err != nil {
		return nil, err
	}
	if d.Prefix != "" {
		// A prefix is a folder: "prod/orders" and "prod/orders/" are the same.
		b = blob.PrefixedBucket(b, strings.TrimSuffix(d.Prefix, "/")+"/")
	}
	return b, nil
}

// Check verifies cheaply that b can be reached and its credentials are
// accepted, by listing at most one key. The error wraps ErrUnreachable,
// ErrCredentialsRefused or ErrBucketNotFound when it is one of those. When
// ctx has no deadline, Check gives up after CheckTimeout.
func Check(ctx context.Context, b *blob.Bucket) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
	}
	_, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, nil)
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", classify(err), err)
}

// classify returns the sentinel error that describes err, or a generic one.
func classify(err error) error {
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
		netErr net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &opErr), errors.As(err, &dnsErr):
		return ErrUnreachable
	case strings.Contains(err.Error(), "cannot fetch token"):
		// The token endpoint answered, and refused the service account
		// key (a *url.Error around it is a net.Error too).
		return ErrCredentialsRefused
	case errors.As(err, &netErr):
		return ErrUnreachable
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return ErrCredentialsRefused
	case gcerrors.NotFound:
		return ErrBucketNotFound
	case gcerrors.DeadlineExceeded:
		return ErrUnreachable
	}
	// Stores report refused credentials with various codes that the blob
	// drivers do not all map to PermissionDenied.
	msg := err.Error()
	for _, s := range []string{
		"InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthenticationFailed", "AuthorizationFailure",
		"AuthorizationPermissionMismatch", "ExpiredToken", "InvalidToken", "Error 401", "Error 403",
		"StatusCode: 401", "StatusCode: 403", "RESPONSE 401", "RESPONSE 403",
	} {
		if strings.Contains(msg, s) {
			return ErrCredentialsRefused
		}
	}
	return errors.New("store check failed")
}

// secret returns creds[key] as a string, or an error naming the missing key.
func secret(l label, creds map[string][]byte, key string) (string, error) {
	v := strings.TrimSpace(string(creds[key]))
	if v == "" {
		return "", missing(fmt.Errorf("%s: the credentials Secret has no key %s", l, key))
	}
	return v, nil
}

// newHTTPClient returns a client with the package's timeouts. It honours the
// usual proxy variables (HTTPS_PROXY, NO_PROXY), which clusters often need.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = DialTimeout
	t.ResponseHeaderTimeout = ResponseHeaderTimeout
	return &http.Client{Transport: t}
}

// label names a store in errors.
type label struct {
	typ, bucket, endpoint string
}

func (l label) String() string {
	kind := "bucket"
	switch l.typ {
	case TypeAzure:
		kind = "container"
	case TypeFile:
		kind = "directory"
	}
	s := fmt.Sprintf("%s %s %q", l.typ, kind, l.bucket)
	if l.endpoint != "" {
		s += " at " + l.endpoint
	}
	return s
}
