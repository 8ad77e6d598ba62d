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
	"archive/tar"

	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/scratch"
)

// RecoverOptions say what to recover and where.
type RecoverOptions struct {
	// Database names the archive (the database's name as the backups
	// record it).
	Database string
	// Target is the time to recover to; nil means as far as the archive
	// reaches.
	Target *time.Time
	// WorkDir holds the recovered data directory and the server's socket.
	WorkDir string
	// BinDir holds postgres; empty means $PATH.
	BinDir string
	// FetchCommand is the restore_command: a shell command with %f and %p
	// that copies an archived file (`steward wal-fetch %f %p`).
	FetchCommand string
	// RunAsUID and RunAsGID, when not zero, are the user the server runs
	// as (it refuses to run as root).
	RunAsUID, RunAsGID uint32
	Log                io.Writer
}

func (o RecoverOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "restore: "+format+"\n", args...)
	}
}

// Recovered is a server recovered to a point, running in the work
// directory until Stop.
type Recovered struct {
	Base Base
	// Point is the commit time of the last transaction replayed; nil
	// when none was replayed after the base backup.
	Point *time.Time
	// Socket is the directory of the server's Unix socket; it trusts
	// every local connection.
	Socket string
	Port   int
	cmd    *exec.Cmd
	exited chan struct{}
	// scratch is MariaDB's recovering server, and source where the
	// recovered database is read.
	scratch *scratch.Server
	source  dump.Source
}

// Stop stops the recovered server.
func (r *Recovered) Stop() {
	if r != nil && r.scratch != nil {
		_ = r.scratch.Close()
		return
	}
	if r == nil || r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// ArchivedUntil is what the archiver last wrote of how far the archive
// reaches; it is a heartbeat, rewritten every few seconds while the
// archive is complete.
type ArchivedUntil struct {
	Time        time.Time `json:"archivedUntil"`
	LastSegment string    `json:"lastSegment,omitempty"`
}

func heartbeatKey(database string) string { return Prefix(database) + "archived-until.json" }

// ReadArchivedUntil reads the archive's heartbeat; ok is false when there
// is none.
func ReadArchivedUntil(ctx context.Context, bucket *blob.Bucket, database string) (ArchivedUntil, bool, error) {
	var a ArchivedUntil
	data, err := bucket.ReadAll(ctx, heartbeatKey(database))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, false, fmt.Errorf("reading %s: %w", heartbeatKey(database), err)
	}
	return a, true, nil
}

// ChooseBase picks the base backup to recover from: the newest that
// ended before target, or the newest of all for the latest point.
func ChooseBase(bases []Base, target *time.Time) (Base, error) {
	if len(bases) == 0 {
		return Base{}, errors.New("there is no base backup: point-in-time recovery starts from one, taken by the next scheduled backup run (or steward.dev/backup-now)")
	}
	if target == nil {
		return bases[len(bases)-1], nil
	}
	for i := len(bases) - 1; i >= 0; i-- {
		if !bases[i].EndTime.After(*target) {
			return bases[i], nil
		}
	}
	return Base{}, fmt.Errorf("no base backup ended before %s: the earliest recoverable time is %s",
		target.UTC().Format(time.RFC3339), bases[0].EndTime.UTC().Format(time.RFC3339))
}

// errTargetNotReached is PostgreSQL ending a recovery at the end of the
// archive without passing the target time: no transaction committed
// after the target was archived.
var errTargetNotReached = errors.New("recovery ended before the target time")

