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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
)

// The throwaway servers of backup-verify run as the engines' users when
// the tests run as root, as the tests' own servers do.
func init() {
	scratchUser = func(typ string) (uint32, uint32) {
		name := map[string]string{TypePostgreSQL: "postgres", TypeMySQL: "mysql"}[typ]
		u, err := user.Lookup(name)
		if os.Geteuid() != 0 || err != nil {
			return 0, 0
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return uint32(uid), uint32(gid)
	}
}

// TestInsertDigester: tuples are found whatever the values hold and
// however the stream is cut; empty tables count; the sum does not depend
// on the rows' order.
func TestInsertDigester(t *testing.T) {
	dump := strings.Join([]string{
		"-- MariaDB dump",
		"/*!40101 SET NAMES utf8mb4 */;",
		"CREATE TABLE `empty` (",
		"  `id` int NOT NULL",
		") ENGINE=InnoDB;",
		"CREATE TABLE `we``ird` (`id` int) ENGINE=InnoDB;",
		"INSERT INTO `we``ird` VALUES (1,'a),(b'),(2,'it\\'s \\\\'),(3,'doubled '' quote ( '),(4,NULL),(5,0x28290A);",
		"INSERT INTO `we``ird` VALUES\n(6,'line\\nbreak'),\n(7,'(');",
		"/*!50001 CREATE VIEW `v` AS SELECT 1 */;",
		"CREATE TABLE `t` (`id` int);",
		"INSERT INTO `t` VALUES (1,'x'),(2,'y');",
		"",
	}, "\n")
	digest := func(chunks ...string) []TableDigest {
		d := newInsertDigester()
		for _, c := range chunks {
			if _, err := d.Write([]byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		return d.digests()
	}
	whole := digest(dump)
	rows := map[string]int64{}
	for _, d := range whole {
		rows[d.Table] = d.Rows
	}
	if want := map[string]int64{"empty": 0, "we`ird": 7, "t": 2}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for cut := 1; cut < len(dump); cut++ {
		if got := digest(dump[:cut], dump[cut:]); !reflect.DeepEqual(got, whole) {
			t.Fatalf("cut at %d (%q): %v, want %v", cut, dump[max(0, cut-10):cut], got, whole)
		}
	}
	var bytewise []string
	for i := range dump {
		bytewise = append(bytewise, dump[i:i+1])
	}
	if got := digest(bytewise...); !reflect.DeepEqual(got, whole) {
		t.Fatalf("byte by byte: %v, want %v", got, whole)
	}
	reordered := strings.Replace(dump, "(1,'x'),(2,'y')", "(2,'y'),(1,'x')", 1)
	if got := digest(reordered); !reflect.DeepEqual(got, whole) {
		t.Errorf("reordered rows: %v, want %v", got, whole)
	}
	changed := strings.Replace(dump, "(2,'y')", "(2,'z')", 1)
	if reason, msg := CompareDigests(whole, digest(changed)); reason != v1alpha1.ReasonTableChecksumMismatch || !strings.Contains(msg, "table t ") {
		t.Errorf("a changed value: %s %q", reason, msg)
	}
	fewer := strings.Replace(dump, ",(2,'y')", "", 1)
	if reason, msg := CompareDigests(whole, digest(fewer)); reason != v1alpha1.ReasonRowCountMismatch || !strings.Contains(msg, "table t has 1 rows, 2 at backup time") {
		t.Errorf("a missing row: %s %q", reason, msg)
	}
}

// swapObject replaces the object of m with data and rewrites its
// manifest's size and SHA-256 to match, keeping everything else, the
// table digests included: a dump altered by someone who also fixed the
// checksum.
func swapObject(t *testing.T, ctx context.Context, bucket *blob.Bucket, dir string, m Manifest, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, m.Key), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	m.Size, m.SHA256 = int64(len(data)), hex.EncodeToString(sum[:])
	mdata, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := bucket.WriteAll(ctx, m.Key+ManifestSuffix, mdata, nil); err != nil {
		t.Fatal(err)
	}
}

// restoreManifest puts back the original object and manifest.
func restoreOriginal(t *testing.T, ctx context.Context, bucket *blob.Bucket, dir string, m Manifest, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, m.Key), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mdata, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := bucket.WriteAll(ctx, m.Key+ManifestSuffix, mdata, nil); err != nil {
		t.Fatal(err)
	}
}

// alteredDump changes the data of a copy of the backup (restored into a
// new database of srv, changed by sql, dumped again) and returns the new
// dump's object.
func alteredDump(t *testing.T, ctx context.Context, srv *server, bucket *blob.Bucket, m Manifest, name string, sql ...string) []byte {
	t.Helper()
	db := srv.createDatabase(t, name)
	if _, err := Restore(ctx, bucket, m.Key, db, RestoreOptions{}); err != nil {
		t.Fatalf("restoring a copy to alter: %v", err)
	}
	execSQL(t, srv, db, sql...)
	other, _ := fileBucket(t)
	rep, err := Backup(ctx, db, other, Options{})
	if err != nil {
		t.Fatalf("dumping the altered copy: %v", err)
	}
	data, err := other.ReadAll(ctx, rep.Manifest.Key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func execSQL(t *testing.T, srv *server, db Source, sql ...string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range sql {
		var err error
		if srv.typ == TypePostgreSQL {
			_, err = pgConn(t, db).Exec(ctx, q)
		} else {
			_, err = myConn(t, db).ExecContext(ctx, q)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// testVerify runs the verification cases against one engine's server,
// whose source database was filled and backed up into bucket (a
// directory dir) as m.
func testVerify(t *testing.T, srv *server, bucket *blob.Bucket, dir string, m Manifest, changeRow, deleteRow string, wantTables int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	t.Cleanup(func() { noSecret(t, "the log", log.String(), srv.cfg.Owner.Password) })
	orig, err := os.ReadFile(filepath.Join(dir, m.Key))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("good backup verifies", func(t *testing.T) {
		start := time.Now()
		rep, err := Verify(ctx, bucket, Latest, m.Database, srv.createDatabase(t, "verify_good"), RestoreOptions{Log: log})
		if err != nil || !rep.Passed || rep.Reason != v1alpha1.ReasonVerificationPassed || rep.Tables != wantTables || rep.Manifest.Key != m.Key {
			t.Fatalf("Verify = %+v, %v; want passed, %d tables", rep, err, wantTables)
		}
		t.Logf("verified in %v: %s", time.Since(start).Round(time.Millisecond), rep.Message)
	})

	t.Run("no backup of that database", func(t *testing.T) {
		_, err := Verify(ctx, bucket, Latest, "other", srv.createDatabase(t, "verify_none"), RestoreOptions{})
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != v1alpha1.ReasonNoBackup {
			t.Errorf("Verify = %v, want NoBackup", err)
		}
	})

	t.Run("corrupted object fails and a restore refuses it", func(t *testing.T) {
		defer restoreOriginal(t, ctx, bucket, dir, m, orig)
		corrupt := slices.Clone(orig)
		corrupt[len(corrupt)/2] ^= 0x01
		if err := os.WriteFile(filepath.Join(dir, m.Key), corrupt, 0o644); err != nil {
			t.Fatal(err)
		}
		target := srv.createDatabase(t, "verify_corrupt")
		rep, err := Verify(ctx, bucket, m.Key, m.Database, target, RestoreOptions{Log: log})
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != v1alpha1.ReasonChecksumMismatch || rep.Passed ||
			!errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "its manifest says") {
			t.Fatalf("Verify = %+v, %v; want ChecksumMismatch", rep, err)
		}
		t.Logf("corrupted: %s: %v", ve.Reason, err)
		if n, err := countTables(ctx, target); err != nil || n != 0 {
			t.Errorf("the verification's target has %d tables (%v): it restored a corrupted object", n, err)
		}
		restoreTarget := srv.createDatabase(t, "restore_corrupt")
		if _, err := Restore(ctx, bucket, m.Key, restoreTarget, RestoreOptions{}); !errors.Is(err, ErrChecksum) {
			t.Errorf("Restore of the corrupted object = %v, want a checksum error", err)
		}
		if n, err := countTables(ctx, restoreTarget); err != nil || n != 0 {
			t.Errorf("the restore's target has %d tables (%v), want it untouched", n, err)
		}
	})

	for _, c := range []struct {
		name, sql, reason string
	}{
		{"altered row with a recomputed checksum", changeRow, v1alpha1.ReasonTableChecksumMismatch},
		{"deleted row with a recomputed checksum", deleteRow, v1alpha1.ReasonRowCountMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer restoreOriginal(t, ctx, bucket, dir, m, orig)
			name := "altered_" + c.reason
			swapObject(t, ctx, bucket, dir, m, alteredDump(t, ctx, srv, bucket, m, name, c.sql))
			// The checksum alone no longer tells: a restore goes through.
			if _, err := Restore(ctx, bucket, m.Key, srv.createDatabase(t, "restore_"+name), RestoreOptions{}); err != nil {
				t.Fatalf("Restore of the altered dump: %v", err)
			}
			rep, err := Verify(ctx, bucket, m.Key, m.Database, srv.createDatabase(t, "verify_"+name), RestoreOptions{Log: log})
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Reason != c.reason || rep.Passed || !strings.Contains(err.Error(), "items") {
				t.Fatalf("Verify = %+v, %v; want %s naming the items table", rep, err, c.reason)
			}
			t.Logf("%s: %v", ve.Reason, err)
		})
	}
}

func TestVerifyPostgreSQL(t *testing.T) {
	t.Parallel()
	srv := startPostgres(t)
	src := srv.source()
	fillPostgres(t, src)
	bucket, dir := fileBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Backup(ctx, src, bucket, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Manifest
	if m.DigestMethod != DigestPostgreSQL || len(m.Tables) != 2 ||
		m.Tables[0] != (TableDigest{Table: `"other schema".notes`, Rows: 50, Checksum: m.Tables[0].Checksum}) ||
		m.Tables[1].Table != "public.items" || m.Tables[1].Rows != 400 {
		t.Fatalf("manifest tables %+v (%s)", m.Tables, m.DigestMethod)
	}
	testVerify(t, srv, bucket, dir, m, "UPDATE items SET name = 'changed' WHERE id = 42", "DELETE FROM items WHERE id = 42", 2)
	t.Run("command", func(t *testing.T) { testVerifyCommand(t, srv, 2) })
}

func TestVerifyMariaDB(t *testing.T) {
	t.Parallel()
	srv := startMariaDB(t)
	src := srv.source()
	fillMariaDB(t, src)
	execSQL(t, srv, src, "CREATE TABLE nothing (id INT PRIMARY KEY)")
	bucket, dir := fileBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Backup(ctx, src, bucket, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Manifest
	rows := map[string]int64{}
	for _, d := range m.Tables {
		rows[d.Table] = d.Rows
	}
	if want := map[string]int64{"items": 400, "odd name": 50, "nothing": 0}; m.DigestMethod != DigestSQLInserts || !reflect.DeepEqual(rows, want) {
		t.Fatalf("manifest tables %+v (%s), want rows %v", m.Tables, m.DigestMethod, want)
	}
	testVerify(t, srv, bucket, dir, m, "UPDATE items SET name = 'changed' WHERE id = 42", "DELETE FROM items WHERE id = 42", 3)
	t.Run("command", func(t *testing.T) { testVerifyCommand(t, srv, 3) })
}

// testVerifyCommand runs `steward backup` and then `steward
// backup-verify` as main does: the verification starts its own throwaway
// server and needs neither the source's address nor its credentials.
func testVerifyCommand(t *testing.T, srv *server, tables int) {
	src := srv.source()
	ctx := context.Background()
	store := t.TempDir()
	termination := filepath.Join(t.TempDir(), "termination-log")
	backupEnv := map[string]string{
		dumpcmd.EnvDBType: src.Type, dumpcmd.EnvDBHost: src.Host, dumpcmd.EnvDBPort: strconv.Itoa(src.Port), dumpcmd.EnvDBName: src.Database,
		dumpcmd.EnvDBUsername: src.Username, dumpcmd.EnvDBPassword: src.Password, dumpcmd.EnvDBBinDir: src.BinDir,
		dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: store, dumpcmd.EnvDestinationPrefix: "team/app",
		dumpcmd.EnvTerminationLog: termination,
	}
	verifyEnv := map[string]string{
		dumpcmd.EnvDBType: src.Type, dumpcmd.EnvDBName: src.Database, dumpcmd.EnvDBBinDir: src.BinDir,
		dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: store, dumpcmd.EnvDestinationPrefix: "team/app",
		dumpcmd.EnvTerminationLog: termination,
	}
	log := &syncBuffer{}
	result := func() dumpcmd.Result {
		t.Helper()
		data, err := os.ReadFile(termination)
		if err != nil {
			t.Fatal(err)
		}
		noSecret(t, "the result", string(data), src.Password)
		r, err := dumpcmd.ParseResult(string(data))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if code := Main(ctx, dumpcmd.CommandBackup, func(k string) string { return backupEnv[k] }, log); code != 0 {
		t.Fatalf("backup exited with %d: %s", code, log)
	}
	key := result().Key
	verify := func() (int, dumpcmd.Result) {
		code := Main(ctx, dumpcmd.CommandVerify, func(k string) string { return verifyEnv[k] }, log)
		return code, result()
	}

	code, r := verify()
	if code != 0 || !r.Succeeded || r.Reason != v1alpha1.ReasonVerificationPassed || r.Key != key || r.TablesChecked != tables ||
		r.Error != "" || !strings.Contains(r.Message, "each table's row count and checksum") || r.DurationSeconds <= 0 {
		t.Fatalf("backup-verify exited with %d, result %+v\n%s", code, r, log)
	}
	t.Logf("backup-verify of %s passed in %.2fs: %s", r.Key, r.DurationSeconds, r.Message)

	path := filepath.Join(store, "team/app", key)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	verifyEnv[dumpcmd.EnvVerifyKey] = key
	code, r = verify()
	if code == 0 || r.Succeeded || r.Reason != v1alpha1.ReasonChecksumMismatch || r.Key != key || !strings.Contains(r.Error, "checksum mismatch") {
		t.Errorf("backup-verify of a corrupted object exited with %d, result %+v", code, r)
	}

	delete(verifyEnv, dumpcmd.EnvVerifyKey)
	verifyEnv[dumpcmd.EnvDBName] = "another"
	code, r = verify()
	if code == 0 || r.Succeeded || r.Reason != v1alpha1.ReasonNoBackup {
		t.Errorf("backup-verify without a backup exited with %d, result %+v", code, r)
	}
	if strings.Contains(log.String(), "scratch-") && strings.Contains(log.String(), "password=") {
		t.Errorf("the log shows a connection string with a password")
	}
}

// testConcurrentWrites backs up while writers insert, update and delete,
// and checks that the manifest's digests are those of the data in the
// dump: restored, the tables have exactly the manifest's digests, while
// the source has moved on.
func testConcurrentWrites(t *testing.T, srv *server, create, writes []string) {
	src := srv.source()
	execSQL(t, srv, src, create...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bucket, _ := fileBucket(t)
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr atomic.Value
	for w := range 2 {
		wg.Add(1)
		var run func(string) error
		if srv.typ == TypePostgreSQL {
			c := pgConn(t, src)
			run = func(q string) error { _, err := c.Exec(ctx, q); return err }
		} else {
			db := myConn(t, src)
			run = func(q string) error { _, err := db.ExecContext(ctx, q); return err }
		}
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				err := run(writes[(i+w)%len(writes)])
				if err != nil && ctx.Err() == nil {
					writeErr.Store(err)
					return
				}
				written.Add(1)
			}
		}()
	}
	// Writes before, during and after the dump.
	for written.Load() < 20 {
		time.Sleep(10 * time.Millisecond)
	}
	before := written.Load()
	rep, err := Backup(ctx, src, bucket, Options{})
	during := written.Load() - before
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if e := writeErr.Load(); e != nil {
		t.Fatalf("a writer failed: %v", e)
	}
	t.Logf("%d writes while the backup ran; tables %+v", during, rep.Manifest.Tables)
	if during == 0 {
		t.Fatalf("no write happened during the backup: the test proves nothing")
	}
	restored := srv.createDatabase(t, "concurrent_restored")
	if _, err := Restore(ctx, bucket, rep.Manifest.Key, restored, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := Digests(ctx, restored, "")
	if err != nil {
		t.Fatal(err)
	}
	if reason, msg := CompareDigests(rep.Manifest.Tables, got); reason != "" {
		t.Errorf("the manifest does not describe the dumped data: %s: %s", reason, msg)
	}
	now, err := Digests(ctx, src, "")
	if err != nil {
		t.Fatal(err)
	}
	if reason, _ := CompareDigests(rep.Manifest.Tables, now); reason == "" {
		t.Errorf("the source still has the manifest's digests after %d writes: the writes did not change what the test looks at", written.Load())
	}
}

func TestDigestsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	t.Run("postgresql", func(t *testing.T) {
		t.Parallel()
		srv := startPostgres(t)
		testConcurrentWrites(t, srv, []string{
			`CREATE TABLE busy (id bigserial PRIMARY KEY, v text, n int)`,
			`INSERT INTO busy (v, n) SELECT md5(i::text), i FROM generate_series(1, 100000) i`,
		}, []string{
			"INSERT INTO busy (v, n) SELECT md5(random()::text), 1 FROM generate_series(1, 50)",
			"UPDATE busy SET n = n + 1 WHERE id % 97 = (random() * 96)::int",
			"DELETE FROM busy WHERE id IN (SELECT id FROM busy ORDER BY random() LIMIT 5)",
		})
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		srv := startMariaDB(t)
		testConcurrentWrites(t, srv, []string{
			`CREATE TABLE busy (id BIGINT AUTO_INCREMENT PRIMARY KEY, v TEXT, n INT) ENGINE=InnoDB`,
			`INSERT INTO busy (v, n) SELECT MD5(seq), seq FROM seq_1_to_100000`,
		}, []string{
			"INSERT INTO busy (v, n) SELECT MD5(RAND()), seq FROM seq_1_to_200",
			"UPDATE busy SET n = n + 1 WHERE id % 97 = FLOOR(RAND() * 97)",
			"DELETE FROM busy ORDER BY RAND() LIMIT 5",
		})
	})
}

// largeVerifyEnv, set to 1, runs TestVerifyLarge.
const largeVerifyEnv = "STEWARD_VERIFY_LARGE"

// TestVerifyLarge measures a backup and a verification (backup-verify
// with its own throwaway server) of a database of about 100 MB per
// engine. It takes minutes: it runs only with STEWARD_VERIFY_LARGE=1.
func TestVerifyLarge(t *testing.T) {
	if os.Getenv(largeVerifyEnv) != "1" {
		t.Skipf("skipping: it takes minutes; %s=1 runs it", largeVerifyEnv)
	}
	for _, c := range []struct {
		name  string
		start func(*testing.T) *server
		fill  []string
		size  string
	}{
		{"postgresql", startPostgres, []string{
			`CREATE TABLE big (id int PRIMARY KEY, payload text, at timestamptz)`,
			`INSERT INTO big SELECT g, md5(g::text) || md5((g * 7)::text) || 'abcdefghijklmnopqrstuvwxyz0123', now() FROM generate_series(1, 700000) g`,
		}, `SELECT pg_size_pretty(pg_database_size(current_database()))`},
		{"mariadb", startMariaDB, []string{
			`CREATE TABLE big (id INT PRIMARY KEY, payload TEXT, at DATETIME(6)) ENGINE=InnoDB`,
			`INSERT INTO big SELECT seq, CONCAT(MD5(seq), MD5(seq * 7), 'abcdefghijklmnopqrstuvwxyz0123'), NOW(6) FROM seq_1_to_700000`,
		}, `SELECT CONCAT(ROUND(SUM(data_length + index_length) / 1048576), ' MB') FROM information_schema.tables WHERE table_schema = DATABASE()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t)
			src := srv.source()
			began := time.Now()
			execSQL(t, srv, src, c.fill...)
			if srv.typ == TypePostgreSQL {
				execSQL(t, srv, src, "VACUUM ANALYZE big")
			} else {
				execSQL(t, srv, src, "ANALYZE TABLE big")
			}
			var size string
			ctx := context.Background()
			if srv.typ == TypePostgreSQL {
				_ = pgConn(t, src).QueryRow(ctx, c.size).Scan(&size)
			} else {
				_ = myConn(t, src).QueryRowContext(ctx, c.size).Scan(&size)
			}
			t.Logf("filled in %v: database %s", time.Since(began).Round(time.Millisecond), size)
			store := t.TempDir()
			termination := filepath.Join(t.TempDir(), "termination-log")
			env := map[string]string{
				dumpcmd.EnvDBType: src.Type, dumpcmd.EnvDBHost: src.Host, dumpcmd.EnvDBPort: strconv.Itoa(src.Port), dumpcmd.EnvDBName: src.Database,
				dumpcmd.EnvDBUsername: src.Username, dumpcmd.EnvDBPassword: src.Password, dumpcmd.EnvDBBinDir: src.BinDir,
				dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: store, dumpcmd.EnvTerminationLog: termination,
			}
			log := &syncBuffer{}
			for _, cmd := range []string{dumpcmd.CommandBackup, dumpcmd.CommandVerify} {
				if code := Main(ctx, cmd, func(k string) string { return env[k] }, log); code != 0 {
					t.Fatalf("%s exited with %d: %s", cmd, code, log)
				}
				data, err := os.ReadFile(termination)
				if err != nil {
					t.Fatal(err)
				}
				r, err := dumpcmd.ParseResult(string(data))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %.1fs, %d bytes stored, %s", cmd, r.DurationSeconds, r.Size, r.Message)
			}
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.HasPrefix(line, "verify:") || strings.HasPrefix(line, dumpcmd.CommandVerify+":") {
					t.Log(line)
				}
			}
		})
	}
}
