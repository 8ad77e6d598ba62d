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

// Package dump takes logical backups of a database into a gocloud blob
// bucket and restores them. It is what `steward backup` and `steward
// restore` run, in a pod of the engine's official image (which carries the
// dump tools) with Steward's binary copied in.
//
// # Backup
//
// Backup runs the engine's dump tool as a child process and streams its
// output, compressed where the tool does not compress itself, straight into
// the bucket's writer while SHA-256 and size are computed on the way: there
// is no local copy. Passwords reach the tools through files of mode 0600 in
// a private temporary directory (PGPASSFILE, an option file for mysqldump,
// a --config file for mongodump), never through argv or a log.
//
// If the tool fails, the writer's context is cancelled before Close, so no
// partial object is committed; the error quotes the end of the tool's
// standard error with the password removed. Once the object is committed a
// manifest, <key>.manifest.json, is written next to it. A backup is good
// when its manifest exists and the object's size matches the manifest;
// objects without a manifest are incomplete (a dump that was interrupted
// after its commit, or whose manifest could not be written).
//
// After the manifest is written, and only then, backups are pruned by the
// retention policy (package retention). A pruning failure does not fail
// the backup: it is reported separately.
//
// # Keys and formats
//
// Keys are <YYYY>/<MM>/<DD>/<YYYYMMDDTHHMMSS.mmmZ>-<database>.<ext> in UTC,
// so that they sort by time both as a whole and within a day's folder, and
// a bucket browser shows one folder per day. Characters of the database name
// outside [A-Za-z0-9_-] become "_".
//
//   - postgresql: pg_dump --format=custom, extension "pgdump". The custom
//     format is pg_restore's: it restores with --clean --if-exists,
//     --no-owner and in a single transaction, which a plain SQL script fed
//     to psql cannot do as well. It is compressed by pg_dump itself (zlib),
//     so gzip on top would only cost CPU; the manifest records format
//     "pg_dump-custom" and compression "pg_dump".
//   - mysql: mysqldump or mariadb-dump (whichever the image has, MariaDB's
//     name first) of the one database with --single-transaction --routines
//     --triggers --events --hex-blob, a plain SQL script without CREATE
//     DATABASE or USE, so that it restores into a database of any name;
//     gzip-compressed here. Extension "sql.gz", format "sql", compression
//     "gzip".
//   - mongodb: mongodump --archive --gzip of the one database, extension
//     "archive.gz", format "mongodump-archive", compression "mongodump".
//     This path is NOT verified by this package's tests: the test machines
//     have neither mongodump nor a MongoDB server.
//
// # Restore
//
// Restore reads the backup's manifest, refuses a target that already holds
// tables unless overwrite is set, then reads the object twice: first to
// verify its size and SHA-256 against the manifest without touching the
// target, then to stream it into pg_restore, the mysql client or
// mongorestore. The second pass is hashed too; if the object changed in
// between, the restore tool is killed before its input ends (PostgreSQL's
// single transaction then rolls back).
//
// # Table digests
//
// The manifest also records, per table, the number of rows and an
// order-independent checksum of them (Manifest.Tables), describing
// exactly the data in the dump even while the database is written to:
//
//   - postgresql: a read-only REPEATABLE READ transaction exports its
//     snapshot (pg_export_snapshot), pg_dump dumps that snapshot
//     (--snapshot), and the same transaction computes, per table,
//     count(*) and the sum of the first 64 bits of md5(row::text), with
//     the settings that shape a row's text (TimeZone, DateStyle,
//     extra_float_digits, bytea_output, ...) fixed. Both see the same
//     rows. The digests cost a second read of every table, in the
//     database, while pg_dump reads it too.
//   - mysql: mysqldump's --single-transaction snapshot cannot be shared,
//     so the digests are computed from the dump's own text as it streams
//     past: per table, the tuples of its INSERT statements are counted
//     and the first 64 bits of each tuple's SHA-256 summed. What is
//     counted is what was dumped, by construction. A verification dumps
//     the restored database again with the same tool and options and
//     digests that text the same way: a value that does not survive a
//     restore and a dump unchanged shows as a mismatch.
//   - mongodb: no digests.
//
// A sum of hashes does not depend on the rows' order, which a restore
// does not keep for tables without a primary key, and counts a row as
// many times as it occurs. It detects corruption and lost or altered
// rows; it is not a cryptographic commitment (the object's SHA-256 is
// the integrity check).
//
// # Verification
//
// Verify restores a backup into an empty database of a throwaway server
// (package scratch, started by `steward backup-verify` in its own pod),
// after checking the object's size and SHA-256 as Restore does, and
// compares the restored tables' digests with the manifest's. It reports
// one of the verification reasons of api/v1alpha1: VerificationPassed,
// ChecksumMismatch (nothing was restored), RestoreFailed,
// RowCountMismatch, TableChecksumMismatch, NoBackup, NoTableDigests (a
// manifest from before the digests: restored and checksummed only) or
// VerificationFailed. It proves that the stored dump restores with the
// tool of the image it ran in, and holds the rows that were dumped; it
// does not prove that the application finds what it needs in them, nor
// that a dump taken later will restore.
package dump

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/retention"
)

