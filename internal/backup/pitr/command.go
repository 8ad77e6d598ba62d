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

package pitr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/store"
)

// Main runs a command configured by getenv and returns its exit code.
// wal-fetch's arguments are args.
func Main(ctx context.Context, command string, args []string, getenv func(string) string, log io.Writer) int {
	creds, err := dump.ReadCredentials(getenv)
	red := redact.New(getenv(dumpcmd.EnvDBPassword), getenv(pitrcmd.EnvReplicationPassword))
	d := dump.DestinationFromEnv(getenv)
	red.Add(store.Secrets(d, creds)...)
	log = red.Writer(log)
	if err != nil {
		fmt.Fprintf(log, "%s: %v\n", command, err)
		return finish(command, pitrcmd.Result{}, time.Now(), err, getenv, log, red)
	}
	database := getenv(pitrcmd.EnvArchive)
	if command == pitrcmd.CommandFetch {
		if len(args) != 2 {
			fmt.Fprintf(log, "usage: steward wal-fetch FILE PATH\n")
			return 2
		}
		bucket, err := dump.OpenDestination(ctx, d, creds)
		if err != nil {
			fmt.Fprintf(log, "wal-fetch: %s\n", red.String(err.Error()))
			return 2
		}
		defer func() { _ = bucket.Close() }()
		err = Fetch(ctx, bucket, database, args[0], args[1])
		switch {
		case errors.Is(err, ErrNotArchived):
			return 1
		case err != nil:
			fmt.Fprintf(log, "wal-fetch: %s\n", red.String(err.Error()))
			return 2
		}
		return 0
	}
	start := time.Now().UTC()
	bucket, err := dump.OpenDestination(ctx, d, creds)
	if err != nil {
		return finish(command, pitrcmd.Result{}, start, err, getenv, log, red)
	}
	defer func() { _ = bucket.Close() }()
	switch command {
	case pitrcmd.CommandArchive:
		conn, err := connFromEnv(getenv)
		if err == nil {
			dir := getenv(pitrcmd.EnvArchiveDir)
			if dir == "" {
				dir = "/tmp/archive"
			}
			var l net.Listener
			if l, err = net.Listen("tcp", fmt.Sprintf(":%d", pitrcmd.ArchiverPort)); err == nil {
				a := &Archiver{Engine: engineFromEnv(getenv), Conn: conn, Bucket: bucket, Database: database, Dir: dir, Log: log}
				fmt.Fprintf(log, "wal-archive: archiving database %q from %s into the %s destination\n", database, conn.Host, d.Type)
				err = a.Run(ctx, l)
			}
		}
		if err != nil {
			fmt.Fprintf(log, "wal-archive: %s\n", red.String(err.Error()))
			return 1
		}
		return 0
	case pitrcmd.CommandBase:
		res, err := base(ctx, bucket, database, getenv, log)
		finish(command, res, start, err, getenv, log, red)
		return 0
	case pitrcmd.CommandRestore:
		res, err := restore(ctx, bucket, database, getenv, log, nil)
		return finish(command, res, start, err, getenv, log, red)
	case pitrcmd.CommandVerify:
		// Like backup-base, it exits 0 either way: its result says how it
		// went, beside the dump's verification in the same pod.
		res, err := verify(ctx, bucket, database, getenv, log, nil)
		finish(command, res, start, err, getenv, log, red)
		return 0
	}
	return finish(command, pitrcmd.Result{}, start, fmt.Errorf("unknown command %q", command), getenv, log, red)
}

func finish(command string, res pitrcmd.Result, start time.Time, err error, getenv func(string) string, log io.Writer, red *redact.Redactor) int {
	res.StartTime = start
	res.CompletionTime = time.Now().UTC()
	res.DurationSeconds = res.CompletionTime.Sub(start).Seconds()
	res.Succeeded = err == nil
	if err != nil {
		res.Error = red.String(err.Error())
		res.Reason = dump.ErrorReason(err)
		fmt.Fprintf(log, "%s: %s\n", command, res.Error)
	}
	res.PruneError = red.String(res.PruneError)
	data, _ := json.Marshal(res)
	if len(data) > dumpcmd.MaxResultBytes {
		res.Error, res.PruneError = tail(res.Error, 1000), tail(res.PruneError, 500)
		data, _ = json.Marshal(res)
	}
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

// engineFromEnv is the archive's engine: MariaDB for a mysql source (the
// operator archives no MySQL), PostgreSQL otherwise.
func engineFromEnv(getenv func(string) string) string {
	if getenv(dumpcmd.EnvDBType) == dump.TypeMySQL {
		return EngineMariaDB
	}
	return EnginePostgreSQL
}

func connFromEnv(getenv func(string) string) (Conn, error) {
	c := Conn{Host: getenv(dumpcmd.EnvDBHost), Username: getenv(pitrcmd.EnvReplicationUsername),
		Password: getenv(pitrcmd.EnvReplicationPassword), BinDir: getenv(dumpcmd.EnvDBBinDir)}
	if c.Host == "" || c.Username == "" {
		return c, fmt.Errorf("missing environment variables %s and %s", dumpcmd.EnvDBHost, pitrcmd.EnvReplicationUsername)
	}
	if v := getenv(dumpcmd.EnvDBPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q is not a port number", dumpcmd.EnvDBPort, v)
		}
		c.Port = p
	}
	return c, nil
}

