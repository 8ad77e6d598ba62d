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
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	// Manifest is the verified backup's, when it was found.
	Manifest Manifest
	// Passed: the backup restored and matches its manifest.
	Passed bool
	// Reason is one of the verification reasons of api/v1alpha1
	// (ReasonVerificationPassed, ReasonChecksumMismatch, ...).
	Reason string
	// Message says what was checked, or what did not match.
	Message string
	// Tables is the number of tables whose digests were compared.
	Tables int
}

// VerifyError is a failed verification: Reason as in VerifyReport.
type VerifyError struct {
	Reason string
	Err    error
}

func (e *VerifyError) Error() string { return e.Err.Error() }
func (e *VerifyError) Unwrap() error { return e.Err }

func verifyFailed(reason string, err error) error { return &VerifyError{Reason: reason, Err: err} }

// FindLatest returns the key of the newest good backup of type typ and,
// unless database is empty, of that database.
func FindLatest(ctx context.Context, bucket *blob.Bucket, typ, database string) (string, error) {
	all, err := List(ctx, bucket)
	if err != nil {
		return "", err
	}
	key := ""
	for _, e := range all {
		if e.Good() && e.Manifest.Type == typ && (database == "" || e.Manifest.Database == database) {
			key = e.Key
		}
	}
	if key == "" {
		what := fmt.Sprintf("%s backup", typ)
		if database != "" {
			what = fmt.Sprintf("%s backup of database %q", typ, database)
		}
		return "", verifyFailed(v1alpha1.ReasonNoBackup, fmt.Errorf("there is no complete %s in the bucket", what))
	}
	return key, nil
}

// Verify restores the backup at key (or, for Latest, the newest good
// backup of target.Type and database) into target, an empty database of
// a throwaway server, and compares it with its manifest: size and SHA-256
// of the object before anything is restored, then every table's row count
// and checksum, computed from the restored data as they were at backup
// time (see the package documentation). A non-nil error is a
// *VerifyError, or an error of the store; the report says what was
// checked either way.
func Verify(ctx context.Context, bucket *blob.Bucket, key, database string, target Target, opts RestoreOptions) (VerifyReport, error) {
	var rep VerifyReport
	fail := func(reason string, err error) (VerifyReport, error) {
		rep.Reason, rep.Message = reason, err.Error()
		return rep, verifyFailed(reason, err)
	}
	if err := target.validate(); err != nil {
		return fail(v1alpha1.ReasonVerificationFailed, err)
	}
	if key == "" || key == Latest {
		k, err := FindLatest(ctx, bucket, target.Type, database)
		if err != nil {
			var ve *VerifyError
			if errors.As(err, &ve) {
				return fail(ve.Reason, ve.Err)
			}
			return rep, err
		}
		key = k
	}
	m, err := readManifest(ctx, bucket, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fail(v1alpha1.ReasonNoBackup, fmt.Errorf("backup %s has no manifest: it is missing or incomplete", key))
	}
	if err != nil {
		return rep, fmt.Errorf("reading the manifest of %s: %w", key, err)
	}
	rep.Manifest = m
	if m.Type != target.Type {
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("backup %s is a %s backup, not %s", key, m.Type, target.Type))
	}
	d, _ := dumperFor(m.Type)
	if d.format != m.Format {
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("backup %s has format %q; this version restores %q", key, m.Format, d.format))
	}
	if m.DigestMethod != "" && m.DigestMethod != digestMethod(m.Type) {
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("backup %s has table digests of method %q; this version computes %q", key, m.DigestMethod, digestMethod(m.Type)))
	}

	start := time.Now()
	if err := verify(ctx, bucket, m); err != nil {
		if errors.Is(err, ErrChecksum) {
			return fail(v1alpha1.ReasonChecksumMismatch, err)
		}
		return rep, err
	}
	opts.logf("verify: %s has its manifest's size and sha256 (%d bytes, %s), read in %v", key, m.Size, m.SHA256, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := load(ctx, bucket, m, d, target, opts); err != nil {
		if errors.Is(err, ErrChecksum) {
			return fail(v1alpha1.ReasonChecksumMismatch, err)
		}
		if ctx.Err() != nil {
			return fail(v1alpha1.ReasonVerificationFailed, err)
		}
		return fail(v1alpha1.ReasonRestoreFailed, fmt.Errorf("restoring %s: %w", key, err))
	}
	opts.logf("verify: %s restored in %v", key, time.Since(start).Round(time.Millisecond))

	if m.DigestMethod == "" {
		rep.Passed, rep.Reason = true, v1alpha1.ReasonNoTableDigests
		rep.Message = fmt.Sprintf("%s restored and has its manifest's sha256 %s; its manifest has no table digests (a backup taken before Steward recorded them), so the tables were not compared", key, m.SHA256)
		return rep, nil
	}
	start = time.Now()
	got, err := Digests(ctx, target, opts.TempDir)
	if err != nil {
		if ctx.Err() != nil {
			return fail(v1alpha1.ReasonVerificationFailed, err)
		}
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("computing the digests of the restored tables: %s", scrub(target, err.Error())))
	}
	opts.logf("verify: digests of %d restored tables computed in %v", len(got), time.Since(start).Round(time.Millisecond))
	rep.Tables = len(m.Tables)
	if reason, msg := CompareDigests(m.Tables, got); reason != "" {
		return fail(reason, fmt.Errorf("%s restored, but it does not match its manifest: %s", key, msg))
	}
	rep.Passed, rep.Reason = true, v1alpha1.ReasonVerificationPassed
	var rows int64
	for _, t := range m.Tables {
		rows += t.Rows
	}
	rep.Message = fmt.Sprintf("%s restored with its manifest's sha256 %s; %d tables, %d rows, each table's row count and checksum as at backup time", key, m.SHA256, len(m.Tables), rows)
	return rep, nil
}

