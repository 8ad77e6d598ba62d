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
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/backup/retention"
)

// fillPostgres creates tables with values that are hard to dump: NULLs,
// quotes, backslashes, line breaks, unicode, binary data.
func fillPostgres(t *testing.T, s Source) {
	t.Helper()
	c := pgConn(t, s)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE items (id int PRIMARY KEY, name text, data bytea, price numeric(12,3), doc jsonb, at timestamptz)`,
		`INSERT INTO items SELECT i,
			CASE WHEN i % 7 = 0 THEN NULL ELSE 'ïtém ' || i || E' \'quoted\' "double" back\\slash\nnew line\ttab ☃ 𝄞' END,
			CASE WHEN i % 5 = 0 THEN NULL ELSE decode(md5(i::text) || '00ff0a0d5c27', 'hex') END,
			i * 1.125, jsonb_build_object('i', i, 's', E'a\nb"c'), '2024-02-29 12:00:00+00'::timestamptz + i * interval '1 hour'
			FROM generate_series(1, 400) i`,
		`CREATE SCHEMA "other schema"`,
		`CREATE TABLE "other schema".notes (id serial PRIMARY KEY, body text NOT NULL)`,
		`INSERT INTO "other schema".notes (body) SELECT repeat(E'x\\y\r\n', i) FROM generate_series(1, 50) i`,
		`CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// pgDigest is the content of the test's tables, row by row.
func pgDigest(t *testing.T, s Source) string {
	t.Helper()
	c := pgConn(t, s)
	var out []string
	for _, q := range []string{
		`SELECT count(*)::text || ':' || md5(string_agg(t::text, ',' ORDER BY id)) FROM items t`,
		`SELECT count(*)::text || ':' || md5(string_agg(t::text, ',' ORDER BY id)) FROM "other schema".notes t`,
		`SELECT count(*)::text FROM cheap`,
	} {
		var v string
		if err := c.QueryRow(context.Background(), q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, v)
	}
	return strings.Join(out, " ")
}

func TestPostgreSQL(t *testing.T) {
	t.Parallel()
	srv := startPostgres(t)
	src := srv.source()
	fillPostgres(t, src)
	want := pgDigest(t, src)
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
		if !keyPattern.MatchString(filepath.Base(m.Key)) || !strings.HasSuffix(m.Key, "-app-db.pgdump") ||
			!strings.HasPrefix(m.Key, m.StartTime.Format("2006/01/02/")) {
			t.Errorf("key %q does not follow the layout", m.Key)
		}
		size, sum := fileSum(t, filepath.Join(dir, m.Key))
		if size != m.Size || sum != m.SHA256 || size == 0 {
			t.Errorf("the object has %d bytes, sha256 %s; the manifest says %d, %s", size, sum, m.Size, m.SHA256)
		}
		stored, err := readManifest(ctx, bucket, m.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored, m) {
			t.Errorf("stored manifest %+v, returned %+v", stored, m)
		}
		if !strings.HasPrefix(m.ServerVersion, "PostgreSQL 15") || m.Type != TypePostgreSQL || m.Database != "app-db" ||
			m.Format != "pg_dump-custom" || m.Tool != "pg_dump" || m.StewardVersion != Version || !m.EndTime.After(m.StartTime) {
			t.Errorf("manifest %+v", m)
		}
		head, err := os.ReadFile(filepath.Join(dir, m.Key))
		if err != nil || !strings.HasPrefix(string(head), "PGDMP") {
			t.Errorf("the object is not in pg_dump's custom format")
		}
	})

	t.Run("round trip", func(t *testing.T) {
		target := srv.createDatabase(t, "restored")
		got, err := Restore(ctx, bucket, Latest, target, RestoreOptions{Log: log})
		if err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if got.Key != m.Key {
			t.Errorf("latest restored %s, want %s", got.Key, m.Key)
		}
		if d := pgDigest(t, target); d != want {
			t.Errorf("restored content %s, source %s", d, want)
		}

		// Not empty now: refused without overwrite, and left alone.
		c := pgConn(t, target)
		if _, err := c.Exec(ctx, `DELETE FROM items WHERE id > 100; UPDATE "other schema".notes SET body = 'changed'`); err != nil {
			t.Fatal(err)
		}
		changed := pgDigest(t, target)
		_, err = Restore(ctx, bucket, m.Key, target, RestoreOptions{})
		if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "spec.overwrite") {
			t.Errorf("restore into a non-empty database: %v, want ErrNotEmpty naming spec.overwrite", err)
		}
		if d := pgDigest(t, target); d != changed {
			t.Errorf("the refused restore changed the target")
		}
		if _, err := Restore(ctx, bucket, m.Key, target, RestoreOptions{Overwrite: true}); err != nil {
			t.Fatalf("Restore with overwrite: %v", err)
		}
		if d := pgDigest(t, target); d != want {
			t.Errorf("overwritten content %s, source %s", d, want)
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
		for name, data := range map[string][]byte{"one byte changed": corrupt, "truncated": orig[:len(orig)-100]} {
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
			if !strings.Contains(err.Error(), "pg_dump") {
				t.Errorf("%s: the error does not come from pg_dump: %v", name, err)
			}
			if name == "wrong password" && !strings.Contains(err.Error(), "password authentication failed") {
				t.Errorf("%s: the error does not quote pg_dump: %v", name, err)
			}
			if after := files(t, dir); !slices.Equal(after, before) {
				t.Errorf("%s: the bucket holds %v, before %v", name, after, before)
			}
		}
	})

	t.Run("retention", func(t *testing.T) {
		testRetention(t, src)
	})
	t.Run("command", func(t *testing.T) {
		testCommand(t, srv)
	})
}
