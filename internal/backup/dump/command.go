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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/retention"
	"github.com/steward-dev/steward/internal/backup/store"
)

// Destination is where backups are stored.
type Destination = store.Destination

// OpenBucket opens a destination with the store's credentials (file name
// to content). It is a variable so that tests can open other buckets.
var OpenBucket = store.Open

// Main runs command (one of the Command constants) configured by getenv,
// writes the Result to the termination log and returns the exit code.
// Every credential it holds (the database password, the store's
// credentials and the endpoint's user information) is replaced by
// redact.Mask in the Result and in what it writes to log.
func Main(ctx context.Context, command string, getenv func(string) string, log io.Writer) int {
	start := time.Now().UTC()
	creds, err := readCredentials(getenv(dumpcmd.EnvStoreCredentialsDir))
	red := redact.New(getenv(dumpcmd.EnvDBPassword))
	red.Add(store.Secrets(destinationFromEnv(getenv), creds)...)
	log = red.Writer(log)
	var res dumpcmd.Result
	switch {
	case err != nil:
	case command == dumpcmd.CommandVerify:
		res, err = runVerify(ctx, getenv, creds, red, log)
	default:
		res, err = run(ctx, command, getenv, creds, log)
	}
	res.StartTime = start
	res.CompletionTime = time.Now().UTC()
	res.DurationSeconds = res.CompletionTime.Sub(start).Seconds()
	res.Succeeded = err == nil
	if err != nil {
		res.Error = red.String(err.Error())
		if r := reason(err); r != "" || res.Reason == "" {
			res.Reason = r
		}
		fmt.Fprintf(log, "%s: %s\n", command, res.Error)
	}
	res.PruneError = red.String(res.PruneError)
	res.Message = red.String(res.Message)
	data := res.Marshal()
	fmt.Fprintf(log, "%s: result %s\n", command, data)
	path := getenv(dumpcmd.EnvTerminationLog)
	if path == "" {
		path = dumpcmd.DefaultTerminationLog
	}
	if werr := os.WriteFile(path, data, 0o644); werr != nil {
		fmt.Fprintf(log, "%s: writing the result to %s: %v\n", command, path, werr)
	}
	if err != nil {
		return 1
	}
	return 0
}

// reason classifies an error of the destination as a Backup condition's
// reason, or "".
func reason(err error) string {
	switch {
	case errors.Is(err, store.ErrCredentialsMissing):
		return v1alpha1.ReasonCredentialsMissing
	case errors.Is(err, store.ErrUnreachable):
		return v1alpha1.ReasonDestinationUnreachable
	case errors.Is(err, store.ErrCredentialsRefused):
		return v1alpha1.ReasonCredentialsRefused
	case errors.Is(err, store.ErrBucketNotFound):
		return v1alpha1.ReasonBucketNotFound
	}
	return ""
}

func run(ctx context.Context, command string, getenv func(string) string, creds map[string][]byte, log io.Writer) (dumpcmd.Result, error) {
	var res dumpcmd.Result
	var db Source
	switch command {
	case dumpcmd.CommandBackup, dumpcmd.CommandRestore:
		var err error
		if db, err = sourceFromEnv(getenv); err != nil {
			return res, err
		}
	case dumpcmd.CommandCheck, dumpcmd.CommandDelete:
	default:
		return res, fmt.Errorf("unknown command %q", command)
	}
	d := destinationFromEnv(getenv)
	bucket, err := openBucket(ctx, d, creds)
	if err != nil {
		return res, err
	}
	defer func() { _ = bucket.Close() }()
	switch command {
	case dumpcmd.CommandCheck:
		if err := store.Probe(ctx, bucket); err != nil {
			return res, err
		}
		fmt.Fprintf(log, "%s: listed the %s destination, wrote, read back and deleted a test object\n", command, d.Type)
		return res, nil
	case dumpcmd.CommandDelete:
		name := getenv(dumpcmd.EnvDBName)
		res.Deleted, err = DeleteDumps(ctx, bucket, name)
		fmt.Fprintf(log, "%s: deleted %d backups of database %q\n", command, res.Deleted, name)
		if err != nil {
			return res, err
		}
		n, err := DeletePointInTime(ctx, bucket, name)
		if n > 0 {
			fmt.Fprintf(log, "%s: deleted %d point-in-time recovery objects (base backups, WAL) of database %q\n", command, n, name)
		}
		return res, err
	case dumpcmd.CommandBackup:
		policy, err := retentionFromEnv(getenv)
		if err != nil {
			return res, err
		}
		rep, err := Backup(ctx, db, bucket, Options{Retention: policy, Log: log})
		if err != nil {
			return res, err
		}
		res.Key, res.Size, res.SHA256 = rep.Manifest.Key, rep.Manifest.Size, rep.Manifest.SHA256
		res.Pruned = len(rep.Pruned)
		if rep.PruneError != nil {
			res.PruneError = rep.PruneError.Error()
		}
		return res, nil
	}
	key := getenv(dumpcmd.EnvRestoreKey)
	if key == "" {
		key = Latest
	}
	overwrite := false
	if v := getenv(dumpcmd.EnvRestoreOverwrite); v != "" {
		if overwrite, err = strconv.ParseBool(v); err != nil {
			return res, fmt.Errorf("%s=%q is not true or false", dumpcmd.EnvRestoreOverwrite, v)
		}
	}
	m, err := Restore(ctx, bucket, key, db, RestoreOptions{Overwrite: overwrite, Log: log})
	res.Key, res.Size, res.SHA256 = m.Key, m.Size, m.SHA256
	return res, err
}

