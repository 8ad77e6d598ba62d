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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/retention"
	"github.com/steward-dev/steward/internal/backup/store"
)

// The commands Main runs: the subcommands of steward that backup pods run.
const (
	// CommandBackup dumps the database into the destination, then prunes.
	CommandBackup = "backup"
	// CommandRestore restores a backup into the database.
	CommandRestore = "restore"
	// CommandCheck checks the destination with store.Probe: it lists the
	// bucket and writes, reads back and deletes a small object. It
	// connects to no database.
	CommandCheck = "backup-check"
	// CommandDelete deletes the backups of the database named by EnvDBName
	// from the destination (DeleteDumps). It connects to no database.
	CommandDelete = "backup-delete"
	// CommandVerify restores the newest good backup of the EnvDBType
	// database named by EnvDBName (or the one EnvVerifyKey names) into a
	// throwaway server started in its own pod, and compares it with its
	// manifest (Verify). It connects to no database of the user's.
	CommandVerify = "backup-verify"
)

// Environment variables of the commands. The database is the one backed
// up, or restored into; backup-check reads only the destination's, and
// backup-delete the destination's and EnvDBName.
const (
	EnvDBType     = "STEWARD_DB_TYPE"
	EnvDBHost     = "STEWARD_DB_HOST"
	EnvDBPort     = "STEWARD_DB_PORT"
	EnvDBName     = "STEWARD_DB_NAME"
	EnvDBUsername = "STEWARD_DB_USERNAME"
	EnvDBPassword = "STEWARD_DB_PASSWORD"
	// EnvDBBinDir (optional) is where the dump and restore tools are;
	// default $PATH.
	EnvDBBinDir = "STEWARD_DB_BIN_DIR"

	// The destination, as in store.Destination.
	EnvDestinationType     = "STEWARD_DESTINATION_TYPE"
	EnvDestinationBucket   = "STEWARD_DESTINATION_BUCKET"
	EnvDestinationPrefix   = "STEWARD_DESTINATION_PREFIX"
	EnvDestinationEndpoint = "STEWARD_DESTINATION_ENDPOINT"
	EnvDestinationRegion   = "STEWARD_DESTINATION_REGION"
	// EnvStoreCredentialsDir (optional) is a directory (a mounted Secret)
	// whose files, by name, are the store's credentials.
	EnvStoreCredentialsDir = "STEWARD_STORE_CREDENTIALS_DIR"

	// Retention of `steward backup`: counts, and a Go duration for the
	// maximum age. When none is set nothing is pruned.
	EnvKeepLast    = "STEWARD_RETENTION_KEEP_LAST"
	EnvKeepDaily   = "STEWARD_RETENTION_KEEP_DAILY"
	EnvKeepWeekly  = "STEWARD_RETENTION_KEEP_WEEKLY"
	EnvKeepMonthly = "STEWARD_RETENTION_KEEP_MONTHLY"
	EnvMaxAge      = "STEWARD_RETENTION_MAX_AGE"
	// EnvRetentionTimeZone (optional, an IANA name, default UTC) is the
	// zone of the retention's days, weeks and months.
	EnvRetentionTimeZone = "STEWARD_RETENTION_TIME_ZONE"

	// EnvRestoreKey is the key of the backup to restore, or "latest"
	// (the default). EnvRestoreOverwrite "true" allows a non-empty target.
	EnvRestoreKey       = "STEWARD_RESTORE_KEY"
	EnvRestoreOverwrite = "STEWARD_RESTORE_OVERWRITE"

	// EnvVerifyKey is the key of the backup backup-verify verifies, or
	// "latest" (the default): the newest good backup of the database.
	EnvVerifyKey = "STEWARD_VERIFY_KEY"

	// EnvTerminationLog is where the Result goes; default
	// DefaultTerminationLog.
	EnvTerminationLog = "STEWARD_TERMINATION_LOG"
)

// DefaultTerminationLog is the container's termination message file.
const DefaultTerminationLog = "/dev/termination-log"

// MaxResultBytes is the most Kubernetes keeps of a termination message.
const MaxResultBytes = 4096

// Destination is where backups are stored.
type Destination = store.Destination

// OpenBucket opens a destination with the store's credentials (file name
// to content). It is a variable so that tests can open other buckets.
var OpenBucket = store.Open

