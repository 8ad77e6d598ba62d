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

package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/googleapis/gax-go/v2"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"google.golang.org/api/option"
)

// defaultRegion is the S3 region when Destination.Region is empty.
const defaultRegion = "us-east-1"

// openS3 builds the S3 client by hand, with static credentials, rather than
// with config.LoadDefaultConfig, which reads the environment, ~/.aws and the
// instance metadata service.
func openS3(ctx context.Context, d Destination, creds map[string][]byte, l label) (*blob.Bucket, error) {
	id, err := secret(l, creds, AWSAccessKeyID)
	if err != nil {
		return nil, err
	}
	key, err := secret(l, creds, AWSSecretAccessKey)
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(string(creds[AWSSessionToken]))
	region := d.Region
	if region == "" {
		region = defaultRegion
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(awscreds.NewStaticCredentialsProvider(id, key, token)),
		HTTPClient:  newHTTPClient(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = MaxAttempts
				o.MaxBackoff = MaxBackoff
			})
		},
	}
	opts := &s3blob.Options{}
	if d.Endpoint != "" {
		// S3-compatible stores often reject the checksums the SDK adds by
		// default, and do not send them back.
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		opts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if d.Endpoint != "" {
			o.BaseEndpoint = aws.String(d.Endpoint)
			o.UsePathStyle = true
		}
	})
	b, err := s3blob.OpenBucket(ctx, client, d.Bucket, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	return newBucket(b, l), nil
}

// openGCS builds the storage client with an explicit endpoint, explicit
// credentials (or none) and its own HTTP client, so that neither
// STORAGE_EMULATOR_HOST nor application default credentials (environment,
// gcloud's files, metadata server) play a part.
func openGCS(ctx context.Context, d Destination, creds map[string][]byte, l label) (*blob.Bucket, error) {
	endpoint := "https://storage.googleapis.com/storage/v1/"
	if d.Endpoint != "" {
		endpoint = strings.TrimSuffix(d.Endpoint, "/")
		if !strings.HasSuffix(endpoint, "/storage/v1") {
			endpoint += "/storage/v1"
		}
		endpoint += "/"
	}
	hc := newHTTPClient()
	opts := []option.ClientOption{option.WithEndpoint(endpoint)}
	if key := creds[GCSServiceAccountKey]; len(key) > 0 {
		c, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{
			Scopes: []string{storage.ScopeReadWrite},
			Client: hc,
		})
		if err != nil {
			// The parser's errors do not quote the key's contents.
			return nil, missing(fmt.Errorf("%s: the credentials Secret's %s is not a service account key: %w", l, GCSServiceAccountKey, err))
		}
		hc, err = httptransport.NewClient(&httptransport.Options{Credentials: c, BaseRoundTripper: hc.Transport})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l, err)
		}
		opts = append(opts, option.WithAuthCredentials(c))
	} else {
		if d.Endpoint == "" {
			return nil, missing(fmt.Errorf("%s: the credentials Secret has no key %s (only an emulator's Endpoint may go without)", l, GCSServiceAccountKey))
		}
		opts = append(opts, option.WithoutAuthentication())
	}
	opts = append(opts, option.WithHTTPClient(hc))
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	client.SetRetry(
		storage.WithMaxAttempts(MaxAttempts),
		storage.WithBackoff(gax.Backoff{Initial: 200 * time.Millisecond, Max: MaxBackoff, Multiplier: 2}),
	)
	b, err := gcsblob.OpenBucket(ctx, nil, d.Bucket, &gcsblob.Options{Client: client})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	return newBucket(b, l), nil
}

// openAzure builds the container client from the account and its shared key
// or SAS token; azidentity, which reads the environment and managed
// identities, is not used.
func openAzure(ctx context.Context, d Destination, creds map[string][]byte, l label) (*blob.Bucket, error) {
	account, err := secret(l, creds, AzureStorageAccount)
	if err != nil {
		return nil, err
	}
	service := d.Endpoint
	if service == "" {
		service = fmt.Sprintf("https://%s.blob.core.windows.net", account)
	}
	containerURL := strings.TrimSuffix(service, "/") + "/" + d.Bucket
	copts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: newHTTPClient(),
		Retry: policy.RetryOptions{
			MaxRetries:    MaxAttempts - 1,
			RetryDelay:    200 * time.Millisecond,
			MaxRetryDelay: MaxBackoff,
		},
	}}
	key := strings.TrimSpace(string(creds[AzureStorageKey]))
	sas := strings.TrimPrefix(strings.TrimSpace(string(creds[AzureStorageSASToken])), "?")
	var client *container.Client
	switch {
	case key != "":
		cred, err := container.NewSharedKeyCredential(account, key)
		if err != nil {
			return nil, missing(fmt.Errorf("%s: the credentials Secret's %s is not a valid shared key", l, AzureStorageKey))
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l, err)
		}
	case sas != "":
		client, err = container.NewClientWithNoCredential(containerURL+"?"+sas, copts)
		if err != nil {
			// The error may quote the URL, and so the token.
			return nil, fmt.Errorf("%s: the container URL with the SAS token does not parse", l)
		}
	default:
		return nil, missing(fmt.Errorf("%s: the credentials Secret has neither key %s nor key %s", l, AzureStorageKey, AzureStorageSASToken))
	}
	b, err := azureblob.OpenBucket(ctx, client, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	return newBucket(b, l), nil
}

// openFile opens a directory, created when missing. Temporary files go next
// to the final ones, as the directory is often a volume of its own.
func openFile(d Destination, l label) (*blob.Bucket, error) {
	if err := os.MkdirAll(d.Bucket, 0o750); err != nil {
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	b, err := fileblob.OpenBucket(d.Bucket, &fileblob.Options{NoTempDir: true, DirFileMode: 0o750})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l, err)
	}
	return newBucket(b, l), nil
}
