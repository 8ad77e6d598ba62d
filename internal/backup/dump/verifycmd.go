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
	"os"
	"path/filepath"
	"time"

	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/redact"
	"github.com/steward-dev/steward/internal/backup/scratch"
)

// scratchUser is the user the throwaway server runs as: nobody in
// particular in a pod, which runs as the engine's user already; tests
// running as root set it.
var scratchUser = func(typ string) (uid, gid uint32) { return 0, 0 }

// runVerify is `steward backup-verify`: it finds the backup, starts a
// throwaway server in a temporary directory of the pod, and verifies the
// backup by restoring it there.
func runVerify(ctx context.Context, getenv func(string) string, creds map[string][]byte, red *redact.Redactor, log io.Writer) (dumpcmd.Result, error) {
	var res dumpcmd.Result
	typ, database := getenv(dumpcmd.EnvDBType), getenv(dumpcmd.EnvDBName)
	if typ != TypePostgreSQL && typ != TypeMySQL {
		return res, fmt.Errorf("%s=%q: backup-verify verifies %s and %s backups", dumpcmd.EnvDBType, typ, TypePostgreSQL, TypeMySQL)
	}
	d := destinationFromEnv(getenv)
	bucket, err := openBucket(ctx, d, creds)
	if err != nil {
		return res, err
	}
	defer func() { _ = bucket.Close() }()

	fail := func(reason string, err error) (dumpcmd.Result, error) {
		res.Reason = reason
		return res, err
	}
	// Which backup, before a server is started for nothing.
	key := getenv(dumpcmd.EnvVerifyKey)
	if key == "" || key == Latest {
		if key, err = FindLatest(ctx, bucket, typ, database); err != nil {
			return fail(verifyReason(err), err)
		}
	}
	res.Key = key
	m, err := readManifest(ctx, bucket, key)
	switch {
	case gcerrors.Code(err) == gcerrors.NotFound:
		return fail(v1alpha1.ReasonNoBackup, fmt.Errorf("backup %s has no manifest: it is missing or incomplete", key))
	case err != nil:
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("reading the manifest of %s: %w", key, err))
	}
	res.Size, res.SHA256 = m.Size, m.SHA256
	fmt.Fprintf(log, "%s: verifying %s (%d bytes, %d tables in its manifest)\n", dumpcmd.CommandVerify, key, m.Size, len(m.Tables))

	dir, err := os.MkdirTemp("", "scratch-")
	if err != nil {
		return fail(v1alpha1.ReasonVerificationFailed, fmt.Errorf("creating the throwaway server's directory: %w", err))
	}
	defer func() { _ = os.RemoveAll(dir) }()
	uid, gid := scratchUser(typ)
	if uid != 0 {
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return fail(v1alpha1.ReasonVerificationFailed, err)
		}
	}
	kind := scratch.PostgreSQL
	if typ == TypeMySQL {
		kind = scratch.MySQL
	}
	binDir := getenv(dumpcmd.EnvDBBinDir)
	srv, err := scratch.New(scratch.Config{Type: kind, Dir: filepath.Join(dir, "s"), BinDir: binDir,
		Database: m.Database, RunAsUID: uid, RunAsGID: gid, Output: log})
	if err != nil {
		return fail(v1alpha1.ReasonVerificationFailed, err)
	}
	red.Add(srv.Passwords()...)
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintf(log, "%s: stopping the throwaway server: %v\n", dumpcmd.CommandVerify, err)
		}
	}()
	start := time.Now()
	if err := srv.Init(ctx); err != nil {
		return fail(v1alpha1.ReasonVerificationFailed, err)
	}
	if err := srv.Start(ctx); err != nil {
		return fail(v1alpha1.ReasonVerificationFailed, err)
	}
	fmt.Fprintf(log, "%s: throwaway %s server started in %v\n", dumpcmd.CommandVerify, kind, time.Since(start).Round(time.Millisecond))
	su := srv.Superuser()
	target := Target{Type: typ, Host: su.Host, Port: su.Port, Database: su.Database,
		Username: su.Username, Password: su.Password, BinDir: binDir}
	rep, err := Verify(ctx, bucket, key, database, target, RestoreOptions{Log: log})
	res.TablesChecked = rep.Tables
	res.Reason, res.Message = rep.Reason, rep.Message
	if err != nil && rep.Reason == "" {
		res.Reason = verifyReason(err)
	}
	return res, err
}

// verifyReason is the verification reason of an error of Verify.
func verifyReason(err error) string {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	if r := reason(err); r != "" {
		return r
	}
	return v1alpha1.ReasonVerificationFailed
}