// Result is what a run of `steward backup` or `steward restore` reports in
// its container's termination message, as JSON of at most MaxResultBytes.
type Result struct {
	Succeeded bool `json:"succeeded"`
	// Key, Size and SHA256 are the backup's (taken or restored).
	Key             string    `json:"key,omitempty"`
	Size            int64     `json:"size,omitempty"`
	SHA256          string    `json:"sha256,omitempty"`
	StartTime       time.Time `json:"startTime"`
	CompletionTime  time.Time `json:"completionTime"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Pruned is the number of old backups deleted; PruneError why pruning
	// failed, which does not fail the backup.
	Pruned     int    `json:"pruned"`
	PruneError string `json:"pruneError,omitempty"`
	// Deleted is the number of backups backup-delete deleted.
	Deleted int `json:"deleted,omitempty"`
	// TablesChecked is the number of tables whose row counts and
	// checksums backup-verify compared.
	TablesChecked int `json:"tablesChecked,omitempty"`
	// Error is why the run failed, shortened, with every credential
	// replaced by redact.Mask.
	Error string `json:"error,omitempty"`
	// Reason classifies a failure of the destination, as the reasons of a
	// Backup's DestinationChecked condition: DestinationUnreachable,
	// CredentialsRefused, BucketNotFound or CredentialsMissing; empty when
	// the failure is none of those. For backup-verify it is the
	// verification's reason, passed or not (VerificationPassed,
	// ChecksumMismatch, ...), unless the destination failed.
	Reason string `json:"reason,omitempty"`
	// Message says what backup-verify checked, when it passed.
	Message string `json:"message,omitempty"`
}

// Marshal returns the Result as JSON of at most MaxResultBytes, shortening
// the messages when needed.
func (r Result) Marshal() []byte {
	for limit := 1500; ; limit /= 2 {
		r.Error, r.PruneError, r.Message = shorten(r.Error, limit), shorten(r.PruneError, limit), shorten(r.Message, limit)
		data, err := json.Marshal(r)
		if err == nil && len(data) <= MaxResultBytes {
			return data
		}
		if limit == 0 {
			return data
		}
	}
}

func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	for limit > 0 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return s[:limit] + "…"
}

// ParseResult reads a termination message.
func ParseResult(message string) (Result, error) {
	var r Result
	message = strings.TrimSpace(message)
	if message == "" {
		return r, errors.New("the termination message is empty")
	}
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		return r, fmt.Errorf("the termination message is not a result: %w", err)
	}
	return r, nil
}

// Main runs command (one of the Command constants) configured by getenv,
// writes the Result to the termination log and returns the exit code.
// Every credential it holds (the database password, the store's
// credentials and the endpoint's user information) is replaced by
// redact.Mask in the Result and in what it writes to log.
func Main(ctx context.Context, command string, getenv func(string) string, log io.Writer) int {
	start := time.Now().UTC()
	creds, err := readCredentials(getenv(EnvStoreCredentialsDir))
	red := redact.New(getenv(EnvDBPassword))
	red.Add(store.Secrets(destinationFromEnv(getenv), creds)...)
	log = red.Writer(log)
	var res Result
	switch {
	case err != nil:
	case command == CommandVerify:
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
	path := getenv(EnvTerminationLog)
	if path == "" {
		path = DefaultTerminationLog
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

func run(ctx context.Context, command string, getenv func(string) string, creds map[string][]byte, log io.Writer) (Result, error) {
	var res Result
	var db Source
	switch command {
	case CommandBackup, CommandRestore:
		var err error
		if db, err = sourceFromEnv(getenv); err != nil {
			return res, err
		}
	case CommandCheck, CommandDelete:
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
	case CommandCheck:
		if err := store.Probe(ctx, bucket); err != nil {
			return res, err
		}
		fmt.Fprintf(log, "%s: listed the %s destination, wrote, read back and deleted a test object\n", command, d.Type)
		return res, nil
	case CommandDelete:
		name := getenv(EnvDBName)
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
	case CommandBackup:
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
	key := getenv(EnvRestoreKey)
	if key == "" {
		key = Latest
	}
	overwrite := false
	if v := getenv(EnvRestoreOverwrite); v != "" {
		if overwrite, err = strconv.ParseBool(v); err != nil {
			return res, fmt.Errorf("%s=%q is not true or false", EnvRestoreOverwrite, v)
		}
	}
	m, err := Restore(ctx, bucket, key, db, RestoreOptions{Overwrite: overwrite, Log: log})
	res.Key, res.Size, res.SHA256 = m.Key, m.Size, m.SHA256
	return res, err
}

func sourceFromEnv(getenv func(string) string) (Source, error) {
	s := Source{
		Type: getenv(EnvDBType), Host: getenv(EnvDBHost), Database: getenv(EnvDBName),
		Username: getenv(EnvDBUsername), Password: getenv(EnvDBPassword), BinDir: getenv(EnvDBBinDir),
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{EnvDBType, s.Type}, {EnvDBHost, s.Host}, {EnvDBName, s.Database}, {EnvDBUsername, s.Username},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("missing environment variables: %s", strings.Join(missing, ", "))
	}
	if v := getenv(EnvDBPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			return s, fmt.Errorf("%s=%q is not a port number", EnvDBPort, v)
		}
		s.Port = p
	}
	return s, s.validate()
}

func destinationFromEnv(getenv func(string) string) Destination {
	return Destination{
		Type: getenv(EnvDestinationType), Bucket: getenv(EnvDestinationBucket), Prefix: getenv(EnvDestinationPrefix),
		Endpoint: getenv(EnvDestinationEndpoint), Region: getenv(EnvDestinationRegion),
	}
}

func openBucket(ctx context.Context, d Destination, creds map[string][]byte) (*blob.Bucket, error) {
	if d.Type == "" {
		return nil, fmt.Errorf("missing environment variable %s", EnvDestinationType)
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
	}{{EnvKeepLast, &p.KeepLast}, {EnvKeepDaily, &p.KeepDaily}, {EnvKeepWeekly, &p.KeepWeekly}, {EnvKeepMonthly, &p.KeepMonthly}} {
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
	if s := getenv(EnvMaxAge); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%s=%q is not a duration", EnvMaxAge, s)
		}
		p.MaxAge, set = d, true
	}
	if !set {
		return nil, nil
	}
	if tz := getenv(EnvRetentionTimeZone); tz != "" {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a known time zone", EnvRetentionTimeZone, tz)
		}
		p.Location = loc
	}
	return &p, nil
}