// Version is Steward's version, recorded in every manifest. The build sets
// it with -ldflags "-X github.com/steward-dev/steward/internal/backup/dump.Version=...".
var Version = "dev"

// Types of database.
const (
	TypePostgreSQL = "postgresql"
	TypeMySQL      = "mysql"
	TypeMongoDB    = "mongodb"
)

// ManifestSuffix ends the key of a backup's manifest: <key>.manifest.json.
const ManifestSuffix = ".manifest.json"

// Source is the database to back up. Password never appears in logs,
// errors or argv.
type Source struct {
	// Type is TypePostgreSQL, TypeMySQL or TypeMongoDB.
	Type string
	// Host is a host name or address; Port zero means the engine's default.
	Host string
	Port int
	// Database is the one database dumped.
	Database string
	Username string
	Password string
	// BinDir is where the dump and restore tools are; empty means $PATH.
	BinDir string
}

// Target is the database a backup is restored into.
type Target = Source

// Manifest describes one backup. It is stored as JSON at
// <Key>.manifest.json.
type Manifest struct {
	// ManifestVersion is 1.
	ManifestVersion int    `json:"manifestVersion"`
	Key             string `json:"key"`
	Type            string `json:"type"`
	Host            string `json:"host"`
	Port            int    `json:"port"`
	Database        string `json:"database"`
	// ServerVersion is what the server answered to SELECT version().
	ServerVersion string    `json:"serverVersion,omitempty"`
	StartTime     time.Time `json:"startTime"`
	EndTime       time.Time `json:"endTime"`
	// Size and SHA256 (hex) are the stored object's, as stored.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Format is "pg_dump-custom", "sql" or "mongodump-archive";
	// Compression is "pg_dump", "gzip" or "mongodump" (the tool's own).
	Format      string `json:"format"`
	Compression string `json:"compression"`
	// Tool is the dump program's name.
	Tool           string `json:"tool"`
	StewardVersion string `json:"stewardVersion"`
	// DigestMethod says how Tables were computed (DigestPostgreSQL,
	// DigestSQLInserts); empty, with no Tables, in manifests written
	// before Steward recorded them, and for MongoDB.
	DigestMethod string `json:"digestMethod,omitempty"`
	// Tables are the row count and checksum of every table, of exactly
	// the data in the dump; sorted by table.
	Tables []TableDigest `json:"tables,omitempty"`
	// GTIDPosition is the MariaDB GTID position of the dump's snapshot,
	// when Options.GTIDPosition asked for it: replaying the binary log's
	// transactions after it onto the restored dump rolls it forward.
	GTIDPosition string `json:"gtidPosition,omitempty"`
}

