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

package dump

import (
	"context"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/retention"
)

// The environment of the commands, for other commands that run in the
// same pods (point-in-time recovery's).

// DestinationFromEnv is the destination the environment names.
func DestinationFromEnv(getenv func(string) string) Destination { return destinationFromEnv(getenv) }

// ReadCredentials reads the store's credentials from the directory
// EnvStoreCredentialsDir names, file name to content.
func ReadCredentials(getenv func(string) string) (map[string][]byte, error) {
	return readCredentials(getenv(dumpcmd.EnvStoreCredentialsDir))
}

// OpenDestination opens the destination with its credentials.
func OpenDestination(ctx context.Context, d Destination, creds map[string][]byte) (*blob.Bucket, error) {
	return openBucket(ctx, d, creds)
}

// RetentionFromEnv is the retention policy of the environment, nil when
// none is set.
func RetentionFromEnv(getenv func(string) string) (*retention.Policy, error) {
	return retentionFromEnv(getenv)
}

// SourceFromEnv is the database of the environment.
func SourceFromEnv(getenv func(string) string) (Source, error) { return sourceFromEnv(getenv) }

// ErrorReason classifies an error of the destination as a Backup
// condition's reason, or "".
func ErrorReason(err error) string { return reason(err) }

// CleanEnv is the process's environment without the database clients'
// variables (PG*, MYSQL*, MARIADB*), for the tools a command runs.
func CleanEnv() []string { return cleanEnv() }