func sourceFromEnv(getenv func(string) string) (Source, error) {
	s := Source{
		Type: getenv(dumpcmd.EnvDBType), Host: getenv(dumpcmd.EnvDBHost), Database: getenv(dumpcmd.EnvDBName),
		Username: getenv(dumpcmd.EnvDBUsername), Password: getenv(dumpcmd.EnvDBPassword), BinDir: getenv(dumpcmd.EnvDBBinDir),
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{dumpcmd.EnvDBType, s.Type}, {dumpcmd.EnvDBHost, s.Host}, {dumpcmd.EnvDBName, s.Database}, {dumpcmd.EnvDBUsername, s.Username},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("missing environment variables: %s", strings.Join(missing, ", "))
	}
	if v := getenv(dumpcmd.EnvDBPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return s, fmt.Errorf("%s=%q is not a port number", dumpcmd.EnvDBPort, v)
		}
		s.Port = p
	}
	return s, s.validate()
}

func destinationFromEnv(getenv func(string) string) Destination {
	return Destination{
		Type: getenv(dumpcmd.EnvDestinationType), Bucket: getenv(dumpcmd.EnvDestinationBucket), Prefix: getenv(dumpcmd.EnvDestinationPrefix),
		Endpoint: getenv(dumpcmd.EnvDestinationEndpoint), Region: getenv(dumpcmd.EnvDestinationRegion),
	}
}

func openBucket(ctx context.Context, d Destination, creds map[string][]byte) (*blob.Bucket, error) {
	if d.Type == "" {
		return nil, fmt.Errorf("missing environment variable %s", dumpcmd.EnvDestinationType)
	}
	b, err := OpenBucket(ctx, d, creds)
	if err != nil {
		return nil, fmt.Errorf("opening the %s destination: %w", d.Type, err)
	}
	return b, nil
}

// readCredentials reads every file of dir, by name. Names starting with a
// dot (a Secret volume's ..data and its timestamped directories) are
// skipped. An empty dir means no credentials.
func readCredentials(dir string) (map[string][]byte, error) {
	creds := map[string][]byte{}
	if dir == "" {
		return creds, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the store credentials: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading the store credential %s: %w", e.Name(), err)
		}
		creds[e.Name()] = data
	}
	return creds, nil
}

// retentionFromEnv returns the policy, or nil when no variable is set.
func retentionFromEnv(getenv func(string) string) (*retention.Policy, error) {
	var p retention.Policy
	set := false
	for _, v := range []struct {
		name string
		dst  *int
	}{{dumpcmd.EnvKeepLast, &p.KeepLast}, {dumpcmd.EnvKeepDaily, &p.KeepDaily}, {dumpcmd.EnvKeepWeekly, &p.KeepWeekly}, {dumpcmd.EnvKeepMonthly, &p.KeepMonthly}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s=%q is not a count", v.name, s)
		}
		*v.dst, set = n, true
	}
	if s := getenv(dumpcmd.EnvMaxAge); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%s=%q is not a duration", dumpcmd.EnvMaxAge, s)
		}
		p.MaxAge, set = d, true
	}
	if !set {
		return nil, nil
	}
	if tz := getenv(dumpcmd.EnvRetentionTimeZone); tz != "" {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a known time zone", dumpcmd.EnvRetentionTimeZone, tz)
		}
		p.Location = loc
	}
	return &p, nil
}
