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

// Package scratch runs a throwaway database server inside the current
// process's pod: its data in a directory of the pod (an emptyDir), listening
// on 127.0.0.1 only, with users whose random passwords live in this
// process alone. `steward backup-verify` restores a backup into one; a
// point-in-time recovery can start PostgreSQL on a data directory it
// prepared itself.
//
// It reuses Steward's engines (internal/engine/postgres and
// internal/engine/mysql), as the instance manager runs them in database
// pods: Init is the engine's InitPrimary (initdb, or mariadb-install-db /
// mysqld --initialize-insecure, then the superuser, owner and database),
// and Start is the engine's Start on any initialised data directory, with
// the engine's rendered configuration plus Config.Extra appended. They are
// separate so that Start can run on a data directory Init did not make.
//
// The server is tuned to be thrown away: PostgreSQL without fsync,
// synchronous commit and full-page writes; MySQL and MariaDB without a
// binary log and with lazy flushing. A crash loses it, which is fine: it
// lives only as long as the pod.
package scratch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/engine/mysql"
	"github.com/steward-dev/steward/internal/engine/postgres"
)

// Kinds of server.
const (
	PostgreSQL = "postgresql"
	// MySQL is MariaDB when the image has mariadbd, MySQL otherwise.
	MySQL = "mysql"
)

// Config describes a throwaway server.
type Config struct {
	// Type is PostgreSQL or MySQL.
	Type string
	// Dir holds the server's data, configuration and sockets; it is
	// created when missing. Keep it short: a Unix socket's path is limited
	// to 107 bytes.
	Dir string
	// BinDir is where the server's programs are; empty means $PATH (and,
	// for MySQL, /usr/sbin and /usr/bin, also when BinDir lacks the
	// server).
	BinDir string
	// Database is the database Init creates, owned by the owner.
	Database string
	// Port is the TCP port on 127.0.0.1; zero picks a free one.
	Port int
	// Extra settings are appended to the engine's rendered configuration
	// (postgresql.conf, or my.cnf's [mysqld] section) and win over it.
	// They are not checked: a point-in-time recovery sets
	// restore_command and recovery targets here.
	Extra map[string]string
	// RunAsUID and RunAsGID, when non-zero, are the user the server runs
	// as (tests running as root); in a pod the process already runs as
	// the engine's user.
	RunAsUID, RunAsGID uint32
	// Output receives the server's output; nil means os.Stderr. For MySQL
	// it is the engine package's Output, which is process-wide: set it
	// only where one server runs at a time.
	Output io.Writer
}

// Server is a throwaway server's files and, once started, its process.
type Server struct {
	cfg    Config
	eng    engine.Engine
	ecfg   engine.Config
	server engine.Server
}

// New prepares the directories and configuration of a server, without
// touching its data directory.
func New(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("scratch: no directory")
	}
	out := cfg.Output
	if out == nil {
		out = os.Stderr
	}
	var eng engine.Engine
	extra := map[string]string{}
	switch cfg.Type {
	case PostgreSQL:
		eng = &postgres.Engine{Output: out}
		extra["fsync"] = "off"
		extra["synchronous_commit"] = "off"
		extra["full_page_writes"] = "off"
		extra["max_wal_size"] = "'1GB'"
	case MySQL:
		if cfg.Output != nil {
			mysql.Output = out
		}
		// The dump tools' directory, where the server may not be
		// (/usr/bin and /usr/sbin): then the engine looks for it.
		if !exists(cfg.BinDir, "mariadbd") && !exists(cfg.BinDir, "mysqld") {
			cfg.BinDir = ""
		}
		if mariaDB(cfg.BinDir) {
			eng = mysql.MariaDB
		} else {
			eng = mysql.MySQL
		}
		extra["skip_log_bin"] = ""
		extra["innodb_flush_log_at_trx_commit"] = "2"
		extra["innodb_doublewrite"] = "0"
	default:
		return nil, fmt.Errorf("scratch: unknown server type %q", cfg.Type)
	}
	maps.Copy(extra, cfg.Extra)
	if cfg.Port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		cfg.Port = p
	}
	s := &Server{cfg: cfg, eng: eng}
	s.ecfg = engine.Config{
		DataDir:     filepath.Join(cfg.Dir, "data"),
		ConfigDir:   filepath.Join(cfg.Dir, "config"),
		RunDir:      filepath.Join(cfg.Dir, "run"),
		BinDir:      cfg.BinDir,
		Host:        "127.0.0.1",
		Port:        cfg.Port,
		ServerID:    1,
		Name:        "scratch",
		Superuser:   engine.Credentials{Username: superuser(cfg.Type), Password: password()},
		Owner:       engine.Credentials{Username: "steward_verify", Password: password()},
		Replication: engine.Credentials{Username: "steward_replication", Password: password()},
		Database:    cfg.Database,
		RunAsUID:    cfg.RunAsUID,
		RunAsGID:    cfg.RunAsGID,
	}
	if err := s.writeConfig(extra); err != nil {
		return nil, err
	}
	return s, nil
}