// Recover recovers the database's archive into opts.WorkDir and leaves
// the server running, promoted, for the caller to read. A target time
// that the archive covers but that no later commit passes (a quiet
// database) is reached by replaying the whole archive: the state at the
// target is the state at the archive's end.
func Recover(ctx context.Context, bucket *blob.Bucket, opts RecoverOptions) (*Recovered, error) {
	bases, err := ListBases(ctx, bucket, opts.Database)
	if err != nil {
		return nil, err
	}
	base, err := ChooseBase(bases, opts.Target)
	if err != nil {
		return nil, err
	}
	if opts.Target != nil {
		hb, ok, err := ReadArchivedUntil(ctx, bucket, opts.Database)
		if err != nil {
			return nil, err
		}
		if !ok || hb.Time.Before(*opts.Target) {
			reach := "the archive has no record of how far it reaches"
			if ok {
				reach = "the archive reaches " + hb.Time.UTC().Format(time.RFC3339Nano)
			}
			return nil, fmt.Errorf("cannot recover to %s: %s", opts.Target.UTC().Format(time.RFC3339Nano), reach)
		}
	}
	if strings.HasSuffix(base.Key, dumpSuffix) {
		return recoverBinlog(ctx, bucket, base, opts)
	}
	r, err := recoverFrom(ctx, bucket, base, opts, opts.Target)
	if errors.Is(err, errTargetNotReached) {
		opts.logf("no transaction after %s is archived: replaying the whole archive, whose end is the state at that time",
			opts.Target.UTC().Format(time.RFC3339Nano))
		r, err = recoverFrom(ctx, bucket, base, opts, nil)
	}
	return r, err
}

func recoverFrom(ctx context.Context, bucket *blob.Bucket, base Base, opts RecoverOptions, target *time.Time) (*Recovered, error) {
	data := filepath.Join(opts.WorkDir, "pgdata")
	sock := filepath.Join(opts.WorkDir, "run")
	if err := os.RemoveAll(data); err != nil {
		return nil, err
	}
	for _, d := range []string{opts.WorkDir, data, sock} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if opts.RunAsUID != 0 {
			if err := os.Chown(d, int(opts.RunAsUID), int(opts.RunAsGID)); err != nil {
				return nil, err
			}
		}
	}
	start := time.Now()
	if err := unpack(ctx, bucket, base, data, opts); err != nil {
		return nil, err
	}
	opts.logf("unpacked base backup %s (%d bytes) in %s", base.Key, base.Size, time.Since(start).Round(time.Millisecond))
	_ = os.Remove(filepath.Join(data, "standby.signal"))
	_ = os.Remove(filepath.Join(data, "postmaster.pid"))
	if err := writeOwned(filepath.Join(data, "recovery.signal"), "", opts); err != nil {
		return nil, err
	}
	conf := filepath.Join(opts.WorkDir, "postgresql.conf")
	hba := filepath.Join(opts.WorkDir, "pg_hba.conf")
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	settings := [][2]string{
		{"listen_addresses", ""},
		{"unix_socket_directories", sock},
		{"port", "5432"},
		{"hba_file", hba},
		{"ident_file", hba},
		{"hot_standby", "off"},
		{"archive_mode", "off"},
		{"logging_collector", "off"},
		{"shared_buffers", "64MB"},
		{"max_connections", "20"},
		{"synchronous_standby_names", ""},
		{"restore_command", opts.FetchCommand},
		{"recovery_target_action", "promote"},
		{"recovery_target_timeline", "latest"},
	}
	if target != nil {
		settings = append(settings, [2]string{"recovery_target_time", target.UTC().Format("2006-01-02 15:04:05.999999+00")})
	}
	var b strings.Builder
	b.WriteString("# Written by Steward for a point-in-time recovery.\n")
	for _, kv := range settings {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], quote(kv[1]))
	}
	if err := writeOwned(conf, b.String(), opts); err != nil {
		return nil, err
	}
	if err := writeOwned(hba, "local all all trust\n", opts); err != nil {
		return nil, err
	}
	prog := "postgres"
	if opts.BinDir != "" {
		prog = filepath.Join(opts.BinDir, "postgres")
	}
	logPath := filepath.Join(opts.WorkDir, "recovery.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(prog, "-D", data, "-c", "config_file="+conf)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = dump.CleanEnv()
	if opts.RunAsUID != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: opts.RunAsUID, Gid: opts.RunAsGID}}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	r := &Recovered{Base: base, Socket: sock, Port: 5432, cmd: cmd, exited: make(chan struct{}),
		source: dump.Source{Type: dump.TypePostgreSQL, Host: sock, Port: 5432, Database: base.Database, Username: base.Owner}}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	logTail := func() string {
		data, _ := os.ReadFile(logPath)
		return tail(string(data), 800)
	}
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			r.Stop()
			return nil, fmt.Errorf("recovering: %w: %s", ctx.Err(), logTail())
		case <-r.exited:
			msg := logTail()
			if strings.Contains(msg, "recovery ended before configured recovery target was reached") {
				return nil, errTargetNotReached
			}
			return nil, fmt.Errorf("the recovering server stopped: %s", msg)
		case <-time.After(time.Second):
		}
		point, done, err := r.recovered(ctx, base)
		if err != nil || !done {
			continue
		}
		r.Point = point
		opts.logf("recovered from base backup %s in %s", base.Key, time.Since(started).Round(time.Millisecond))
		return r, nil
	}
}

