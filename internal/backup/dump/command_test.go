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
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/retention"
)

// putBackup writes a backup object and, when good, its manifest, as Backup
// would have.
func putBackup(t *testing.T, bucket *blob.Bucket, at time.Time, database string, good bool) string {
	t.Helper()
	ctx := context.Background()
	key := ObjectKey(at, database, "pgdump")
	data := []byte("PGDMP fake backup of " + key)
	if err := bucket.WriteAll(ctx, key, data, nil); err != nil {
		t.Fatal(err)
	}
	if good {
		sum := sha256.Sum256(data)
		m := Manifest{ManifestVersion: 1, Key: key, Type: TypePostgreSQL, Database: database, StartTime: at, EndTime: at.Add(time.Second),
			Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Format: "pg_dump-custom", Compression: "pg_dump"}
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := bucket.WriteAll(ctx, key+ManifestSuffix, j, nil); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

// testRetention checks that a backup prunes by the policy: with KeepLast 2,
// the new backup and the newest older good one stay; older good backups and
// an incomplete one older than the newest good backup go; other databases'
// backups and other files are not touched.
func testRetention(t *testing.T, src Source) {
	now := time.Now().UTC()
	_, drop := retention.Select([]retention.Item{
		{Key: "a", Time: now.Add(-time.Hour), Good: true}, {Key: "b", Time: now, Good: true},
	}, retention.Policy{KeepLast: 1}, now)
	if len(drop) == 0 {
		t.Skip("needs retention rules: retention.Select still keeps everything")
	}
	bucket, dir := fileBucket(t)
	ctx := context.Background()
	day := 24 * time.Hour
	var old []string
	for i := 4; i >= 2; i-- {
		old = append(old, putBackup(t, bucket, now.Add(-time.Duration(i)*day), src.Database, true))
	}
	newest := putBackup(t, bucket, now.Add(-day), src.Database, true)
	incomplete := putBackup(t, bucket, now.Add(-day*5/2), src.Database, false)
	other := putBackup(t, bucket, now.Add(-10*day), "other", true)
	if err := bucket.WriteAll(ctx, "notes.txt", []byte("not a backup"), nil); err != nil {
		t.Fatal(err)
	}

	rep, err := Backup(ctx, src, bucket, Options{Retention: &retention.Policy{KeepLast: 2}})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if rep.PruneError != nil {
		t.Errorf("PruneError: %v", rep.PruneError)
	}
	wantPruned := append(slices.Clone(old), incomplete)
	sort.Strings(wantPruned)
	got := slices.Clone(rep.Pruned)
	sort.Strings(got)
	if !slices.Equal(got, wantPruned) {
		t.Errorf("pruned %v, want %v", got, wantPruned)
	}
	want := []string{"notes.txt"}
	for _, k := range []string{newest, rep.Manifest.Key, other} {
		want = append(want, k, k+ManifestSuffix)
	}
	sort.Strings(want)
	if left := files(t, dir); !slices.Equal(left, want) {
		t.Errorf("the bucket holds %v, want %v", left, want)
	}
}

// testCommand runs `steward backup` and `steward restore` as main does, with
// their configuration in the environment, and reads their results.
func testCommand(t *testing.T, srv *server) {
	src := srv.source()
	ctx := context.Background()
	store := t.TempDir()
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "any-key"), []byte("value"), 0o600); err != nil {
		t.Fatal(err)
	}
	termination := filepath.Join(t.TempDir(), "termination-log")
	env := map[string]string{
		dumpcmd.EnvDBType: src.Type, dumpcmd.EnvDBHost: src.Host, dumpcmd.EnvDBPort: strconv.Itoa(src.Port), dumpcmd.EnvDBName: src.Database,
		dumpcmd.EnvDBUsername: src.Username, dumpcmd.EnvDBPassword: src.Password, dumpcmd.EnvDBBinDir: src.BinDir,
		dumpcmd.EnvDestinationType: "file", dumpcmd.EnvDestinationBucket: store, dumpcmd.EnvDestinationPrefix: "team/app",
		dumpcmd.EnvStoreCredentialsDir: creds, dumpcmd.EnvKeepLast: "5", dumpcmd.EnvTerminationLog: termination,
	}
	getenv := func(k string) string { return env[k] }
	result := func() (dumpcmd.Result, string) {
		t.Helper()
		data, err := os.ReadFile(termination)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > dumpcmd.MaxResultBytes {
			t.Errorf("the result has %d bytes", len(data))
		}
		noSecret(t, "the result", string(data), src.Password)
		r, err := dumpcmd.ParseResult(string(data))
		if err != nil {
			t.Fatal(err)
		}
		return r, string(data)
	}

	log := &syncBuffer{}
	if code := Main(ctx, "backup", getenv, log); code != 0 {
		t.Fatalf("backup exited with %d: %s", code, log.String())
	}
	r, raw := result()
	size, sum := fileSum(t, filepath.Join(store, "team/app", r.Key))
	if !r.Succeeded || r.Key == "" || r.Size != size || r.SHA256 != sum || r.Error != "" || r.Pruned != 0 ||
		r.CompletionTime.Before(r.StartTime) || r.DurationSeconds <= 0 {
		t.Errorf("result %s; the object has %d bytes, sha256 %s", raw, size, sum)
	}

	target := srv.createDatabase(t, "from command")
	env[dumpcmd.EnvDBName] = target.Database
	if code := Main(ctx, "restore", getenv, log); code != 0 {
		t.Fatalf("restore exited with %d: %s", code, log.String())
	}
	rr, raw := result()
	if !rr.Succeeded || rr.Key != r.Key || rr.SHA256 != r.SHA256 {
		t.Errorf("restore result %s, backup %s", raw, r.Key)
	}
	if got, want := pgDigest(t, target), pgDigest(t, src); got != want {
		t.Errorf("restored %s, source %s", got, want)
	}

	env[dumpcmd.EnvDBName] = src.Database
	env[dumpcmd.EnvDBPassword] = secret(t)
	if code := Main(ctx, "backup", getenv, log); code == 0 {
		t.Errorf("backup with a wrong password exited with 0")
	}
	fr, raw := result()
	noSecret(t, "the result", raw, env[dumpcmd.EnvDBPassword])
	noSecret(t, "the log", log.String(), env[dumpcmd.EnvDBPassword])
	noSecret(t, "the log", log.String(), src.Password)
	if fr.Succeeded || !strings.Contains(fr.Error, "pg_dump") || fr.Key != "" {
		t.Errorf("failed backup's result %s", raw)
	}
}

func TestResultBounded(t *testing.T) {
	r := dumpcmd.Result{Succeeded: false, Key: "2024/01/01/x.pgdump", Error: strings.Repeat("é", 5000), PruneError: strings.Repeat("x", 5000)}
	data := r.Marshal()
	if len(data) > dumpcmd.MaxResultBytes {
		t.Fatalf("%d bytes", len(data))
	}
	back, err := dumpcmd.ParseResult(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if back.Key != r.Key || !strings.HasPrefix(r.Error, strings.TrimSuffix(back.Error, "…")) || back.Error == "" {
		t.Errorf("parsed %+v", back)
	}
	if _, err := dumpcmd.ParseResult("plain text"); err == nil {
		t.Error("ParseResult accepted plain text")
	}
	if _, err := dumpcmd.ParseResult(""); err == nil {
		t.Error("ParseResult accepted an empty message")
	}
}
