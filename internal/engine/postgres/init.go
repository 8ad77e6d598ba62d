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

package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// Initialized reports whether DataDir holds a database: PG_VERSION exists.
func (e *Engine) Initialized(cfg engine.Config) (bool, error) {
	_, err := os.Stat(filepath.Join(cfg.DataDir, "PG_VERSION"))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// InitPrimary runs initdb in the empty DataDir, starts the server briefly
// without TCP to create the owner, the database and the replication user,
// and stops it again.
func (e *Engine) InitPrimary(ctx context.Context, cfg engine.Config) error {
	if cfg.Superuser.Username == "" || cfg.Superuser.Password == "" {
		return errors.New("initdb: the superuser's name and password are required")
	}
	if err := prepareDataDir(cfg); err != nil {
		return err
	}
	if err := prepareDir(cfg, cfg.RunDir); err != nil {
		return err
	}
	pwfile, err := writeSecretFile(cfg, "initdb-pw-", cfg.Superuser.Password+"\n")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(pwfile) }()
	if err := e.runTool(ctx, cfg, nil, "initdb",
		"-D", cfg.DataDir,
		"--username="+cfg.Superuser.Username,
		"--pwfile="+pwfile,
		"--auth-local=scram-sha-256", "--auth-host=scram-sha-256",
		"--encoding=UTF8", "--no-locale", "--data-checksums",
	); err != nil {
		return err
	}
	_ = os.Remove(pwfile)

	// Started with initdb's own configuration, on the socket only.
	s, err := e.start(ctx, cfg, []string{
		"-D", cfg.DataDir,
		"-c", "listen_addresses=",
		"-c", "port=" + strconv.Itoa(port(cfg)),
		"-c", "unix_socket_directories=" + cfg.RunDir,
	})
	if err != nil {
		return fmt.Errorf("starting the new server to create its users: %w", err)
	}
	ensureErr := s.EnsureUsers(ctx)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	stopErr := s.Stop(stopCtx)
	if ensureErr != nil {
		return ensureErr
	}
	return stopErr
}

// InitReplica clones the primary into the empty DataDir with pg_basebackup
// and marks it as a standby (standby.signal). It does not use -R: the
// connection to the primary is given at every start instead (see Start), so
// that the replication password is not stored in the data directory.
func (e *Engine) InitReplica(ctx context.Context, cfg engine.Config) error {
	if cfg.PrimaryHost == "" {
		return errors.New("pg_basebackup: no primary host")
	}
	if err := prepareDataDir(cfg); err != nil {
		return err
	}
	if err := prepareDir(cfg, cfg.RunDir); err != nil {
		return err
	}
	passfile, err := writePassfile(cfg)
	if err != nil {
		return err
	}
	if err := e.runTool(ctx, cfg, []string{"PGPASSFILE=" + passfile, "PGCONNECT_TIMEOUT=10"}, "pg_basebackup",
		"-h", cfg.PrimaryHost,
		"-p", strconv.Itoa(primaryPort(cfg)),
		"-U", cfg.Replication.Username,
		"-D", cfg.DataDir,
		"-X", "stream", "--checkpoint=fast", "--no-password",
	); err != nil {
		return err
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return err
	}
	return writeStandbySignal(cfg)
}
