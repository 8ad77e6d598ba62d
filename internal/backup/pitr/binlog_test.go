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
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gocloud.dev/blob/fileblob"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/backup/retention"
	"github.com/steward-dev/steward/internal/engine"
	mysqlengine "github.com/steward-dev/steward/internal/engine/mysql"
	"github.com/steward-dev/steward/internal/testenv/realserver"
)

func TestGTIDState(t *testing.T) {
	s, err := ParseGTIDState("0-1-9,1-3-4")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "0-1-9,1-3-4" {
		t.Errorf("String() = %q", got)
	}
	if !s.Has(GTID{Domain: 0, Server: 2, Seq: 9}) || s.Has(GTID{Domain: 0, Server: 1, Seq: 10}) || s.Has(GTID{Domain: 2, Seq: 1}) {
		t.Error("Has: wrong")
	}
	o, _ := ParseGTIDState("0-2-8")
	if !s.Covers(o) || o.Covers(s) {
		t.Error("Covers: wrong")
	}
	empty, err := ParseGTIDState("")
	if err != nil || len(empty) != 0 || !s.Covers(empty) || empty.String() != "" {
		t.Errorf("empty state: %v, %v", empty, err)
	}
	for _, bad := range []string{"0-1", "a-1-2", "0-1-2-3", "0-1-2,x"} {
		if _, err := ParseGTIDState(bad); err == nil {
			t.Errorf("ParseGTIDState(%q) accepted", bad)
		}
	}
	c, ok := parseChunkKey("appdb", chunkKey("appdb", streamName(time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC), o), "binlog.000002", 4096, s))
	if !ok || c.File != "binlog.000002" || c.Offset != 4096 || c.To.String() != s.String() || c.StreamFrom.String() != "0-2-8" {
		t.Errorf("chunk key round trip: %+v, %v", c, ok)
	}
}

type mariaServer struct {
	cfg engine.Config
	bin string
}

func startMariaDBPrimary(t *testing.T) *mariaServer {
	t.Helper()
	bin := realserver.Require(t, realserver.Binaries{
		Package: "mariadb-server",
		Dirs:    []string{"/usr/bin", "/usr/sbin"},
		Names:   []string{"mariadb-dump", "mariadb", "mariadb-binlog"},
	})
	realserver.Require(t, realserver.Binaries{Package: "mariadb-server", Dirs: []string{"/usr/sbin", "/usr/bin"}, Names: []string{"mariadbd"}})
	uid, gid := realserver.Unprivileged(t, "mysql")
	dir := realserver.TempDir(t, uid, gid)
	cfg := engine.Config{
		DataDir:     realserver.Subdir(t, dir, "data", 0o750, uid, gid),
		ConfigDir:   realserver.Subdir(t, dir, "config", 0o755, 0, 0),
		RunDir:      realserver.Subdir(t, dir, "run", 0o750, uid, gid),
		Host:        "127.0.0.1",
		Port:        realserver.FreePort(t),
		ServerID:    1,
		Superuser:   engine.Credentials{Username: "root", Password: secret(t)},
		Owner:       engine.Credentials{Username: "app", Password: secret(t)},
		Replication: engine.Credentials{Username: "replicator", Password: secret(t)},
		Database:    "appdb",
		RunAsUID:    uid,
		RunAsGID:    gid,
	}
	mysqlengine.Output = serverOutput
	realserver.StartEngine(t, mysqlengine.MariaDB, cfg, engine.Tuning{Port: cfg.Port})
	return &mariaServer{cfg: cfg, bin: bin}
}

func (s *mariaServer) replication() Conn {
	return Conn{Host: "127.0.0.1", Port: s.cfg.Port, Username: s.cfg.Replication.Username,
		Password: s.cfg.Replication.Password, BinDir: s.bin}
}

func (s *mariaServer) owner() dump.Source {
	return dump.Source{Type: dump.TypeMySQL, Host: "127.0.0.1", Port: s.cfg.Port, Database: "appdb",
		Username: s.cfg.Owner.Username, Password: s.cfg.Owner.Password, BinDir: s.bin}
}

