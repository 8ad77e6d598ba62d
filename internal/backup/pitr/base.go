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
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/backup/redact"
)

// keyTime formats the time in base backup keys, as in dump keys.
const keyTime = "20060102T150405.000Z"

// Conn is a replication connection to the primary. Password never appears
// in argv, a log or an error.
type Conn struct {
	Host     string
	Port     int
	Username string
	Password string
	// BinDir holds pg_basebackup and pg_receivewal; empty means $PATH.
	BinDir string
}

// Base describes one base backup; it is stored as JSON next to it.
type Base struct {
	Key string `json:"key"`
	// Database is the database the logical restore takes from the
	// recovered server, and Owner the role that reads it there.
	Database string `json:"database"`
	Owner    string `json:"owner"`
	// StartTime and EndTime bound the backup; recovery can reach any time
	// after EndTime that the archive covers.
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	StartLSN  string    `json:"startLSN"`
	EndLSN    string    `json:"endLSN,omitempty"`
	Timeline  uint32    `json:"timeline"`
	// StartSegment is the first WAL segment recovery from it needs.
	StartSegment string `json:"startSegment"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Tool         string `json:"tool"`
	// GTID is a MariaDB base backup's GTID position: the binary log is
	// replayed from the transaction after it. Such a base backup is a
	// logical dump (Key ends in .sql.gz) with the dump's own manifest
	// beside it.
	GTID string `json:"gtid,omitempty"`
}

// dumpSuffix ends the key of a MariaDB base backup, a logical dump.
const dumpSuffix = ".sql.gz"

// manifestKey is where the base backup's description is.
func (b Base) manifestKey() string {
	name := strings.TrimSuffix(strings.TrimSuffix(path.Base(b.Key), ".tar.gz"), dumpSuffix)
	return basePrefix(b.Database) + name + ".json"
}

// objectKeys are the objects of the base backup.
func (b Base) objectKeys() []string {
	keys := []string{b.Key, b.manifestKey()}
	if strings.HasSuffix(b.Key, dumpSuffix) {
		keys = append(keys, b.Key+dump.ManifestSuffix)
	}
	return keys
}

// TakeDumpBase takes a MariaDB base backup: a logical dump with the GTID
// position of its snapshot, taken with src's credentials (the database
// owner's: no privilege beyond the dump's is needed).
func TakeDumpBase(ctx context.Context, src dump.Source, bucket *blob.Bucket, database string, log io.Writer) (Base, error) {
	b := Base{Database: database, Owner: src.Username, Tool: "mariadb-dump"}
	// The dump lands under base/, named as dumps are.
	rep, err := dump.Backup(ctx, src, bucket, dump.Options{GTIDPosition: true, KeyPrefix: basePrefix(database), Log: log})
	if err != nil {
		return b, err
	}
	m := rep.Manifest
	b.Key, b.StartTime, b.EndTime, b.Size, b.SHA256, b.GTID = m.Key, m.StartTime, m.EndTime, m.Size, m.SHA256, m.GTIDPosition
	if m.Tool != "" {
		b.Tool = m.Tool
	}
	data, _ := json.MarshalIndent(b, "", "  ")
	if err := bucket.WriteAll(ctx, b.manifestKey(), data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return b, fmt.Errorf("writing the base backup's manifest: %w", err)
	}
	return b, nil
}

// tool is a PostgreSQL client program run with the connection's password
// in a private passfile.
type tool struct {
	cmd  *exec.Cmd
	dir  string
	errs *bytes.Buffer
}

func (c Conn) command(ctx context.Context, name string, args ...string) (*tool, error) {
	prog := name
	if c.BinDir != "" {
		prog = filepath.Join(c.BinDir, name)
	}
	dir, err := os.MkdirTemp("", "steward-pitr-")
	if err != nil {
		return nil, err
	}
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	pass := filepath.Join(dir, "pgpass")
	line := fmt.Sprintf("*:*:*:%s:%s\n", esc.Replace(c.Username), esc.Replace(c.Password))
	if err := os.WriteFile(pass, []byte(line), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port := c.Port
	if port == 0 {
		port = 5432
	}
	args = append([]string{"-h", c.Host, "-p", fmt.Sprint(port), "-U", c.Username, "-w"}, args...)
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(dump.CleanEnv(), "PGPASSFILE="+pass, "PGCONNECT_TIMEOUT=15", "PGAPPNAME=steward-pitr")
	errs := &bytes.Buffer{}
	cmd.Stderr = errs
	return &tool{cmd: cmd, dir: dir, errs: errs}, nil
}

// mariadbCommand is a MariaDB client program connecting to the primary,
// with the connection in a private option file.
func (c Conn) mariadbCommand(ctx context.Context, name string, args ...string) (*tool, error) {
	prog := name
	if c.BinDir != "" {
		prog = filepath.Join(c.BinDir, name)
	}
	dir, err := os.MkdirTemp("", "steward-pitr-")
	if err != nil {
		return nil, err
	}
	opt, err := dump.MySQLOptionFile(dir, dump.Source{Host: c.Host, Port: c.mariadbPort(), Username: c.Username, Password: c.Password})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.CommandContext(ctx, prog, append([]string{"--defaults-file=" + opt}, args...)...)
	cmd.Env = dump.CleanEnv()
	errs := &bytes.Buffer{}
	cmd.Stderr = errs
	return &tool{cmd: cmd, dir: dir, errs: errs}, nil
}

func (t *tool) cleanup() { _ = os.RemoveAll(t.dir) }

var (
	startPoint = regexp.MustCompile(`write-ahead log start point: ([0-9A-F]+/[0-9A-F]+) on timeline (\d+)`)
	endPoint   = regexp.MustCompile(`write-ahead log end point: ([0-9A-F]+/[0-9A-F]+)`)
)

// TakeBase takes a base backup of the primary into the bucket and writes
// its manifest. database and owner are recorded for the recovery's
// logical restore.
func TakeBase(ctx context.Context, c Conn, bucket *blob.Bucket, database, owner string, now func() time.Time) (Base, error) {
	red := redact.New(c.Password)
	start := now().UTC()
	b := Base{Key: basePrefix(database) + start.Format(keyTime) + ".tar.gz", Database: database, Owner: owner, StartTime: start, Tool: "pg_basebackup"}
	t, err := c.command(ctx, "pg_basebackup", "-D", "-", "-F", "tar", "-X", "fetch", "-c", "fast", "-v", "--label=steward")
	if err != nil {
		return b, err
	}
	defer t.cleanup()
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return b, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := bucket.NewWriter(wctx, b.Key, &blob.WriterOptions{ContentType: "application/gzip"})
	if err != nil {
		return b, fmt.Errorf("writing %s: %w", b.Key, err)
	}
	sum := sha256.New()
	counted := &counter{w: io.MultiWriter(w, sum)}
	gz, _ := gzip.NewWriterLevel(counted, gzip.BestSpeed)
	if err := t.cmd.Start(); err != nil {
		cancel()
		_ = w.Close()
		return b, fmt.Errorf("starting pg_basebackup: %s", red.String(err.Error()))
	}
	_, copyErr := io.Copy(gz, stdout)
	waitErr := t.cmd.Wait()
	if copyErr == nil {
		copyErr = gz.Close()
	}
	if waitErr != nil || copyErr != nil {
		cancel() // no partial object is committed
		_ = w.Close()
		if waitErr != nil {
			return b, fmt.Errorf("pg_basebackup failed: %s: %s", red.String(waitErr.Error()), red.String(tail(t.errs.String(), 600)))
		}
		return b, fmt.Errorf("storing the base backup: %w", copyErr)
	}
	if err := w.Close(); err != nil {
		return b, fmt.Errorf("storing the base backup: %w", err)
	}
	b.EndTime = now().UTC()
	b.Size, b.SHA256 = counted.n, hex.EncodeToString(sum.Sum(nil))
	m := startPoint.FindStringSubmatch(t.errs.String())
	if m == nil {
		return b, fmt.Errorf("pg_basebackup did not say where its log starts: %s", red.String(tail(t.errs.String(), 600)))
	}
	lsn, err := ParseLSN(m[1])
	if err != nil {
		return b, err
	}
	var tli uint32
	_, _ = fmt.Sscan(m[2], &tli)
	b.StartLSN, b.Timeline, b.StartSegment = m[1], tli, SegmentAt(tli, lsn).Name()
	if e := endPoint.FindStringSubmatch(t.errs.String()); e != nil {
		b.EndLSN = e[1]
	}
	data, _ := json.MarshalIndent(b, "", "  ")
	if err := bucket.WriteAll(ctx, b.manifestKey(), data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return b, fmt.Errorf("writing the base backup's manifest: %w", err)
	}
	return b, nil
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// ListBases lists a database's base backups with a readable manifest whose
// object exists with the recorded size, oldest first.
func ListBases(ctx context.Context, bucket *blob.Bucket, database string) ([]Base, error) {
	sizes := map[string]int64{}
	var manifests []string
	it := bucket.List(&blob.ListOptions{Prefix: basePrefix(database)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing base backups: %w", err)
		}
		switch {
		case strings.HasSuffix(obj.Key, dump.ManifestSuffix):
			// A MariaDB base backup's dump manifest.
		case strings.HasSuffix(obj.Key, ".json"):
			manifests = append(manifests, obj.Key)
		case strings.HasSuffix(obj.Key, ".tar.gz"), strings.HasSuffix(obj.Key, dumpSuffix):
			sizes[obj.Key] = obj.Size
		}
	}
	var bases []Base
	for _, key := range manifests {
		data, err := bucket.ReadAll(ctx, key)
		if err != nil {
			continue
		}
		var b Base
		if json.Unmarshal(data, &b) != nil || !strings.HasPrefix(b.Key, basePrefix(database)) || b.manifestKey() != key {
			continue
		}
		if size, ok := sizes[b.Key]; !ok || size != b.Size {
			continue
		}
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i].StartTime.Before(bases[j].StartTime) })
	return bases, nil
}
