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
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/backup/retention"
)

func fillMariaDB(t *testing.T, s Source) {
	t.Helper()
	db := myConn(t, s)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE items (id INT PRIMARY KEY, name TEXT CHARACTER SET utf8mb4, data BLOB, price DECIMAL(12,3), at DATETIME(3)) ENGINE=InnoDB",
		`INSERT INTO items WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 400)
			SELECT i,
				IF(i % 7 = 0, NULL, CONCAT('ïtém ', i, ' ''quoted'' "double" back\\slash\nnew line\ttab ☃ 𝄞')),
				IF(i % 5 = 0, NULL, UNHEX(CONCAT(MD5(i), '00ff0a0d5c27'))),
				i * 1.125, TIMESTAMP('2024-02-29 12:00:00') + INTERVAL i HOUR
			FROM seq`,
		"CREATE TABLE `odd name` (id INT AUTO_INCREMENT PRIMARY KEY, body LONGTEXT NOT NULL)",
		"INSERT INTO `odd name` (body) SELECT REPEAT('x\\\\y\\r\\n', id) FROM items WHERE id <= 50",
		"CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10",
		"CREATE PROCEDURE touch_items() UPDATE items SET price = price + 1",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// myDigest is the content of the test's tables, every value in hex.
func myDigest(t *testing.T, s Source) string {
	t.Helper()
	db := myConn(t, s)
	var out []string
	for _, q := range []string{
		"SELECT * FROM items ORDER BY id", "SELECT * FROM `odd name` ORDER BY id", "SELECT * FROM cheap ORDER BY id",
		"SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()",
	} {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if v == nil {
					out = append(out, "NULL")
				} else {
					out = append(out, hex.EncodeToString(v))
				}
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		_ = rows.Close()
		if n == 0 {
			t.Fatalf("%s: no rows", q)
		}
	}
	return strings.Join(out, ",")
}

func TestMariaDB(t *testing.T) {
	t.Parallel()
	srv := startMariaDB(t)
	src := srv.source()
	fillMariaDB(t, src)
	want := myDigest(t, src)
	bucket, dir := fileBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	t.Cleanup(func() { noSecret(t, "the log", log.String(), src.Password) })

	rep, err := Backup(ctx, src, bucket, Options{Log: log})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	m := rep.Manifest
	t.Logf("backup %s: %d bytes", m.Key, m.Size)

	t.Run("manifest", func(t *testing.T) {
		size, sum := fileSum(t, filepath.Join(dir, m.Key))
		if size != m.Size || sum != m.SHA256 {
			t.Errorf("the object has %d bytes, sha256 %s; the manifest says %d, %s", size, sum, m.Size, m.SHA256)
		}
		if !strings.HasSuffix(m.Key, "-appdb.sql.gz") || !strings.Contains(m.ServerVersion, "MariaDB") ||
			m.Format != "sql" || m.Compression != "gzip" || m.Tool != "mariadb-dump" {
			t.Errorf("manifest %+v", m)
		}
		f, err := os.Open(filepath.Join(dir, m.Key))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("the object is not gzip: %v", err)
		}
		text, err := io.ReadAll(gz)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "CREATE TABLE `items`") || strings.Contains(string(text), "CREATE DATABASE") ||
			!strings.Contains(string(text), "PROCEDURE `touch_items`") {
			t.Errorf("the dump is not a single-database dump with routines")
		}
	})

	t.Run("round trip", func(t *testing.T) {
		target := srv.createDatabase(t, "restored")
		if _, err := Restore(ctx, bucket, Latest, target, RestoreOptions{Log: log}); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if d := myDigest(t, target); d != want {
			t.Errorf("restored content differs from the source")
		}
		db := myConn(t, target)
		if _, err := db.ExecContext(ctx, "DELETE FROM items WHERE id > 100"); err != nil {
			t.Fatal(err)
		}
		changed := myDigest(t, target)
		_, err := Restore(ctx, bucket, m.Key, target, RestoreOptions{})
		if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "spec.overwrite") {
			t.Errorf("restore into a non-empty database: %v, want ErrNotEmpty naming spec.overwrite", err)
		}
		if myDigest(t, target) != changed {
			t.Errorf("the refused restore changed the target")
		}
		if _, err := Restore(ctx, bucket, m.Key, target, RestoreOptions{Overwrite: true}); err != nil {
			t.Fatalf("Restore with overwrite: %v", err)
		}
		if d := myDigest(t, target); d != want {
			t.Errorf("overwritten content differs from the source")
		}
	})

	t.Run("checksum", func(t *testing.T) {
		target := srv.createDatabase(t, "never touched")
		path := filepath.Join(dir, m.Key)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
		}()
		corrupt := slices.Clone(orig)
		corrupt[len(corrupt)/2] ^= 0x01
		for name, data := range map[string][]byte{"one byte changed": corrupt, "truncated": orig[:len(orig)/2]} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Restore(ctx, bucket, m.Key, target, RestoreOptions{})
			if !errors.Is(err, ErrChecksum) {
				t.Errorf("%s: Restore = %v, want a checksum error", name, err)
			}
			if n, err := countTables(ctx, target); err != nil || n != 0 {
				t.Errorf("%s: the target has %d tables (%v), want it untouched", name, n, err)
			}
		}
	})

	t.Run("tool failure", func(t *testing.T) {
		before := files(t, dir)
		wrong := src
		wrong.Password = secret(t)
		unreachable := src
		unreachable.Port = 1
		for name, s := range map[string]Source{"wrong password": wrong, "unreachable": unreachable} {
			rep, err := Backup(ctx, s, bucket, Options{Log: log, Retention: &retention.Policy{KeepLast: 1}})
			if err == nil {
				t.Fatalf("%s: Backup succeeded: %+v", name, rep)
			}
			t.Logf("%s: %v", name, err)
			noSecret(t, "the error", err.Error(), s.Password)
			if !strings.Contains(err.Error(), "mariadb-dump failed") {
				t.Errorf("%s: the error does not come from mariadb-dump: %v", name, err)
			}
			if after := files(t, dir); !slices.Equal(after, before) {
				t.Errorf("%s: the bucket holds %v, before %v", name, after, before)
			}
		}
	})
}