// mariaDB reports whether the MySQL server to run is MariaDB's.
func mariaDB(binDir string) bool {
	dirs := []string{binDir}
	if binDir == "" {
		if p, err := exec.LookPath("mariadbd"); err == nil && p != "" {
			return true
		}
		dirs = []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "mariadbd")); err == nil {
			return true
		}
	}
	return false
}

// exists reports whether dir (not empty) holds name.
func exists(dir, name string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func superuser(typ string) string {
	if typ == PostgreSQL {
		return "postgres"
	}
	return "root"
}

// password is a random password, never written anywhere but the
// server's own files.
func password() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("scratch: finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeConfig creates the directories and writes the engine's
// configuration with extra appended.
func (s *Server) writeConfig(extra map[string]string) error {
	if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("scratch: %w", err)
	}
	for _, d := range []string{s.ecfg.ConfigDir, s.ecfg.RunDir, s.ecfg.DataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("scratch: %w", err)
		}
		if s.cfg.RunAsUID != 0 {
			if err := os.Chown(d, int(s.cfg.RunAsUID), int(s.cfg.RunAsGID)); err != nil {
				return fmt.Errorf("scratch: %w", err)
			}
		}
	}
	if s.cfg.RunAsUID != 0 {
		if err := os.Chown(s.cfg.Dir, int(s.cfg.RunAsUID), int(s.cfg.RunAsGID)); err != nil {
			return fmt.Errorf("scratch: %w", err)
		}
	}
	files, err := s.eng.Render(engine.Tuning{Port: s.cfg.Port})
	if err != nil {
		return fmt.Errorf("scratch: rendering the configuration: %w", err)
	}
	for name, text := range files {
		if name == "postgresql.conf" || name == mysql.ConfigFile {
			text += "\n# Added for a throwaway server.\n"
			for _, k := range slices.Sorted(maps.Keys(extra)) {
				switch v := extra[k]; {
				case v == "" && s.cfg.Type == MySQL:
					text += k + "\n"
				case s.cfg.Type == PostgreSQL && !strings.HasPrefix(v, "'"):
					text += fmt.Sprintf("%s = '%s'\n", k, strings.ReplaceAll(v, "'", "''"))
				default:
					text += fmt.Sprintf("%s = %s\n", k, v)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(s.ecfg.ConfigDir, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("scratch: %w", err)
		}
	}
	return nil
}

// DataDir is where the server's data is: empty before Init, or to be
// filled by the caller before Start.
func (s *Server) DataDir() string { return s.ecfg.DataDir }

// Init creates the database in the empty data directory, with the
// superuser, the owner and Config.Database.
func (s *Server) Init(ctx context.Context) error {
	if err := s.eng.InitPrimary(ctx, s.ecfg); err != nil {
		return fmt.Errorf("initialising the throwaway server: %w", err)
	}
	return nil
}

// Start starts the server on its data directory and returns once it
// accepts connections.
func (s *Server) Start(ctx context.Context) error {
	srv, err := s.eng.Start(ctx, s.ecfg)
	if err != nil {
		return fmt.Errorf("starting the throwaway server: %w", err)
	}
	s.server = srv
	return nil
}

// Stop stops the server, if it runs.
func (s *Server) Stop(ctx context.Context) error {
	if s.server == nil {
		return nil
	}
	err := s.server.Stop(ctx)
	s.server = nil
	return err
}

// Close stops the server within a minute and removes its directory.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.Stop(ctx)
	return errors.Join(err, os.RemoveAll(s.cfg.Dir))
}

// Endpoint is where and as whom to connect.
type Endpoint struct {
	Host     string
	Port     int
	Database string
	engine.Credentials
}

// Superuser is the server's superuser on Config.Database.
func (s *Server) Superuser() Endpoint {
	return Endpoint{Host: s.ecfg.Host, Port: s.ecfg.Port, Database: s.ecfg.Database, Credentials: s.ecfg.Superuser}
}

// Owner is the owner of Config.Database.
func (s *Server) Owner() Endpoint {
	return Endpoint{Host: s.ecfg.Host, Port: s.ecfg.Port, Database: s.ecfg.Database, Credentials: s.ecfg.Owner}
}

// Passwords are the server's passwords, for a redactor.
func (s *Server) Passwords() []string {
	return []string{s.ecfg.Superuser.Password, s.ecfg.Owner.Password, s.ecfg.Replication.Password}
}
