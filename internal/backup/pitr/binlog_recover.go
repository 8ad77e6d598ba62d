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
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/scratch"
	mysqlengine "github.com/steward-dev/steward/internal/engine/mysql"
)

// recoverBinlog recovers a MariaDB archive: it starts a throwaway server
// in the work directory, restores the base backup's dump into it, then
// replays, file by file, the archived transactions after the base
// backup's GTID position that began before the target (every one for the
// latest point). The server is left running for the caller.
//
// The binary log's times are whole seconds, so a target of 12:00:10.5
// replays the transactions that began before 12:00:10: the recovery
// point is never after the target, and at most a second before it.
func recoverBinlog(ctx context.Context, bucket *blob.Bucket, base Base, opts RecoverOptions) (*Recovered, error) {
	applied, err := ParseGTIDState(base.GTID)
	if err != nil {
		return nil, fmt.Errorf("base backup %s: %w", base.Key, err)
	}
	chunks, err := listChunks(ctx, bucket, opts.Database)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.WorkDir, "mariadb")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	for _, d := range []string{opts.WorkDir, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if opts.RunAsUID != 0 {
			if err := os.Chown(d, int(opts.RunAsUID), int(opts.RunAsGID)); err != nil {
				return nil, err
			}
		}
	}
	// A statement's row events replay as one BINLOG statement: one
	// statement of many rows makes a packet far above the default limit.
	// The server's output goes where the MariaDB engine's goes (Output is
	// process-wide, and another server may run in this process).
	srv, err := scratch.New(scratch.Config{Type: scratch.MySQL, Dir: filepath.Join(dir, "s"), BinDir: opts.BinDir,
		Database: base.Database, RunAsUID: opts.RunAsUID, RunAsGID: opts.RunAsGID,
		Extra: map[string]string{"max_allowed_packet": "1073741824"}})
	if err != nil {
		return nil, err
	}
	r := &Recovered{Base: base, scratch: srv}
	ok := false
	defer func() {
		if !ok {
			r.Stop()
		}
	}()
	start := time.Now()
	if err := srv.Init(ctx); err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	su := srv.Superuser()
	r.source = dump.Source{Type: dump.TypeMySQL, Host: su.Host, Port: su.Port, Database: su.Database,
		Username: su.Username, Password: su.Password, BinDir: opts.BinDir}
	if _, err := dump.Restore(ctx, bucket, base.Key, r.source,
		dump.RestoreOptions{Log: opts.Log, TempDir: dir}); err != nil {
		return nil, fmt.Errorf("restoring base backup %s: %w", base.Key, err)
	}
	opts.logf("restored base backup %s (GTID position %s) in %s", base.Key, base.GTID, time.Since(start).Round(time.Millisecond))

	// The replay: files in order; in each, the transactions after what is
	// applied, up to the first that began at or after the target.
	var stop time.Time
	if opts.Target != nil {
		stop = opts.Target.UTC().Truncate(time.Second)
	}
	replayed := 0
	reached := false
	for i := 0; i < len(chunks) && !reached; {
		j := i
		for j < len(chunks) && chunks[j].Stream == chunks[i].Stream && chunks[j].File == chunks[i].File {
			j++
		}
		file := chunks[i:j]
		before := file[0].StreamFrom
		if i > 0 && chunks[i-1].Stream == file[0].Stream {
			before = chunks[i-1].To
		}
		i = j
		if applied.Covers(file[len(file)-1].To) {
			continue // every transaction in it is applied
		}
		if !applied.Covers(before) {
			return nil, fmt.Errorf("the archive has a gap: binary log %s of stream %s follows GTID state %s, but the recovery reached only %s",
				file[0].File, file[0].Stream, before, applied)
		}
		local := filepath.Join(dir, "replay.binlog")
		if err := fetchChunks(ctx, bucket, file, local); err != nil {
			return nil, err
		}
		last, point, hit, err := replayRange(local, applied, stop)
		if err != nil {
			return nil, err
		}
		reached = hit
		if last == nil {
			continue
		}
		if err := r.replay(ctx, local, opts, applied, *last); err != nil {
			return nil, err
		}
		applied.Add(*last)
		r.Point = &point
		replayed++
	}
	_ = os.Remove(filepath.Join(dir, "replay.binlog"))
	opts.logf("replayed %d binary log files up to GTID state %s in %s", replayed, applied, time.Since(start).Round(time.Millisecond))
	ok = true
	return r, nil
}

// replayRange finds, in a binary log file, the transactions to replay:
// those not in applied, up to the last that began before stop (zero: no
// limit). last is nil when there is none; point is its time; reached
// reports that a transaction at or after stop was found.
func replayRange(file string, applied GTIDState, stop time.Time) (last *GTID, point time.Time, reached bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, point, false, err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return nil, point, false, err
	}
	_, err = scanBinlog(f, 0, info.Size(), info.Size()+1, func(ev binlogEvent) {
		if reached || ev.GTID == nil || applied.Has(*ev.GTID) {
			return
		}
		if !stop.IsZero() && !ev.Time.Before(stop) {
			reached = true
			return
		}
		g := *ev.GTID
		last, point = &g, ev.Time
	})
	return last, point, reached, err
}