func openMySQL(t *testing.T, src dump.Source) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.DBName = src.Username, src.Password, "tcp", src.Database
	cfg.Addr = fmt.Sprintf("%s:%d", src.Host, src.Port)
	cfg.ParseTime = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mariaIDs(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query("SELECT id FROM marks ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestMariaDBPointInTimeRecovery archives a real MariaDB server's binary
// log, writes rows around a time T, and recovers to T-1s (without the row
// written at T), T+1s (with it) and the latest point (every acknowledged
// row); then across a restart of the archiver (a second stream that
// overlaps the first) and a prune that keeps one base backup.
func TestMariaDBPointInTimeRecovery(t *testing.T) {
	srv := startMariaDBPrimary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bucketDir := world(t)
	bucket, err := fileblob.OpenBucket(bucketDir, &fileblob.Options{NoTempDir: true, DirFileMode: 0o777})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	owner := openMySQL(t, srv.owner())
	if _, err := owner.Exec("CREATE TABLE marks (id int PRIMARY KEY, at datetime(6) NOT NULL DEFAULT now(6))"); err != nil {
		t.Fatal(err)
	}
	insert := func(id int) time.Time {
		t.Helper()
		if _, err := owner.Exec("INSERT INTO marks (id) VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	insert(1) // before the archive and the base backup

	var archiveLog lockedBuffer
	startArchiver := func() (stop func()) {
		actx, cancel := context.WithCancel(ctx)
		a := &Archiver{Engine: EngineMariaDB, Conn: srv.replication(), Bucket: bucket, Database: "appdb",
			Dir: filepath.Join(world(t), "binlog"), Log: &archiveLog, Interval: 500 * time.Millisecond}
		done := make(chan struct{})
		go func() { defer close(done); _ = a.Run(actx, nil) }()
		deadline := time.Now().Add(time.Minute)
		for !a.Status().Streaming {
			if time.Now().After(deadline) {
				t.Fatalf("the archiver is not streaming: %+v\n%s", a.Status(), archiveLog.b.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		return func() { cancel(); <-done }
	}
	waitArchived := func(acked time.Time) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			hb, ok, err := ReadArchivedUntil(ctx, bucket, "appdb")
			if err == nil && ok && hb.Time.After(acked) {
				t.Logf("archived until %s, %s after the last acknowledged row", hb.Time.Format(time.RFC3339Nano), hb.Time.Sub(acked).Round(time.Millisecond))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the archive never reached %s (heartbeat %+v, %v, %v); log:\n%s", acked, hb, ok, err, archiveLog.b.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	stopArchiver := startArchiver()
	defer func() { stopArchiver() }()

	var baseLog bytes.Buffer
	base, err := TakeDumpBase(ctx, srv.owner(), bucket, "appdb", &baseLog)
	if err != nil {
		t.Fatalf("TakeDumpBase: %v\n%s", err, baseLog.String())
	}
	if base.GTID == "" || !strings.HasSuffix(base.Key, dumpSuffix) {
		t.Fatalf("base backup %+v: want a dump with a GTID position", base)
	}
	t.Logf("base backup %s: %d bytes, GTID position %s", base.Key, base.Size, base.GTID)

	// The binary log's times are whole seconds: 2.5 s apart, the rows
	// around T fall on either side of T-1s and T+1s whatever T's fraction.
	insert(2)
	time.Sleep(2500 * time.Millisecond)
	target := insert(3)
	time.Sleep(2500 * time.Millisecond)
	insert(4)
	root := openMySQL(t, dump.Source{Host: "127.0.0.1", Port: srv.cfg.Port, Username: srv.cfg.Superuser.Username, Password: srv.cfg.Superuser.Password})
	if _, err := root.Exec("FLUSH BINARY LOGS"); err != nil { // a second file, as a busy server's
		t.Fatal(err)
	}
	insert(5)
	waitArchived(time.Now())

	uid, gid := srv.cfg.RunAsUID, srv.cfg.RunAsGID
	recoverTo := func(t *testing.T, target *time.Time, want []int) {
		t.Helper()
		start := time.Now()
		rec, err := Recover(ctx, bucket, RecoverOptions{Database: "appdb", Target: target, WorkDir: filepath.Join(world(t), "work"),
			BinDir: srv.bin, RunAsUID: uid, RunAsGID: gid, Log: t.Output()})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		defer rec.Stop()
		got := mariaIDs(t, openMySQL(t, rec.source))
		if !slices.Equal(got, want) {
			t.Errorf("rows recovered: %v, want %v", got, want)
		}
		if rec.Point == nil {
			t.Fatal("no recovery point reported")
		}
		if target != nil && rec.Point.After(*target) {
			t.Errorf("recovery point %s is after the target %s", rec.Point, target)
		}
		t.Logf("recovered in %s: point %s, rows %v", time.Since(start).Round(time.Millisecond), rec.Point.Format(time.RFC3339), got)
	}
	t.Run("T-1s", func(t *testing.T) { recoverTo(t, ptr(target.Add(-time.Second)), []int{1, 2}) })
	t.Run("T+1s", func(t *testing.T) { recoverTo(t, ptr(target.Add(time.Second)), []int{1, 2, 3}) })
	t.Run("latest", func(t *testing.T) { recoverTo(t, nil, []int{1, 2, 3, 4, 5}) })

	// A new archiver (a replaced pod) starts a second stream after what
	// the first uploaded; rows written while none ran are in it.
	stopArchiver()
	insert(6)
	stopArchiver = startArchiver()
	insert(7)
	// One statement of 100,000 rows: its row events replay as a single
	// statement of about 30 MB, above the server's default packet limit.
	if _, err := owner.Exec("CREATE TABLE bulk (id int PRIMARY KEY, body varchar(250)) SELECT seq AS id, REPEAT('y', 200) AS body FROM seq_1_to_100000"); err != nil {
		t.Fatal(err)
	}
	waitArchived(time.Now())
	t.Run("latest across two streams", func(t *testing.T) { recoverTo(t, nil, []int{1, 2, 3, 4, 5, 6, 7}) })
	t.Run("a large statement", func(t *testing.T) {
		rec, err := Recover(ctx, bucket, RecoverOptions{Database: "appdb", WorkDir: filepath.Join(world(t), "work"),
			BinDir: srv.bin, RunAsUID: srv.cfg.RunAsUID, RunAsGID: srv.cfg.RunAsGID, Log: t.Output()})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		defer rec.Stop()
		var n int
		if err := openMySQL(t, rec.source).QueryRow("SELECT count(*) FROM bulk").Scan(&n); err != nil || n != 100000 {
			t.Errorf("recovered bulk rows: %d, %v; want 100000", n, err)
		}
	})

	t.Run("restore-pitr", func(t *testing.T) {
		if _, err := root.Exec("CREATE DATABASE restored"); err != nil {
			t.Fatal(err)
		}
		if _, err := root.Exec("GRANT ALL ON restored.* TO 'app'@'%'"); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{
			dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: bucketDir, pitrcmd.EnvArchive: "appdb",
			dumpcmd.EnvDBType: dump.TypeMySQL, dumpcmd.EnvDBHost: "127.0.0.1", dumpcmd.EnvDBPort: fmt.Sprint(srv.cfg.Port),
			dumpcmd.EnvDBName: "restored", dumpcmd.EnvDBUsername: srv.cfg.Owner.Username, dumpcmd.EnvDBPassword: srv.cfg.Owner.Password,
			dumpcmd.EnvDBBinDir: srv.bin, pitrcmd.EnvWorkDir: filepath.Join(world(t), "work"),
			pitrcmd.EnvTargetTime: target.Add(time.Second).Format(time.RFC3339Nano),
		}
		var log bytes.Buffer
		r, err := restore(ctx, bucket, "appdb", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
			o.RunAsUID, o.RunAsGID = uid, gid
		})
		if err != nil || r.RecoveryPoint == nil || r.BaseKey != base.Key {
			t.Fatalf("restore-pitr: %+v, %v\n%s", r, err, log.String())
		}
		src := srv.owner()
		src.Database = "restored"
		if got := mariaIDs(t, openMySQL(t, src)); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("rows restored to T+1s: %v", got)
		}
	})
	t.Run("verify-pitr", func(t *testing.T) {
		env := map[string]string{pitrcmd.EnvWorkDir: filepath.Join(world(t), "work")}
		var log bytes.Buffer
		r, err := verify(ctx, bucket, "appdb", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
			o.RunAsUID, o.RunAsGID, o.BinDir = uid, gid, srv.bin
		})
		if err != nil || r.Tables != 2 || r.Rows != 100007 || r.RecoveryPoint == nil {
			t.Fatalf("verify-pitr: %+v, %v\n%s", r, err, log.String())
		}
	})

	// A second base backup, then a prune keeping only it: the first base
	// and the binary log files it alone needed go; the latest point is
	// still reached, and T+1s no longer is.
	insert(8)
	base2, err := TakeDumpBase(ctx, srv.owner(), bucket, "appdb", &baseLog)
	if err != nil {
		t.Fatalf("TakeDumpBase: %v", err)
	}
	if _, err := root.Exec("FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	insert(9)
	waitArchived(time.Now())
	before, _ := listChunks(ctx, bucket, "appdb")
	p, err := Prune(ctx, bucket, "appdb", &retention.Policy{KeepLast: 1}, time.Now())
	if err != nil || p.Bases != 1 || p.Segments == 0 || p.FirstRecoverable == nil || !p.FirstRecoverable.Equal(base2.EndTime) {
		t.Fatalf("Prune: %+v, %v (chunks before: %d)", p, err, len(before))
	}
	after, _ := listChunks(ctx, bucket, "appdb")
	t.Logf("prune: %d base backup and %d of %d binary log chunks deleted", p.Bases, p.Segments, len(before))
	if len(after) != len(before)-p.Segments {
		t.Errorf("chunks after the prune: %d, want %d", len(after), len(before)-p.Segments)
	}
	t.Run("latest after the prune", func(t *testing.T) { recoverTo(t, nil, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}) })
	if _, err := Recover(ctx, bucket, RecoverOptions{Database: "appdb", Target: ptr(target.Add(time.Second)),
		WorkDir: filepath.Join(world(t), "work")}); err == nil || !strings.Contains(err.Error(), "earliest recoverable time") {
		t.Errorf("recovering to T+1s after the prune: %v, want a refusal naming the earliest recoverable time", err)
	}
	for _, pw := range []string{srv.cfg.Replication.Password, srv.cfg.Owner.Password} {
		if strings.Contains(archiveLog.b.String(), pw) || strings.Contains(baseLog.String(), pw) {
			t.Error("a log holds a password")
		}
	}
}

// TestMariaDBPointInTimeRecoveryLarge measures a restore to the latest
// point of a MariaDB database of about 100 MB with 250,000 rows updated
// after its base backup. STEWARD_PITR_LARGE=1 runs it.
func TestMariaDBPointInTimeRecoveryLarge(t *testing.T) {
	if os.Getenv(largeEnv) != "1" {
		t.Skipf("skipping: it takes minutes; %s=1 runs it", largeEnv)
	}
	srv := startMariaDBPrimary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bucket, err := fileblob.OpenBucket(world(t), &fileblob.Options{NoTempDir: true, DirFileMode: 0o777})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	owner := openMySQL(t, srv.owner())
	began := time.Now()
	for _, q := range []string{
		"CREATE TABLE big (id int PRIMARY KEY, body varchar(80) NOT NULL)",
		"INSERT INTO big SELECT seq, CONCAT(MD5(seq), REPEAT('x', 40)) FROM seq_1_to_1000000",
		"ANALYZE TABLE big",
	} {
		if _, err := owner.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var size float64
	_ = owner.QueryRowContext(ctx, "SELECT (data_length + index_length) / 1048576 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'big'").Scan(&size)
	t.Logf("filled %.0f MiB in %v", size, time.Since(began).Round(time.Millisecond))

	actx, stop := context.WithCancel(ctx)
	a := &Archiver{Engine: EngineMariaDB, Conn: srv.replication(), Bucket: bucket, Database: "appdb", Dir: filepath.Join(world(t), "binlog"), Interval: time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(actx, nil) }()
	defer func() { stop(); <-done }()
	for !a.Status().Streaming {
		time.Sleep(200 * time.Millisecond)
	}
	base, err := TakeDumpBase(ctx, srv.owner(), bucket, "appdb", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base backup: %d bytes stored in %v", base.Size, base.EndTime.Sub(base.StartTime).Round(time.Millisecond))
	if _, err := owner.ExecContext(ctx, "UPDATE big SET body = MD5(body) WHERE id % 4 = 0"); err != nil {
		t.Fatal(err)
	}
	var want int64
	_ = owner.QueryRowContext(ctx, "SELECT count(*) FROM big WHERE length(body) = 32").Scan(&want)
	acked := time.Now()
	for {
		hb, ok, _ := ReadArchivedUntil(ctx, bucket, "appdb")
		if ok && hb.Time.After(acked) {
			t.Logf("the archive covered the last write %v after it", time.Since(acked).Round(time.Millisecond))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	chunks, _ := listChunks(ctx, bucket, "appdb")
	root := openMySQL(t, dump.Source{Host: "127.0.0.1", Port: srv.cfg.Port, Username: srv.cfg.Superuser.Username, Password: srv.cfg.Superuser.Password})
	for _, q := range []string{"CREATE DATABASE restored", "GRANT ALL ON restored.* TO 'app'@'%'"} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		dumpcmd.EnvDBType: dump.TypeMySQL, dumpcmd.EnvDBHost: "127.0.0.1", dumpcmd.EnvDBPort: fmt.Sprint(srv.cfg.Port),
		dumpcmd.EnvDBName: "restored", dumpcmd.EnvDBUsername: srv.cfg.Owner.Username, dumpcmd.EnvDBPassword: srv.cfg.Owner.Password,
		dumpcmd.EnvDBBinDir: srv.bin, pitrcmd.EnvWorkDir: filepath.Join(world(t), "work"), pitrcmd.EnvTargetTime: pitrcmd.Latest,
	}
	var log bytes.Buffer
	began = time.Now()
	r, err := restore(ctx, bucket, "appdb", func(k string) string { return env[k] }, &log, func(o *RecoverOptions) {
		o.RunAsUID, o.RunAsGID = srv.cfg.RunAsUID, srv.cfg.RunAsGID
	})
	took := time.Since(began)
	if err != nil {
		t.Fatalf("restore-pitr: %v\n%s", err, log.String())
	}
	src := srv.owner()
	src.Database = "restored"
	var got int64
	_ = openMySQL(t, src).QueryRowContext(ctx, "SELECT count(*) FROM big WHERE length(body) = 32").Scan(&got)
	if got != want {
		t.Errorf("restored %d updated rows, want %d", got, want)
	}
	var lines []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(l, "restore:") || strings.HasPrefix(l, "backup:") {
			lines = append(lines, l)
		}
	}
	t.Logf("restore-pitr of the %.0f MiB database to the latest point (%d binary log chunks): %v in all (recovery point %v)\n%s",
		size, len(chunks), took.Round(time.Millisecond), r.RecoveryPoint, strings.Join(lines, "\n"))
}

// pausableProxy forwards TCP connections to a server until paused: then
// it holds every byte, as a network partition does, without closing.
type pausableProxy struct {
	l      net.Listener
	target string
	paused atomic.Bool
}

func startProxy(t *testing.T, target string) *pausableProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pausableProxy{l: l, target: target}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			go p.pipe(c, s)
			go p.pipe(s, c)
		}
	}()
	return p
}

func (p *pausableProxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.paused.Load() {
			time.Sleep(50 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *pausableProxy) port() int { return p.l.Addr().(*net.TCPAddr).Port }

// TestBinlogArchiveStallIsNotCurrent: when the connection to the primary
// stalls without closing (a partition), mariadb-binlog does not notice,
// but the archive's end stops moving while the primary takes writes, and
// moves again once the connection flows.
func TestBinlogArchiveStallIsNotCurrent(t *testing.T) {
	srv := startMariaDBPrimary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bucket, err := fileblob.OpenBucket(world(t), &fileblob.Options{NoTempDir: true, DirFileMode: 0o777})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bucket.Close() }()
	owner := openMySQL(t, srv.owner())
	if _, err := owner.Exec("CREATE TABLE marks (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.cfg.Port))
	conn := srv.replication()
	conn.Port = proxy.port()
	a := &Archiver{Engine: EngineMariaDB, Conn: conn, Bucket: bucket, Database: "appdb",
		Dir: filepath.Join(world(t), "binlog"), Interval: 500 * time.Millisecond}
	actx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(actx, nil) }()
	defer func() { stop(); <-done }()
	until := func() time.Time {
		if u := a.Status().ArchivedUntil; u != nil {
			return *u
		}
		return time.Time{}
	}
	id := 0
	write := func() {
		id++
		if _, err := owner.Exec("INSERT INTO marks VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
	}
	waitPast := func(at time.Time, what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !until().After(at) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the archive's end %v never passed %v; status %+v", what, until(), at, a.Status())
			}
			write()
			time.Sleep(300 * time.Millisecond)
		}
	}
	waitPast(time.Now(), "before the stall")
	proxy.paused.Store(true)
	stalled := time.Now()
	time.Sleep(3 * time.Second) // what was in flight settles
	end := until()
	for range 20 {
		write()
		time.Sleep(500 * time.Millisecond)
	}
	if got := until(); got.After(end) || got.After(stalled.Add(2*time.Second)) {
		t.Errorf("during the stall the archive's end moved from %v to %v (stall at %v): it claims what it does not hold", end, got, stalled)
	}
	t.Logf("stalled at %v: the archive's end stayed at %v through 10 s of writes; streaming %v", stalled.Format(time.RFC3339Nano), until().Format(time.RFC3339Nano), a.Status().Streaming)
	proxy.paused.Store(false)
	waitPast(time.Now(), "after the stall")
}
