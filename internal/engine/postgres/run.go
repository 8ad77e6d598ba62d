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
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

// Start starts the server with the configuration of ConfigDir and returns
// once it accepts connections. A replica (PrimaryHost set) always starts as
// a standby of PrimaryHost.
func (e *Engine) Start(ctx context.Context, cfg engine.Config) (engine.Server, error) {
	for _, f := range []string{"postgresql.conf", "pg_hba.conf", "pg_ident.conf"} {
		if _, err := os.Stat(filepath.Join(cfg.ConfigDir, f)); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
	}
	if err := prepareDir(cfg, cfg.RunDir); err != nil {
		return nil, err
	}
	host := cfg.Host
	if host == "" {
		host = "*"
	}
	args := []string{
		"-D", cfg.DataDir,
		"-c", "config_file=" + startFile(cfg),
		"-c", "hba_file=" + filepath.Join(cfg.ConfigDir, "pg_hba.conf"),
		"-c", "ident_file=" + filepath.Join(cfg.ConfigDir, "pg_ident.conf"),
		"-c", "port=" + strconv.Itoa(port(cfg)),
		"-c", "listen_addresses=" + host,
		"-c", "unix_socket_directories=" + cfg.RunDir,
	}
	if cfg.PrimaryHost != "" {
		if err := writeStandbySignal(cfg); err != nil {
			return nil, err
		}
	}
	if err := writeStartFile(cfg); err != nil {
		return nil, err
	}
	return e.start(ctx, cfg, args)
}

// startFile is the configuration file the server is started with, in
// RunDir: it includes ConfigDir's postgresql.conf and, on a replica, sets
// primary_conninfo, which a reload changes (PostgreSQL 13 and later), so
// that a replica follows another primary without a restart (Repoint).
func startFile(cfg engine.Config) string { return filepath.Join(cfg.RunDir, startFileName) }

const startFileName = "postgresql.conf"

// writeStartFile writes startFile for cfg: a replica of cfg.PrimaryHost
// when that is set.
func writeStartFile(cfg engine.Config) error {
	var b strings.Builder
	b.WriteString("# Written by the Steward instance manager at each start, and when a replica\n")
	b.WriteString("# follows another primary. The settings are in the file it includes.\n")
	b.WriteString("include " + confString(filepath.Join(cfg.ConfigDir, "postgresql.conf")) + "\n")
	if cfg.PrimaryHost != "" {
		passfile, err := writePassfile(cfg)
		if err != nil {
			return err
		}
		b.WriteString("primary_conninfo = " + confString(primaryConninfo(cfg, passfile)) + "\n")
	}
	_, err := replaceRunFile(cfg, startFileName, b.String())
	return err
}

// primaryConninfo is a replica's primary_conninfo. connect_timeout and the
// keepalives bound how long the walreceiver waits on a primary that went
// away without closing its connection (a pod replaced with a new address,
// a node gone): without them a connection attempt to a vanished address
// waits out the kernel's SYN retries, about two minutes, before the next
// try.
func primaryConninfo(cfg engine.Config, passfile string) string {
	appName := cfg.Name
	if appName == "" {
		appName = "steward-" + strconv.Itoa(cfg.ServerID)
	}
	return fmt.Sprintf("host=%s port=%d user=%s passfile=%s application_name=%s "+
		"connect_timeout=5 keepalives=1 keepalives_idle=5 keepalives_interval=5 keepalives_count=3",
		conninfoValue(cfg.PrimaryHost), primaryPort(cfg), conninfoValue(cfg.Replication.Username),
		conninfoValue(passfile), conninfoValue(appName))
}

// confString quotes a postgresql.conf string value.
func confString(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `''`)
	return "'" + r.Replace(v) + "'"
}

// conninfoValue quotes a libpq connection string value.
func conninfoValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

func port(cfg engine.Config) int {
	if cfg.Port == 0 {
		return 5432
	}
	return cfg.Port
}

func primaryPort(cfg engine.Config) int {
	if cfg.PrimaryPort == 0 {
		return 5432
	}
	return cfg.PrimaryPort
}
