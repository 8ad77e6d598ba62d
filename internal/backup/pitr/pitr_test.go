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
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/engine/postgres"
	"github.com/steward-dev/steward/internal/testenv/realserver"
)

// envFetch makes the test binary act as `steward wal-fetch`, the
// restore_command of the recoveries the tests run.
const envFetch = "STEWARD_PITR_TEST_FETCH"

func TestMain(m *testing.M) {
	if os.Getenv(envFetch) == "1" {
		os.Exit(Main(context.Background(), pitrcmd.CommandFetch, os.Args[1:], os.Getenv, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestSegmentNames(t *testing.T) {
	lsn, err := ParseLSN("16/B374D848")
	if err != nil {
		t.Fatal(err)
	}
	s := SegmentAt(1, lsn)
	if got, want := s.Name(), "0000000100000016000000B3"; got != want {
		t.Errorf("segment of 16/B374D848 = %s, want %s", got, want)
	}
	back, ok := ParseSegment(s.Name())
	if !ok || back != s {
		t.Errorf("ParseSegment(%s) = %+v, %v", s.Name(), back, ok)
	}
	for _, bad := range []string{"", "0000000100000016000000B", "0000000100000016000000B3.partial", "00000002.history", "0000000100000016000000g3"} {
		if _, ok := ParseSegment(bad); ok {
			t.Errorf("ParseSegment(%q) accepted", bad)
		}
	}
	if _, err := ParseLSN("16B374D848"); err == nil {
		t.Error("ParseLSN accepted a position without a slash")
	}
}

func TestChooseBase(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 11, 26, 12, m, 0, 0, time.UTC) }
	bases := []Base{{Key: "a", EndTime: at(1)}, {Key: "b", EndTime: at(10)}, {Key: "c", EndTime: at(20)}}
	for _, c := range []struct {
		target *time.Time
		want   string
	}{
		{nil, "c"}, {ptr(at(10)), "b"}, {ptr(at(15)), "b"}, {ptr(at(30)), "c"}, {ptr(at(0)), ""},
	} {
		got, err := ChooseBase(bases, c.target)
		if c.want == "" {
			if err == nil || !strings.Contains(err.Error(), "earliest recoverable time is 2026-11-26T12:01:00Z") {
				t.Errorf("target %v: err = %v, want the earliest recoverable time", c.target, err)
			}
			continue
		}
		if err != nil || got.Key != c.want {
			t.Errorf("target %v: got %q, %v; want %q", c.target, got.Key, err, c.want)
		}
	}
	if _, err := ChooseBase(nil, nil); err == nil {
		t.Error("no base backup: no error")
	}
}

func ptr[T any](v T) *T { return &v }

type pgServer struct {
	cfg engine.Config
	bin string
}

func secret(t *testing.T) string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw" + hex.EncodeToString(b) + `'"\:# x`
}

var serverOutput = &lockedBuffer{}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// startPostgres starts a server tuned as a Database's is: with
// wal_keep_size 256MB, the WAL the archiver may still need is kept.
func startPostgres(t *testing.T) *pgServer { return startPostgresTuned(t, 512<<20) }

// startPostgresTuned starts a server tuned for memoryBytes; zero leaves
// PostgreSQL's defaults, which keep no WAL for an archiver.
func startPostgresTuned(t *testing.T, memoryBytes int64) *pgServer {
	t.Helper()
	bin := realserver.Require(t, realserver.Binaries{
		Package: "postgresql-15",
		Dirs:    []string{"/usr/lib/postgresql/15/bin"},
		Names:   []string{"initdb", "postgres", "pg_dump", "pg_restore", "pg_basebackup", "pg_receivewal"},
	})
	uid, gid := realserver.Unprivileged(t, "postgres")
	dir := realserver.TempDir(t, uid, gid)
	cfg := engine.Config{
		DataDir:     filepath.Join(realserver.Subdir(t, dir, "volume", 0o755, uid, gid), "pgdata"),
		ConfigDir:   realserver.Subdir(t, dir, "config", 0o755, 0, 0),
		RunDir:      realserver.Subdir(t, dir, "run", 0o700, uid, gid),
		BinDir:      bin,
		Host:        "127.0.0.1",
		Port:        realserver.FreePort(t),
		ServerID:    1,
		Superuser:   engine.Credentials{Username: "postgres", Password: secret(t)},
		Owner:       engine.Credentials{Username: "app owner", Password: secret(t)},
		Replication: engine.Credentials{Username: "replicator", Password: secret(t)},
		Database:    "app-db",
		RunAsUID:    uid,
		RunAsGID:    gid,
	}
	realserver.StartEngine(t, &postgres.Engine{Output: serverOutput}, cfg, engine.Tuning{Port: cfg.Port, MemoryBytes: memoryBytes})
	return &pgServer{cfg: cfg, bin: bin}
}

func (s *pgServer) replication() Conn {
	return Conn{Host: "127.0.0.1", Port: s.cfg.Port, Username: s.cfg.Replication.Username,
		Password: s.cfg.Replication.Password, BinDir: s.bin}
}

func connect(t *testing.T, conninfo string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, conninfo)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func (s *pgServer) conn(t *testing.T, user, password, database string) *pgx.Conn {
	return connect(t, fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable",
		s.cfg.Port, quoteConninfo(user), quoteConninfo(password), quoteConninfo(database)))
}