// fetchChunks writes a file's chunks, in order, into local.
func fetchChunks(ctx context.Context, bucket *blob.Bucket, file []chunk, local string) error {
	out, err := os.Create(local)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }()
	for _, c := range file {
		r, err := bucket.NewReader(ctx, c.Key, nil)
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.Key, err)
		}
		gz, err := gzip.NewReader(r)
		if err == nil {
			_, err = io.Copy(out, gz)
		}
		_ = r.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.Key, err)
		}
	}
	return out.Close()
}

// replay applies a file's transactions after applied, up to and with
// last, to the recovering server: mariadb-binlog prints them (of the
// database only: the server's own users and grants are not replayed), and
// the mariadb client runs them as the superuser.
func (r *Recovered) replay(ctx context.Context, local string, opts RecoverOptions, applied GTIDState, last GTID) error {
	prog := func(name string) string {
		if opts.BinDir != "" {
			if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err == nil {
				return filepath.Join(opts.BinDir, name)
			}
		}
		return name
	}
	args := []string{"--database=" + r.Base.Database, "--stop-position=" + last.String()}
	if len(applied) > 0 {
		args = append(args, "--start-position="+applied.String())
	}
	dec := exec.CommandContext(ctx, prog("mariadb-binlog"), append(args, local)...)
	dec.Env = dump.CleanEnv()
	decErr := &tailWriter{}
	dec.Stderr = decErr
	optDir, err := os.MkdirTemp(filepath.Dir(local), "client-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(optDir) }()
	opt, err := dump.MySQLOptionFile(optDir, r.source)
	if err != nil {
		return err
	}
	apply := exec.CommandContext(ctx, prog("mariadb"), "--defaults-file="+opt, "--binary-mode",
		"--max-allowed-packet=1073741824", "--database="+r.Base.Database)
	apply.Env = dump.CleanEnv()
	applyErr := &clientErrors{}
	apply.Stderr = applyErr
	pipe, err := dec.StdoutPipe()
	if err != nil {
		return err
	}
	apply.Stdin = pipe
	if err := apply.Start(); err != nil {
		return fmt.Errorf("starting mariadb: %w", err)
	}
	if err := dec.Start(); err != nil {
		_ = apply.Process.Kill()
		_ = apply.Wait()
		return fmt.Errorf("starting mariadb-binlog: %w", err)
	}
	decWait := dec.Wait()
	applyWait := apply.Wait()
	if decWait != nil {
		return fmt.Errorf("reading the binary log up to %s: %w: %s", last, decWait, decErr.String())
	}
	if applyWait != nil {
		return fmt.Errorf("replaying the binary log up to %s: %w: %s", last, applyWait, applyErr.String())
	}
	return nil
}

// clientErrors keeps the mariadb client's ERROR lines (the first 300
// bytes of each of the first three), not the statements it echoes around
// them, which can be megabytes of a BINLOG statement; without any, the
// output's last bytes.
type clientErrors struct {
	tail   tailWriter
	line   []byte
	errors []string
}

func (c *clientErrors) Write(p []byte) (int, error) {
	_, _ = c.tail.Write(p)
	for _, b := range p {
		if b == '\n' {
			if l := string(c.line); strings.HasPrefix(l, "ERROR") && len(c.errors) < 3 {
				c.errors = append(c.errors, l)
			}
			c.line = c.line[:0]
			continue
		}
		if len(c.line) < 300 {
			c.line = append(c.line, b)
		}
	}
	return len(p), nil
}

func (c *clientErrors) String() string {
	if l := string(c.line); strings.HasPrefix(l, "ERROR") && len(c.errors) < 3 {
		c.errors = append(c.errors, l)
		c.line = c.line[:0]
	}
	if len(c.errors) > 0 {
		return strings.Join(c.errors, "; ")
	}
	return c.tail.String()
}

// tailWriter keeps the last 600 bytes written to it.
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 600 {
		t.b = t.b[len(t.b)-600:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return tail(string(t.b), 600) }

// readMariaDBTables reads every row of every table of the recovered
// database, counting them.
func (r *Recovered) readMariaDBTables(ctx context.Context) (tables int, rows int64, err error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.DBName = r.source.Username, r.source.Password, "tcp", r.source.Database
	cfg.Addr = fmt.Sprintf("%s:%d", r.source.Host, r.source.Port)
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return 0, 0, err
	}
	db := sql.OpenDB(connector)
	defer func() { _ = db.Close() }()
	list, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY 1")
	if err != nil {
		return 0, 0, err
	}
	var names []string
	for list.Next() {
		var n string
		if err := list.Scan(&n); err != nil {
			_ = list.Close()
			return 0, 0, err
		}
		names = append(names, n)
	}
	if err := errors.Join(list.Err(), list.Close()); err != nil {
		return 0, 0, err
	}
	for _, name := range names {
		var n int64
		// Every column of every row is read, not an index.
		q := fmt.Sprintf("SELECT COUNT(*) FROM (SELECT * FROM %s) t", mysqlengine.QuoteIdent(name))
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return tables, rows, fmt.Errorf("table %s: %w", name, err)
		}
		tables++
		rows += n
	}
	return tables, rows, nil
}