func digestMethod(typ string) string {
	switch typ {
	case TypePostgreSQL:
		return DigestPostgreSQL
	case TypeMySQL:
		return DigestSQLInserts
	}
	return ""
}

// Digests computes the tables' digests of database s as a backup's
// manifest records them: for PostgreSQL with the same queries, for MySQL
// by dumping it with the same tool and options, into nothing.
func Digests(ctx context.Context, s Source, tempDir string) ([]TableDigest, error) {
	switch s.Type {
	case TypePostgreSQL:
		c, err := pgConnect(ctx, s)
		if err != nil {
			return nil, err
		}
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
		if err := pgSetDigestSettings(ctx, c); err != nil {
			return nil, err
		}
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return nil, err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		return pgDigests(ctx, tx)
	case TypeMySQL:
		d, _ := dumperFor(s.Type)
		dg := newInsertDigester()
		if _, err := runDump(ctx, s, d, io.Writer(dg), nil, Options{TempDir: tempDir}); err != nil {
			return nil, err
		}
		return dg.digests(), nil
	}
	return nil, fmt.Errorf("%s backups have no table digests", s.Type)
}

// maxMismatches is how many mismatching tables a message names.
const maxMismatches = 5

// CompareDigests compares the manifest's digests with the restored
// tables'. It returns "" when they are equal, or else the reason,
// ReasonRowCountMismatch when a table's row count differs or a table is
// missing or extra, else ReasonTableChecksumMismatch, and a message that
// names the tables.
func CompareDigests(want, got []TableDigest) (reason, message string) {
	have := map[string]TableDigest{}
	for _, t := range got {
		have[t.Table] = t
	}
	var counts, sums []string
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.Table] = true
		g, ok := have[w.Table]
		switch {
		case !ok:
			counts = append(counts, fmt.Sprintf("table %s (%d rows at backup time) is missing", w.Table, w.Rows))
		case g.Rows != w.Rows:
			counts = append(counts, fmt.Sprintf("table %s has %d rows, %d at backup time", w.Table, g.Rows, w.Rows))
		case g.Checksum != w.Checksum:
			sums = append(sums, fmt.Sprintf("table %s has its %d rows but another checksum (%s, %s at backup time)", w.Table, w.Rows, g.Checksum, w.Checksum))
		}
	}
	for _, g := range got {
		if !seen[g.Table] {
			counts = append(counts, fmt.Sprintf("table %s (%d rows) is not in the manifest", g.Table, g.Rows))
		}
	}
	sort.Strings(counts)
	sort.Strings(sums)
	all := slices.Concat(counts, sums)
	if len(all) == 0 {
		return "", ""
	}
	reason = v1alpha1.ReasonTableChecksumMismatch
	if len(counts) > 0 {
		reason = v1alpha1.ReasonRowCountMismatch
	}
	if len(all) > maxMismatches {
		all = append(all[:maxMismatches], fmt.Sprintf("and %d more", len(all)-maxMismatches))
	}
	return reason, strings.Join(all, "; ")
}