// world makes a directory every user may use: the recovering server
// (another user) fetches from the bucket and runs the test binary.
func world(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "steward-pitr-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fetchCommand copies the test binary where the server's user can run it
// and returns the restore_command that runs it as wal-fetch.
func fetchCommand(t *testing.T, bucketDir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := world(t)
	bin := filepath.Join(dir, "steward-test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s=1 %s=file %s=%s %s=%s '%s' '%%f' '%%p'", envFetch,
		dumpcmd.EnvDestinationType, dumpcmd.EnvDestinationBucket, bucketDir, pitrcmd.EnvArchive, "app-db", bin)
}

// TestPointInTimeRecovery archives a real server's WAL, writes rows around
// a time T, and recovers to T-1s (without the row written at T), T+1s
// (with it) and the latest point (every acknowledged row), each into a new
// database through restore-pitr's logical transfer.
func TestPointInTimeRecovery(t *testing.T) {
	srv := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bucketDir := world(t)
	bucket, err := fileblob.OpenBucket(bucketDir, &fileblob.Options{NoTempDir: true, DirFileMode: 0o777})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()

	owner := srv.conn(t, srv.cfg.Owner.Username, srv.cfg.Owner.Password, "app-db")
	if _, err := owner.Exec(ctx, `CREATE TABLE marks (id int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	insert := func(id int) time.Time {
		t.Helper()
		var at time.Time
		if err := owner.QueryRow(ctx, `INSERT INTO marks (id) VALUES ($1) RETURNING at`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	insert(1) // before the base backup

	archiveCtx, stopArchive := context.WithCancel(ctx)
	var archiveLog lockedBuffer
	a := &Archiver{Conn: srv.replication(), Bucket: bucket, Database: "app-db", Dir: filepath.Join(world(t), "wal"), Log: &archiveLog, Interval: 500 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(archiveCtx, nil) }()
	defer func() { stopArchive(); <-done }()

	base, err := TakeBase(ctx, srv.replication(), bucket, "app-db", srv.cfg.Owner.Username, time.Now)
	if err != nil {
		t.Fatalf("TakeBase: %v", err)
	}
	t.Logf("base backup %s: %d bytes, WAL from %s (%s)", base.Key, base.Size, base.StartSegment, base.StartLSN)

	insert(2)
	time.Sleep(1500 * time.Millisecond)
	target := insert(3) // the row written at T
	time.Sleep(1500 * time.Millisecond)
	insert(4)
	// A segment switch, as a busy server's would, so that completed
	// segments are archived too, not only the partial one.
	if _, err := srv.conn(t, srv.cfg.Superuser.Username, srv.cfg.Superuser.Password, "postgres").Exec(ctx, `SELECT pg_switch_wal()`); err != nil {
		t.Fatal(err)
	}
	insert(5)
	acked := time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		hb, ok, err := ReadArchivedUntil(ctx, bucket, "app-db")
		if err == nil && ok && hb.Time.After(acked) {
			t.Logf("archived until %s, %s after the last acknowledged row", hb.Time.Format(time.RFC3339Nano), hb.Time.Sub(acked))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the archive never reached %s (heartbeat %+v, %v, %v); status %+v; log:\n%s", acked, hb, ok, err, a.Status(), archiveLog.b.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if st := a.Status(); !st.Streaming || st.LastSegment == "" || st.ArchivedUntil == nil {
		t.Errorf("archiver status %+v: want streaming, a last segment and an end", st)
	}

	fetch := fetchCommand(t, bucketDir)
	uid, gid := srv.cfg.RunAsUID, srv.cfg.RunAsGID
	for i, c := range []struct {
		name   string
		target *time.Time
		want   []int
	}{
		{"T-1s", ptr(target.Add(-time.Second)), []int{1, 2}},
		{"T+1s", ptr(target.Add(time.Second)), []int{1, 2, 3}},
		{"latest", nil, []int{1, 2, 3, 4, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			rec, err := Recover(ctx, bucket, RecoverOptions{Database: "app-db", Target: c.target, WorkDir: filepath.Join(world(t), "work"),
				BinDir: srv.bin, FetchCommand: fetch, RunAsUID: uid, RunAsGID: gid, Log: t.Output()})
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			defer rec.Stop()
			took := time.Since(start)
			conn := connect(t, fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", rec.Socket, rec.Port,
				quoteConninfo(srv.cfg.Owner.Username), quoteConninfo("app-db")))
			got := ids(t, conn)
			if !slices.Equal(got, c.want) {
				t.Errorf("rows after recovering to %s: %v, want %v", c.name, got, c.want)
			}
			if rec.Point == nil {
				t.Fatal("no recovery point reported")
			}
			if c.target != nil && rec.Point.After(*c.target) {
				t.Errorf("recovery point %s is after the target %s", rec.Point, c.target)
			}
			t.Logf("recovered to %s in %s: point %s, rows %v", c.name, took.Round(time.Millisecond), rec.Point.Format(time.RFC3339Nano), got)
			_ = i
		})
	}

	// restore-pitr, the command a Restore's pod runs, into a new database.
	t.Run("restore-pitr", func(t *testing.T) {
		su := srv.conn(t, srv.cfg.Superuser.Username, srv.cfg.Superuser.Password, "postgres")
		if _, err := su.Exec(ctx, `CREATE DATABASE restored OWNER "app owner"`); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(world(t), "work")
		termination := filepath.Join(world(t), "result")
		env := map[string]string{
			dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: bucketDir, pitrcmd.EnvArchive: "app-db",
			dumpcmd.EnvDBType: dump.TypePostgreSQL, dumpcmd.EnvDBHost: "127.0.0.1", dumpcmd.EnvDBPort: fmt.Sprint(srv.cfg.Port),
			dumpcmd.EnvDBName: "restored", dumpcmd.EnvDBUsername: srv.cfg.Owner.Username, dumpcmd.EnvDBPassword: srv.cfg.Owner.Password,
			dumpcmd.EnvDBBinDir: srv.bin, pitrcmd.EnvServerBinDir: srv.bin, pitrcmd.EnvWorkDir: work,
			pitrcmd.EnvTargetTime: target.Add(time.Second).Format(time.RFC3339Nano), dumpcmd.EnvTerminationLog: termination,
		}
		// As Main runs it, but with the server as the postgres user (the
		// tests run as root, which the server refuses) and the test
		// binary as wal-fetch.
		var log bytes.Buffer
		r, err := restore(ctx, bucket, "app-db", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
			o.RunAsUID, o.RunAsGID, o.FetchCommand = uid, gid, fetch
		})
		if err != nil || r.RecoveryPoint == nil || r.BaseKey != base.Key {
			t.Fatalf("restore-pitr: %+v, %v\n%s", r, err, log.String())
		}
		_ = termination
		got := ids(t, srv.conn(t, srv.cfg.Owner.Username, srv.cfg.Owner.Password, "restored"))
		if !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("rows restored to T+1s: %v", got)
		}
	})
	// verify-pitr, a verification's recovery to the latest point.
	t.Run("verify-pitr", func(t *testing.T) {
		env := map[string]string{pitrcmd.EnvServerBinDir: srv.bin, pitrcmd.EnvWorkDir: filepath.Join(world(t), "work")}
		var log bytes.Buffer
		r, err := verify(ctx, bucket, "app-db", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
			o.RunAsUID, o.RunAsGID, o.FetchCommand = uid, gid, fetch
		})
		if err != nil || r.Tables != 1 || r.Rows != 5 || r.RecoveryPoint == nil {
			t.Fatalf("verify-pitr: %+v, %v\n%s", r, err, log.String())
		}
	})
	for _, pw := range []string{srv.cfg.Replication.Password, srv.cfg.Owner.Password} {
		if strings.Contains(archiveLog.b.String(), pw) {
			t.Error("the archiver's log holds a password")
		}
	}
	_ = blob.Bucket{}
	_ = io.Discard
}

func ids(t *testing.T, c *pgx.Conn) []int {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT id FROM marks ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestArchiveGap: an archive whose next segment the primary no longer has
// reports a gap, streams again from the primary's position, and forgets
// the gap once a base backup starts after it.
func TestArchiveGap(t *testing.T) {
	srv := startPostgresTuned(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bucket, err := fileblob.OpenBucket(world(t), &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	// The archive ends at segment 1, as an archiver down for long left it.
	if err := bucket.WriteAll(ctx, walKey("app-db", "000000010000000000000001"), nil, nil); err != nil {
		t.Fatal(err)
	}
	su := srv.conn(t, srv.cfg.Superuser.Username, srv.cfg.Superuser.Password, "app-db")
	for range 4 {
		if _, err := su.Exec(ctx, `CREATE TABLE IF NOT EXISTS filler AS SELECT 1 AS x; SELECT pg_switch_wal(); CHECKPOINT`); err != nil {
			t.Fatal(err)
		}
	}
	// The gap is made; from now on the server keeps WAL as a Database's
	// does, so that the base backup's checkpoint makes no second gap.
	if _, err := su.Exec(ctx, `ALTER SYSTEM SET wal_keep_size = '256MB'`); err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	a := &Archiver{Conn: srv.replication(), Bucket: bucket, Database: "app-db", Dir: filepath.Join(world(t), "wal"), Log: &log, Interval: 500 * time.Millisecond}
	archiveCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(archiveCtx, nil) }()
	defer func() { stop(); <-done }()
	wait := func(what string, ok func(pitrcmd.Status) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !ok(a.Status()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %+v\n%s", what, a.Status(), log.b.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wait("a gap, then streaming again", func(s pitrcmd.Status) bool { return s.Gap != "" && s.Streaming && s.ArchivedUntil != nil })
	t.Logf("gap: %s", a.Status().Gap)
	if _, err := TakeBase(ctx, srv.replication(), bucket, "app-db", srv.cfg.Owner.Username, time.Now); err != nil {
		t.Fatal(err)
	}
	wait("the gap forgotten after a base backup", func(s pitrcmd.Status) bool { return s.Gap == "" })
}

// largeEnv, set to 1, runs TestPointInTimeRecoveryLarge.
const largeEnv = "STEWARD_PITR_LARGE"

// TestPointInTimeRecoveryLarge measures a point-in-time restore of a
// database of about 100 MB, with about 40 MB of WAL written after its base
// backup, into another database through restore-pitr. It takes minutes:
// it runs only with STEWARD_PITR_LARGE=1.
func TestPointInTimeRecoveryLarge(t *testing.T) {
	if os.Getenv(largeEnv) != "1" {
		t.Skipf("skipping: it takes minutes; %s=1 runs it", largeEnv)
	}
	srv := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bucketDir := world(t)
	bucket, err := fileblob.OpenBucket(bucketDir, &fileblob.Options{NoTempDir: true, DirFileMode: 0o777})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	owner := srv.conn(t, srv.cfg.Owner.Username, srv.cfg.Owner.Password, "app-db")
	began := time.Now()
	if _, err := owner.Exec(ctx, `CREATE TABLE big AS SELECT g AS id, md5(g::text) || repeat('x', 40) AS body FROM generate_series(1, 1000000) g`); err != nil {
		t.Fatal(err)
	}
	var size string
	_ = owner.QueryRow(ctx, `SELECT pg_size_pretty(pg_database_size(current_database()))`).Scan(&size)
	t.Logf("filled %s in %v", size, time.Since(began).Round(time.Millisecond))

	archiveCtx, stopArchive := context.WithCancel(ctx)
	a := &Archiver{Conn: srv.replication(), Bucket: bucket, Database: "app-db", Dir: filepath.Join(world(t), "wal"), Interval: time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(archiveCtx, nil) }()
	defer func() { stopArchive(); <-done }()
	base, err := TakeBase(ctx, srv.replication(), bucket, "app-db", srv.cfg.Owner.Username, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base backup: %d bytes stored in %v", base.Size, time.Since(base.StartTime).Round(time.Millisecond))
	if _, err := owner.Exec(ctx, `UPDATE big SET body = md5(body) WHERE id % 4 = 0`); err != nil {
		t.Fatal(err)
	}
	var want int64
	_ = owner.QueryRow(ctx, `SELECT count(*) FROM big WHERE length(body) = 32`).Scan(&want)
	acked := time.Now()
	var lag time.Duration
	for {
		hb, ok, _ := ReadArchivedUntil(ctx, bucket, "app-db")
		if ok && hb.Time.After(acked) {
			lag = time.Since(acked)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the archive covered the last write %v after it", lag.Round(time.Millisecond))

	su := srv.conn(t, srv.cfg.Superuser.Username, srv.cfg.Superuser.Password, "postgres")
	if _, err := su.Exec(ctx, `CREATE DATABASE restored OWNER "app owner"`); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		dumpcmd.EnvDBType: dump.TypePostgreSQL, dumpcmd.EnvDBHost: "127.0.0.1", dumpcmd.EnvDBPort: fmt.Sprint(srv.cfg.Port),
		dumpcmd.EnvDBName: "restored", dumpcmd.EnvDBUsername: srv.cfg.Owner.Username, dumpcmd.EnvDBPassword: srv.cfg.Owner.Password,
		dumpcmd.EnvDBBinDir: srv.bin, pitrcmd.EnvServerBinDir: srv.bin, pitrcmd.EnvWorkDir: filepath.Join(world(t), "work"), pitrcmd.EnvTargetTime: pitrcmd.Latest,
	}
	fetch := fetchCommand(t, bucketDir)
	var log bytes.Buffer
	began = time.Now()
	r, err := restore(ctx, bucket, "app-db", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
		o.RunAsUID, o.RunAsGID, o.FetchCommand = srv.cfg.RunAsUID, srv.cfg.RunAsGID, fetch
	})
	took := time.Since(began)
	if err != nil {
		t.Fatalf("restore-pitr: %v\n%s", err, log.String())
	}
	var got int64
	_ = srv.conn(t, srv.cfg.Owner.Username, srv.cfg.Owner.Password, "restored").QueryRow(ctx, `SELECT count(*) FROM big WHERE length(body) = 32`).Scan(&got)
	if got != want {
		t.Errorf("restored %d updated rows, want %d", got, want)
	}
	t.Logf("restore-pitr of the %s database to the latest point: %v in all (recovery point %v)\n%s", size, took.Round(time.Millisecond), r.RecoveryPoint, log.String())
}
