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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Latest names the newest good backup in Restore.
const Latest = "latest"

// ErrChecksum means a stored backup does not match its manifest.
var ErrChecksum = errors.New("backup checksum mismatch")

// ErrNotEmpty means the restore target already holds tables.
var ErrNotEmpty = errors.New("the target database is not empty")

// RestoreOptions tune a restore.
type RestoreOptions struct {
	// Overwrite allows restoring into a database that holds tables: the
	// objects in the backup are dropped and created again (PostgreSQL:
	// pg_restore --clean --if-exists; MySQL: the dump's DROP TABLE IF
	// EXISTS; MongoDB: mongorestore --drop). Other objects are left alone.
	Overwrite bool
	// TempDir and Log as in Options.
	TempDir string
	Log     io.Writer
}

func (o RestoreOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Restore restores the backup at key, or the newest good one when key is
// Latest, into target and returns its manifest. The object is verified
// against its manifest before the target is touched.
func Restore(ctx context.Context, bucket *blob.Bucket, key string, target Target, opts RestoreOptions) (Manifest, error) {
	if err := target.validate(); err != nil {
		return Manifest{}, err
	}
	if key == "" {
		return Manifest{}, errors.New("no backup key given")
	}
	if key == Latest {
		all, err := List(ctx, bucket)
		if err != nil {
			return Manifest{}, err
		}
		key = ""
		for _, e := range all {
			if e.Good() && e.Manifest.Type == target.Type {
				key = e.Key
			}
		}
		if key == "" {
			return Manifest{}, fmt.Errorf("there is no complete %s backup in the bucket", target.Type)
		}
	}
	m, err := readManifest(ctx, bucket, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Manifest{}, fmt.Errorf("backup %s has no manifest: it is missing or incomplete and cannot be restored", key)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("reading the manifest of %s: %w", key, err)
	}
	if m.Type != target.Type {
		return m, fmt.Errorf("backup %s is a %s backup and cannot be restored into %s", key, m.Type, target.Type)
	}
	d, _ := dumperFor(m.Type)
	if d.format != m.Format {
		return m, fmt.Errorf("backup %s has format %q; this version restores %q", key, m.Format, d.format)
	}
	if !opts.Overwrite {
		if target.Type == TypeMongoDB {
			return m, fmt.Errorf("%w: restoring MongoDB cannot check whether %q is empty; set spec.overwrite: true to restore, replacing the collections that are in the backup", ErrNotEmpty, target.Database)
		}
		n, err := countTables(ctx, target)
		if err != nil {
			return m, fmt.Errorf("checking that the target database is empty: %s", scrub(target, err.Error()))
		}
		if n > 0 {
			return m, fmt.Errorf("%w: %q has %d tables; set spec.overwrite: true to restore over them (the tables in the backup are dropped and created again)", ErrNotEmpty, target.Database, n)
		}
	}
	start := time.Now()
	if err := verify(ctx, bucket, m); err != nil {
		return m, err
	}
	opts.logf("restore: %s verified (%d bytes, sha256 %s) in %v", key, m.Size, m.SHA256, time.Since(start).Round(time.Millisecond))
	if err := load(ctx, bucket, m, d, target, opts); err != nil {
		return m, err
	}
	opts.logf("restore: %s restored into %s database %q", key, target.Type, target.Database)
	return m, nil
}

// verify reads the whole object and compares its size and SHA-256 with the
// manifest.
func verify(ctx context.Context, bucket *blob.Bucket, m Manifest) error {
	r, err := bucket.NewReader(ctx, m.Key, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", m.Key, err)
	}
	defer func() { _ = r.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return fmt.Errorf("reading %s: %w", m.Key, err)
	}
	return checkSum(m, n, hex.EncodeToString(h.Sum(nil)))
}

func checkSum(m Manifest, size int64, sum string) error {
	if size != m.Size || sum != m.SHA256 {
		return fmt.Errorf("%w: %s has %d bytes with sha256 %s, its manifest says %d bytes with sha256 %s; the target was not touched",
			ErrChecksum, m.Key, size, sum, m.Size, m.SHA256)
	}
	return nil
}

// load streams the object into the restore tool. The stream is hashed
// again: when it no longer matches, the tool is killed before its input
// ends.
func load(ctx context.Context, bucket *blob.Bucket, m Manifest, d dumper, target Target, opts RestoreOptions) error {
	t, err := command(target, true, opts.Overwrite, m.Database, opts.TempDir)
	if err != nil {
		return err
	}
	defer t.cleanup()
	t.cmd.Stdout = t.tail
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return err
	}
	r, err := bucket.NewReader(ctx, m.Key, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", m.Key, err)
	}
	defer func() { _ = r.Close() }()
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %s", t.name, scrub(target, err.Error()))
	}
	stop := context.AfterFunc(ctx, func() { _ = t.cmd.Process.Kill() })
	defer stop()

	h := sha256.New()
	n := &counter{}
	in := io.TeeReader(r, io.MultiWriter(h, n))
	var feedErr error
	if d.gzip {
		var gz *gzip.Reader
		if gz, feedErr = gzip.NewReader(in); feedErr == nil {
			_, feedErr = io.Copy(stdin, gz)
		}
	} else {
		_, feedErr = io.Copy(stdin, in)
	}
	if feedErr == nil {
		// Whatever the decompressor left unread still counts for the sum.
		_, feedErr = io.Copy(io.Discard, in)
	}
	if feedErr == nil {
		feedErr = checkSum(m, n.n, hex.EncodeToString(h.Sum(nil)))
	}
	if feedErr != nil {
		// The tool must not see a clean end of its input.
		_ = t.cmd.Process.Kill()
	}
	_ = stdin.Close()
	waitErr := t.cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", t.name, ctx.Err())
	case errors.Is(feedErr, ErrChecksum):
		return fmt.Errorf("%w (it changed while it was restored; %s was stopped)", feedErr, t.name)
	case waitErr != nil:
		return toolError(target, t, waitErr)
	case feedErr != nil:
		return fmt.Errorf("feeding %s to %s: %w", m.Key, t.name, feedErr)
	}
	return nil
}