// Options tune a backup.
type Options struct {
	// Retention, when set, prunes older backups of the same database after
	// a successful backup. Nil keeps everything.
	Retention *retention.Policy
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TempDir holds the short-lived password files; empty means the
	// system's temporary directory.
	TempDir string
	// Log receives progress lines (never a password); nil discards them.
	Log io.Writer
	// GTIDPosition records, in Manifest.GTIDPosition, the MariaDB GTID
	// position of the dump's snapshot (mariadb-dump --master-data=2
	// --gtid), where a point-in-time recovery's binary log replay starts.
	// It needs no privilege beyond the dump's on MariaDB; other engines
	// ignore it.
	GTIDPosition bool
	// KeyPrefix is put before the backup's key (point-in-time base
	// backups live under their archive's prefix). Retention, which lists
	// the bucket's dumps, must be nil with it.
	KeyPrefix string
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Report is what a backup did.
type Report struct {
	Manifest Manifest
	// Pruned are the keys of the backups deleted by retention.
	Pruned []string
	// PruneError is why pruning failed, in part or whole; the backup itself
	// succeeded all the same.
	PruneError error
}

func (s Source) validate() error {
	if _, err := dumperFor(s.Type); err != nil {
		return err
	}
	switch {
	case s.Host == "":
		return errors.New("the database host is empty")
	case s.Database == "":
		return errors.New("the database name is empty")
	case strings.HasPrefix(s.Database, "-"):
		return fmt.Errorf("invalid database name %q", s.Database)
	case s.Username == "":
		return errors.New("the database user name is empty")
	case s.Port < 0 || s.Port > 65535:
		return fmt.Errorf("invalid port %d", s.Port)
	}
	return nil
}

var unsafeKeyChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// KeyName is the database's name as it appears in keys.
func KeyName(database string) string {
	return unsafeKeyChars.ReplaceAllString(database, "_")
}

const keyTimeFormat = "20060102T150405.000Z"

// ObjectKey is the key of a backup of database taken at t with extension ext.
func ObjectKey(t time.Time, database, ext string) string {
	t = t.UTC()
	return t.Format("2006/01/02/") + t.Format(keyTimeFormat) + "-" + KeyName(database) + "." + ext
}

// Backup dumps src into bucket, writes the manifest and then prunes by
// opts.Retention. A non-nil error means there is no new backup (and nothing
// was pruned); a pruning failure is in Report.PruneError instead.
func Backup(ctx context.Context, src Source, bucket *blob.Bucket, opts Options) (Report, error) {
	if err := src.validate(); err != nil {
		return Report{}, err
	}
	d, _ := dumperFor(src.Type)
	start := opts.now()
	key := opts.KeyPrefix + ObjectKey(start, src.Database, d.ext)
	if opts.KeyPrefix != "" && opts.Retention != nil {
		return Report{}, errors.New("a key prefix and a retention policy exclude each other")
	}
	m := Manifest{
		ManifestVersion: 1, Key: key, Type: src.Type, Host: src.Host, Port: src.port(),
		Database: src.Database, StartTime: start,
		Format: d.format, Compression: d.compression, StewardVersion: Version,
	}
	opts.logf("backup: dumping %s database %q from %s:%d into %s", src.Type, src.Database, src.Host, src.port(), key)
	up, err := upload(ctx, src, bucket, key, d, opts)
	if err != nil {
		return Report{}, err
	}
	size, sum := up.size, up.sum // for the log below
	m.Size, m.SHA256, m.Tool, m.ServerVersion = up.size, up.sum, up.tool, up.version
	m.DigestMethod, m.Tables, m.GTIDPosition = up.method, up.tables, up.gtid
	m.EndTime = opts.now()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Report{}, err
	}
	if err := bucket.WriteAll(ctx, key+ManifestSuffix, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		// Without its manifest the object is incomplete: remove it rather
		// than leave it to the next pruning.
		if derr := bucket.Delete(context.WithoutCancel(ctx), key); derr != nil && gcerrors.Code(derr) != gcerrors.NotFound {
			opts.logf("backup: removing %s after the manifest failed: %v", key, derr)
		}
		return Report{}, fmt.Errorf("writing the manifest of %s: %w", key, err)
	}
	opts.logf("backup: stored %s (%d bytes, sha256 %s)", key, size, sum)
	r := Report{Manifest: m}
	if opts.Retention != nil {
		r.Pruned, r.PruneError = prune(ctx, bucket, src, d, key, *opts.Retention, opts.now())
		for _, k := range r.Pruned {
			opts.logf("backup: pruned %s", k)
		}
		if r.PruneError != nil {
			opts.logf("backup: pruning failed: %v", r.PruneError)
		}
	}
	return r, nil
}