// recovered reports whether the server finished its recovery, and the
// commit time of the last transaction it replayed.
func (r *Recovered) recovered(ctx context.Context, base Base) (*time.Time, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		r.Socket, r.Port, quoteConninfo(base.Owner), quoteConninfo(base.Database)))
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var inRecovery bool
	var point *time.Time
	if err := conn.QueryRow(cctx, "SELECT pg_is_in_recovery(), pg_last_xact_replay_timestamp()").Scan(&inRecovery, &point); err != nil {
		return nil, false, err
	}
	if point != nil {
		t := point.UTC()
		point = &t
	}
	return point, !inRecovery, nil
}

// readTables reads every row of every table of the recovered database,
// counting them: a page the recovery left unreadable fails the read.
func (r *Recovered) readTables(ctx context.Context) (tables int, rows int64, err error) {
	if r.scratch != nil {
		return r.readMariaDBTables(ctx)
	}
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		r.Socket, r.Port, quoteConninfo(r.Base.Owner), quoteConninfo(r.Base.Database)))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = conn.Close(ctx) }()
	list, err := conn.Query(ctx, `SELECT format('%I.%I', schemaname, tablename) FROM pg_tables
		WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	if err != nil {
		return 0, 0, err
	}
	names, err := pgx.CollectRows(list, pgx.RowTo[string])
	if err != nil {
		return 0, 0, err
	}
	for _, name := range names {
		var n int64
		// count(*) of a whole row reads every tuple, not an index.
		if err := conn.QueryRow(ctx, "SELECT count(t.*) FROM "+name+" t").Scan(&n); err != nil {
			return tables, rows, fmt.Errorf("table %s: %w", name, err)
		}
		tables++
		rows += n
	}
	return tables, rows, nil
}

func quoteConninfo(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func writeOwned(p, content string, opts RecoverOptions) error {
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		return err
	}
	if opts.RunAsUID != 0 {
		return os.Chown(p, int(opts.RunAsUID), int(opts.RunAsGID))
	}
	return nil
}

// unpack reads a base backup, checks its checksum, and unpacks it into
// dir.
func unpack(ctx context.Context, bucket *blob.Bucket, base Base, dir string, opts RecoverOptions) error {
	r, err := bucket.NewReader(ctx, base.Key, nil)
	if err != nil {
		return fmt.Errorf("reading base backup %s: %w", base.Key, err)
	}
	defer func() { _ = r.Close() }()
	sum := sha256.New()
	gz, err := gzip.NewReader(io.TeeReader(r, sum))
	if err != nil {
		return fmt.Errorf("reading base backup %s: %w", base.Key, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading base backup %s: %w", base.Key, err)
		}
		name := filepath.Clean(h.Name)
		if name == "." {
			continue
		}
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("base backup %s holds %q, outside its directory", base.Key, h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				_ = f.Close()
				return fmt.Errorf("reading base backup %s: %w", base.Key, err)
			}
			if err := f.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		default:
			continue
		}
		if opts.RunAsUID != 0 {
			if err := os.Lchown(p, int(opts.RunAsUID), int(opts.RunAsGID)); err != nil {
				return err
			}
		}
	}
	// Read what is left (the gzip trailer) into the checksum.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, sum)); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != base.SHA256 {
		return fmt.Errorf("base backup %s is corrupted: its SHA-256 is %s, its manifest says %s", base.Key, got, base.SHA256)
	}
	return nil
}