func base(ctx context.Context, bucket *blob.Bucket, database string, getenv func(string) string, log io.Writer) (pitrcmd.Result, error) {
	var res pitrcmd.Result
	conn, err := connFromEnv(getenv)
	if err != nil {
		return res, err
	}
	policy, err := dump.RetentionFromEnv(getenv)
	if err != nil {
		return res, err
	}
	var b Base
	if engineFromEnv(getenv) == EngineMariaDB {
		src, err := dump.SourceFromEnv(getenv)
		if err != nil {
			return res, err
		}
		b, err = TakeDumpBase(ctx, src, bucket, database, log)
		res.BaseKey, res.Key, res.Size, res.SHA256 = b.Key, b.Key, b.Size, b.SHA256
		if err != nil {
			return res, err
		}
		fmt.Fprintf(log, "backup-base: took base backup %s (%d bytes, binary log after GTID position %q)\n", b.Key, b.Size, b.GTID)
	} else {
		b, err = TakeBase(ctx, conn, bucket, database, getenv(dumpcmd.EnvDBUsername), time.Now)
		res.BaseKey, res.Key, res.Size, res.SHA256 = b.Key, b.Key, b.Size, b.SHA256
		if err != nil {
			return res, err
		}
		fmt.Fprintf(log, "backup-base: took base backup %s (%d bytes, WAL from %s)\n", b.Key, b.Size, b.StartSegment)
	}
	p, err := Prune(ctx, bucket, database, policy, time.Now())
	res.Pruned, res.FirstRecoverable = p.Bases, p.FirstRecoverable
	if err != nil {
		res.PruneError = err.Error()
	}
	fmt.Fprintf(log, "backup-base: pruned %d base backups and %d log files\n", p.Bases, p.Segments)
	return res, nil
}

// recoverOptions are the options of a recovery in this pod.
func recoverOptions(database string, getenv func(string) string, adjust func(*RecoverOptions)) (RecoverOptions, error) {
	opts := RecoverOptions{Database: database, WorkDir: getenv(pitrcmd.EnvWorkDir), BinDir: getenv(pitrcmd.EnvServerBinDir)}
	if opts.WorkDir == "" {
		opts.WorkDir = "/tmp/steward-recovery"
	}
	self, err := os.Executable()
	if err != nil {
		return opts, err
	}
	opts.FetchCommand = fmt.Sprintf("'%s' %s '%%f' '%%p'", strings.ReplaceAll(self, "'", `'\''`), pitrcmd.CommandFetch)
	if adjust != nil {
		adjust(&opts)
	}
	return opts, nil
}

// verify is verify-pitr: the archive recovered to its latest point in a
// throwaway server, and every table of the database read there.
func verify(ctx context.Context, bucket *blob.Bucket, database string, getenv func(string) string, log io.Writer, adjust func(*RecoverOptions)) (pitrcmd.Result, error) {
	var res pitrcmd.Result
	opts, err := recoverOptions(database, getenv, adjust)
	if err != nil {
		return res, err
	}
	opts.Log = log
	rec, err := Recover(ctx, bucket, opts)
	if err != nil {
		return res, err
	}
	defer rec.Stop()
	res.BaseKey, res.Key, res.RecoveryPoint = rec.Base.Key, rec.Base.Key, rec.Point
	res.Tables, res.Rows, err = rec.readTables(ctx)
	if err != nil {
		return res, fmt.Errorf("reading the recovered database: %w", err)
	}
	fmt.Fprintf(log, "%s: recovered from %s; read %d tables, %d rows\n", pitrcmd.CommandVerify, rec.Base.Key, res.Tables, res.Rows)
	return res, nil
}

// restore is restore-pitr; adjust, when not nil, changes the recovery's
// options (tests run the server as another user than root).
func restore(ctx context.Context, bucket *blob.Bucket, database string, getenv func(string) string, log io.Writer, adjust func(*RecoverOptions)) (pitrcmd.Result, error) {
	var res pitrcmd.Result
	target, err := dump.SourceFromEnv(getenv)
	if err != nil {
		return res, err
	}
	opts, err := recoverOptions(database, getenv, adjust)
	if err != nil {
		return res, err
	}
	opts.Log = log
	if v := getenv(pitrcmd.EnvTargetTime); v != "" && v != pitrcmd.Latest {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return res, fmt.Errorf("%s=%q is not an RFC 3339 time", pitrcmd.EnvTargetTime, v)
		}
		t = t.UTC()
		opts.Target, res.TargetTime = &t, &t
	}
	rec, err := Recover(ctx, bucket, opts)
	if err != nil {
		return res, err
	}
	defer rec.Stop()
	res.BaseKey, res.RecoveryPoint = rec.Base.Key, rec.Point
	// The recovered database goes into the target as a logical dump does.
	transfer := filepath.Join(opts.WorkDir, "transfer")
	if err := os.MkdirAll(transfer, 0o700); err != nil {
		return res, err
	}
	tmp, err := fileblob.OpenBucket(transfer, &fileblob.Options{NoTempDir: true})
	if err != nil {
		return res, err
	}
	defer func() { _ = tmp.Close() }()
	src := rec.source
	src.BinDir = target.BinDir
	rep, err := dump.Backup(ctx, src, tmp, dump.Options{Log: log, TempDir: opts.WorkDir})
	if err != nil {
		return res, fmt.Errorf("dumping the recovered database: %w", err)
	}
	overwrite, _ := strconv.ParseBool(getenv(dumpcmd.EnvRestoreOverwrite))
	m, err := dump.Restore(ctx, tmp, rep.Manifest.Key, target, dump.RestoreOptions{Overwrite: overwrite, Log: log})
	res.Key, res.Size, res.SHA256 = rec.Base.Key, m.Size, m.SHA256
	if err != nil {
		return res, err
	}
	point := "no transaction after the base backup"
	if rec.Point != nil {
		point = "the transaction committed at " + rec.Point.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(log, "restore-pitr: recovered from %s up to %s\n", rec.Base.Key, point)
	return res, nil
}
