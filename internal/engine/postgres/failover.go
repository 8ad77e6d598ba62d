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

package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/steward-dev/steward/internal/engine"
)

var _ engine.Failover = (*Engine)(nil)

// IsReplica reports whether DataDir has standby.signal: it was last a
// replica's.
func (e *Engine) IsReplica(cfg engine.Config) (bool, error) {
	_, err := os.Stat(filepath.Join(cfg.DataDir, "standby.signal"))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Rejoin winds the stopped DataDir back to where it diverged from the new
// primary at cfg.PrimaryHost with pg_rewind (which first completes crash
// recovery when the server did not stop cleanly), then marks it a standby.
// pg_rewind connects as the superuser; the data checksums initdb enabled
// make it possible.
func (e *Engine) Rejoin(ctx context.Context, cfg engine.Config) error {
	if cfg.PrimaryHost == "" {
		return errors.New("pg_rewind: no primary host")
	}
	if err := prepareDir(cfg, cfg.RunDir); err != nil {
		return err
	}
	passfile, err := writePassfile(cfg)
	if err != nil {
		return err
	}
	source := fmt.Sprintf("host=%s port=%d user=%s dbname=postgres passfile=%s connect_timeout=5",
		conninfoValue(cfg.PrimaryHost), primaryPort(cfg), conninfoValue(cfg.Superuser.Username), conninfoValue(passfile))
	if err := checkpointSource(ctx, cfg); err != nil {
		return err
	}
	// Crash recovery, when needed, runs in single-user mode with the
	// rendered postgresql.conf: its wal_keep_size keeps the WAL back to
	// where the servers diverged, which the checkpoint ending recovery
	// would otherwise recycle (initdb's configuration keeps none), and
	// without which pg_rewind cannot read the old primary's changes.
	if err := e.runTool(ctx, cfg, nil, "pg_rewind",
		"--target-pgdata="+cfg.DataDir,
		"--config-file="+filepath.Join(cfg.ConfigDir, "postgresql.conf"),
		"--source-server="+source,
	); err != nil {
		return err
	}
	return writeStandbySignal(cfg)
}

// checkpointSource makes the new primary write a checkpoint before
// pg_rewind reads its control file. A promotion writes none at once, and
// until one is written the control file names the last timeline the
// server checkpointed on, which after a few promotions in quick succession
// can be several timelines back: pg_rewind then winds the old primary to a
// point on that timeline, and its server refuses to start ("requested
// timeline N does not contain minimum recovery point ... on timeline M").
func checkpointSource(ctx context.Context, cfg engine.Config) error {
	cc, err := superuserConfig(cfg, cfg.PrimaryHost, primaryPort(cfg), 5*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("connecting to the primary for a checkpoint before pg_rewind: %w", err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("a checkpoint on the primary before pg_rewind: %w", err)
	}
	return nil
}

// StoppedPosition reads the shutdown checkpoint's location from
// pg_controldata: everything the stopped server wrote ends there.
func (e *Engine) StoppedPosition(ctx context.Context, cfg engine.Config) (int64, error) {
	cmd, err := e.command(cfg, []string{"LC_ALL=C"}, "pg_controldata", "-D", cfg.DataDir)
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("pg_controldata: %w: %s", err, strings.TrimSpace(out.String()))
	}
	for line := range strings.Lines(out.String()) {
		if v, ok := strings.CutPrefix(line, "Latest checkpoint location:"); ok {
			return ParseLSN(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("pg_controldata printed no latest checkpoint location")
}

// ParseLSN turns a WAL location "16/B374D848" into bytes.
func ParseLSN(s string) (int64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q is not a WAL location", s)
	}
	return int64(h<<32 | l), nil
}

// Promote ends recovery on a running replica (pg_promote, waiting up to a
// minute) and from then on reports it as a primary.
func (e *Engine) Promote(ctx context.Context, srv engine.Server, term int64) error {
	s, ok := srv.(*server)
	if !ok {
		return fmt.Errorf("promote: not a PostgreSQL server: %T", srv)
	}
	c, err := s.connect(ctx, 5*time.Second)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	var current int64
	if err := c.QueryRow(ctx, "SELECT timeline_id FROM pg_control_checkpoint()").Scan(&current); err != nil {
		return fmt.Errorf("promote: reading the timeline: %w", err)
	}
	if err := reserveTimelines(s.cfg, current, term); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	var done bool
	if err := c.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&done); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if !done {
		return errors.New("promote: the server did not leave recovery within 60 s")
	}
	s.mu.Lock()
	s.cfg.PrimaryHost = ""
	s.mu.Unlock()
	// pg_promote removed standby.signal already.
	if err := os.Remove(filepath.Join(s.cfg.DataDir, "standby.signal")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// reserveTimelines makes a promotion start timeline term or later. A
// promotion starts the timeline after the newest whose history file it
// finds in pg_wal, probing upwards from its own; a standby learns of
// another server's newer timeline only while it streams from that server.
// After a failover of a failover (its primary promoted, fenced before this
// standby heard of the new timeline, then lost), the standby would start a
// timeline of the same number as the lost primary's, with another history,
// and pg_rewind, seeing one timeline number on both sides, could not wind
// the lost primary back to where they diverged. (A running replica that
// had followed the lost primary past that point still cannot follow; that
// is not this function's to mend.) Terms never repeat, so each missing
// history file from after current up to term-1 is written as a placeholder
// (a comment, no history): the promotion then starts timeline term. The
// placeholders are not marked ready for archiving.
func reserveTimelines(cfg engine.Config, current, term int64) error {
	wal := filepath.Join(cfg.DataDir, "pg_wal")
	wrote := false
	for tli := current + 1; tli < term; tli++ {
		path := filepath.Join(wal, fmt.Sprintf("%08X.history", tli))
		if _, err := os.Stat(path); err == nil {
			continue
		}
		note := fmt.Sprintf("# Timeline %d is reserved: its number belongs to an earlier role change\n"+
			"# (term %d), which this server did not follow. It has no WAL here.\n", tli, tli)
		if err := writeFileSync(path, []byte(note), 0o600); err != nil {
			return fmt.Errorf("reserving timeline %d: %w", tli, err)
		}
		if err := chown(cfg, path); err != nil {
			return fmt.Errorf("reserving timeline %d: %w", tli, err)
		}
		wrote = true
	}
	if !wrote {
		return nil
	}
	return syncDir(wal)
}

// PrimaryTracksReplicas is true: with wal_sender_timeout (3 s) a primary
// drops a replica that stopped answering from pg_stat_replication.
func (e *Engine) PrimaryTracksReplicas() bool { return true }

// writeFileSync writes a new file and flushes it to disk.
func writeFileSync(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir flushes a directory's entries to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ engine.Repointer = (*server)(nil)

// Repoint makes a running standby follow the primary at host and port
// without a restart (engine.Repointer): the start file's primary_conninfo
// is rewritten and the configuration reloaded, upon which the startup
// process restarts the WAL receiver with it. A standby that has diverged
// from the new primary's history still cannot follow it; the instance
// manager winds it back.
func (s *server) Repoint(ctx context.Context, host string, port int) error {
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	if cfg.PrimaryHost == "" {
		return errors.New("not a replica")
	}
	cfg.PrimaryHost, cfg.PrimaryPort = host, port
	if err := writeStartFile(cfg); err != nil {
		return fmt.Errorf("repoint: %w", err)
	}
	if err := s.Reload(ctx); err != nil {
		return fmt.Errorf("repoint: %w", err)
	}
	s.mu.Lock()
	s.cfg.PrimaryHost, s.cfg.PrimaryPort = host, port
	s.mu.Unlock()
	return nil
}