// counter counts the bytes written through it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// uploaded is what upload stored.
type uploaded struct {
	size               int64
	sum, tool, version string
	method             string
	tables             []TableDigest
	gtid               string
}

// upload streams the dump into a new object, and computes the tables'
// digests of the data dumped. Any failure cancels the writer's context
// before Close, so that nothing is committed.
func upload(ctx context.Context, src Source, bucket *blob.Bucket, key string, d dumper, opts Options) (uploaded, error) {
	var up uploaded
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: d.contentType})
	if err != nil {
		return up, fmt.Errorf("opening %s for writing: %w", key, err)
	}
	abort := func(err error) (uploaded, error) {
		cancel()
		_ = w.Close()
		return uploaded{}, err
	}
	h := sha256.New()
	n := &counter{}
	stored := io.MultiWriter(w, h, n)
	sink := stored
	var gz *gzip.Writer
	if d.gzip {
		gz = gzip.NewWriter(stored)
		sink = gz
	}
	var extraArgs []string
	var digests func() ([]TableDigest, error)
	var gs *gtidSniffer
	switch src.Type {
	case TypePostgreSQL:
		// pg_dump dumps the snapshot of a transaction of ours, in which
		// the digests are computed: both see the same rows, whatever is
		// written meanwhile.
		snap, err := pgExportSnapshot(ctx, src)
		if err != nil {
			return abort(fmt.Errorf("pg_dump: connecting to export the snapshot it dumps: %s", scrub(src, err.Error())))
		}
		defer snap.close(ctx)
		extraArgs = []string{"--snapshot=" + snap.id}
		done := make(chan struct{})
		var tables []TableDigest
		var derr error
		go func() {
			defer close(done)
			tables, derr = pgDigests(ctx, snap.tx)
		}()
		digests = func() ([]TableDigest, error) {
			<-done
			return tables, derr
		}
		up.method = DigestPostgreSQL
	case TypeMySQL:
		dg := newInsertDigester()
		sink = io.MultiWriter(sink, dg)
		digests = func() ([]TableDigest, error) { return dg.digests(), nil }
		up.method = DigestSQLInserts
		if opts.GTIDPosition {
			// The snapshot's position without a global lock: MariaDB
			// reports it for a consistent-snapshot transaction.
			extraArgs = []string{"--master-data=2", "--gtid"}
			gs = &gtidSniffer{}
			sink = io.MultiWriter(sink, gs)
		}
	}
	up.tool, err = runDump(ctx, src, d, sink, extraArgs, opts)
	if gs != nil && err == nil {
		if up.gtid = gs.pos; !gs.found {
			err = errors.New("mariadb-dump did not write the GTID position of its snapshot (is the binary log on?)")
		}
	}
	if digests != nil {
		// Waited for even after a failed dump: the transaction it reads in
		// is closed next.
		tables, derr := digests()
		if err == nil && derr != nil {
			err = fmt.Errorf("computing the tables' digests: %s", scrub(src, derr.Error()))
		}
		up.tables = tables
	}
	if err != nil {
		return abort(err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return abort(fmt.Errorf("writing %s: %w", key, err))
		}
	}
	if up.version, err = serverVersion(ctx, src); err != nil {
		return abort(fmt.Errorf("querying the server's version: %s", scrub(src, err.Error())))
	}
	if err := w.Close(); err != nil {
		return uploaded{}, fmt.Errorf("storing %s: %w", key, err)
	}
	up.size, up.sum = n.n, hex.EncodeToString(h.Sum(nil))
	return up, nil
}

func (s Source) port() int {
	if s.Port != 0 {
		return s.Port
	}
	switch s.Type {
	case TypePostgreSQL:
		return 5432
	case TypeMySQL:
		return 3306
	default:
		return 27017
	}
}

// scrub removes the password from a text. Main removes every other
// credential from what leaves the run.
func scrub(s Source, text string) string {
	return redact.New(s.Password).String(text)
}
