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

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// Initialized reports whether the data directory holds the mysql system
// schema.
func (e *Engine) Initialized(cfg engine.Config) (bool, error) {
	fi, err := os.Stat(filepath.Join(cfg.DataDir, "mysql"))
	switch {
	case err == nil:
		return fi.IsDir(), nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// initDataDir creates the system schema in the empty data directory; root
// may then connect over the socket without a password.
func (e *Engine) initDataDir(ctx context.Context, cfg engine.Config) error {
	if cfg.DataDir == "" || cfg.RunDir == "" {
		return errors.New("the data and run directories must be set")
	}
	if err := ensureDir(cfg, cfg.DataDir); err != nil {
		return err
	}
	if err := ensureRunDir(cfg); err != nil {
		return err
	}
	defaults := "--no-defaults"
	if cfg.ConfigDir != "" {
		if _, err := os.Stat(filepath.Join(cfg.ConfigDir, ConfigFile)); err == nil {
			defaults = "--defaults-file=" + filepath.Join(cfg.ConfigDir, ConfigFile)
		}
	}
	var args []string
	name := e.f.server
	if e.f.installDB != "" {
		name = e.f.installDB
		args = []string{defaults, "--datadir=" + cfg.DataDir,
			"--auth-root-authentication-method=normal", "--skip-test-db"}
	} else {
		args = []string{defaults, "--initialize-insecure", "--datadir=" + cfg.DataDir}
	}
	if asRoot(cfg) {
		args = append(args, "--user=mysql")
	}
	return run(ctx, cfg, name, args...)
}

// withLocalServer starts the server on a socket only, connects as as (root
// without a password in a fresh data directory), hands one connection to fn
// and shuts the server down.
func (e *Engine) withLocalServer(ctx context.Context, cfg engine.Config, as engine.Credentials, fn func(conn *sql.Conn, socket string) error) error {
	socket := filepath.Join(cfg.RunDir, "init.sock")
	for _, f := range []string{socket, socket + ".lock", filepath.Join(cfg.RunDir, "mysqld.pid")} {
		_ = os.Remove(f)
	}
	args := append(e.serverArgs(cfg, socket), "--skip-networking")
	p, err := e.startProcess(cfg, args)
	if err != nil {
		return err
	}
	err = func() error {
		db, err := e.waitReady(ctx, cfg, p, socket, as)
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("connecting to %s: %s", e.f.server, redact(cfg, err.Error()))
		}
		defer func() { _ = conn.Close() }()
		return fn(conn, socket)
	}()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if serr := p.stop(sctx); serr != nil && err == nil {
		err = serr
	}
	return err
}

// InitPrimary initialises the data directory, then, over the socket of a
// server without networking: drops anonymous users and root at other hosts
// than localhost, gives the superuser its
// password (at localhost and at any host), locks root when the superuser is
// another user, and creates the owner, its database and the replication
// user. Nothing of this is written to the binary log.
func (e *Engine) InitPrimary(ctx context.Context, cfg engine.Config) (err error) {
	if cfg.Superuser.Username == "" {
		return errors.New("no superuser name")
	}
	defer func() {
		if err != nil {
			emptyDir(cfg.DataDir)
		}
	}()
	if err := e.initDataDir(ctx, cfg); err != nil {
		return err
	}
	return e.withLocalServer(ctx, cfg, engine.Credentials{Username: "root"}, func(conn *sql.Conn, _ string) error {
		if err := execAll(ctx, conn, cfg, "disabling the binary log", "SET sql_log_bin = 0"); err != nil {
			return err
		}
		// mariadb-install-db makes anonymous users and root at the host's
		// names and loopback addresses without a password.
		extra, err := queryRows(ctx, conn, "SELECT User, Host FROM mysql.user WHERE User = '' OR (User IN ('root', "+
			literal(cfg.Superuser.Username)+") AND Host NOT IN ('localhost', '%'))")
		if err != nil {
			return fmt.Errorf("listing users: %s", redact(cfg, err.Error()))
		}
		for _, a := range extra {
			if err := execAll(ctx, conn, cfg, "dropping needless users", "DROP USER "+account(a["User"], a["Host"])); err != nil {
				return err
			}
		}
		if err := execAll(ctx, conn, cfg, "dropping the test database", "DROP DATABASE IF EXISTS test"); err != nil {
			return err
		}
		su := cfg.Superuser
		for _, host := range []string{"%", "localhost"} {
			if err := ensureUser(ctx, conn, cfg, su, host); err != nil {
				return err
			}
			if err := execAll(ctx, conn, cfg, "granting the superuser's privileges",
				"GRANT ALL PRIVILEGES ON *.* TO "+account(su.Username, host)+" WITH GRANT OPTION"); err != nil {
				return err
			}
		}
		if su.Username != "root" {
			if err := execAll(ctx, conn, cfg, "locking root", "ALTER USER IF EXISTS 'root'@'localhost' ACCOUNT LOCK"); err != nil {
				return err
			}
		}
		return ensureUsers(ctx, conn, cfg)
	})
}

// coordinates matches the binary log coordinates the dump records:
// "CHANGE MASTER TO MASTER_LOG_FILE='binlog.000002', MASTER_LOG_POS=344;" or
// "CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='...', SOURCE_LOG_POS=...;".
var coordinates = regexp.MustCompile(`_LOG_FILE='([^']+)',\s*\w+_LOG_POS=(\d+)`)

// sniffer passes a dump on and looks for the coordinates in its beginning.
type sniffer struct {
	w     io.Writer
	mu    sync.Mutex
	head  []byte
	file  string
	pos   int64
	found bool
}

const sniffLimit = 1 << 20

func (s *sniffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	if !s.found && len(s.head) < sniffLimit {
		s.head = append(s.head, p...)
		if m := coordinates.FindSubmatch(s.head); m != nil {
			s.file = string(m[1])
			s.pos, _ = strconv.ParseInt(string(m[2]), 10, 64)
			s.found = true
			s.head = nil
		}
	}
	s.mu.Unlock()
	return s.w.Write(p)
}

// InitReplica clones the primary logically: it initialises the data
// directory, starts the server on a socket only, streams a consistent dump
// of all databases (the mysql schema and so the users included) from the
// primary, taken as the superuser, into it with the binary log off, points
// replication at the primary from the coordinates the dump recorded, starts
// replication, waits until the receiving thread has connected and shuts the
// server down. A MariaDB replica follows by GTID: the coordinates are
// turned into the primary's GTID position there (BINLOG_GTID_POS). The
// superuser's password reaches the dump program in a 0600 option file,
// removed at the end.
func (e *Engine) InitReplica(ctx context.Context, cfg engine.Config) (err error) {
	if cfg.PrimaryHost == "" || cfg.PrimaryPort == 0 {
		return errors.New("no primary to clone")
	}
	defer func() {
		if err != nil {
			emptyDir(cfg.DataDir)
		}
	}()
	if err := e.initDataDir(ctx, cfg); err != nil {
		return err
	}
	return e.withLocalServer(ctx, cfg, engine.Credentials{Username: "root"}, func(conn *sql.Conn, socket string) error {
		file, pos, err := e.load(ctx, cfg, socket)
		if err != nil {
			return err
		}
		// The dump replaced the users: the connection stays authenticated.
		f := e.f
		if f.gtid {
			gtid, err := e.primaryGTID(ctx, cfg, file, pos)
			if err != nil {
				return err
			}
			if err := execAll(ctx, conn, cfg, "configuring replication",
				"SET GLOBAL gtid_slave_pos = "+literal(gtid), e.changeSourceGTID(cfg), f.startReplica); err != nil {
				return err
			}
			return e.waitReceiving(ctx, cfg, conn)
		}
		r := cfg.Replication
		change := fmt.Sprintf("%s %s=%s, %s=%d, %s=%s, %s=%s, %s=%s, %s=%d%s",
			f.changeSource,
			f.optHost, literal(cfg.PrimaryHost), f.optPort, cfg.PrimaryPort,
			f.optUser, literal(r.Username), f.optPassword, literal(r.Password),
			f.optLogFile, literal(file), f.optLogPos, pos, f.changeSourceExtra)
		if err := execAll(ctx, conn, cfg, "configuring replication", change, f.startReplica); err != nil {
			return err
		}
		return e.waitReceiving(ctx, cfg, conn)
	})
}

// load streams the primary's dump into the local server and returns the
// binary log coordinates the dump was taken at.
func (e *Engine) load(ctx context.Context, cfg engine.Config, socket string) (string, int64, error) {
	opts := filepath.Join(cfg.RunDir, "clone.cnf")
	su := cfg.Superuser
	content := fmt.Sprintf("[client]\nprotocol = tcp\nhost = %s\nport = %d\nuser = %s\npassword = %s\n",
		optionValue(cfg.PrimaryHost), cfg.PrimaryPort, optionValue(su.Username), optionValue(su.Password))
	if err := writeSecretFile(cfg, opts, content); err != nil {
		return "", 0, fmt.Errorf("writing the dump's option file: %w", err)
	}
	defer func() { _ = os.Remove(opts) }()

	dumpArgs := append([]string{"--defaults-file=" + opts,
		"--single-transaction", "--all-databases", e.f.dumpCoordinates,
		"--routines", "--events", "--triggers", "--flush-privileges",
		"--hex-blob", "--max-allowed-packet=1073741824"}, e.f.dumpExtra...)
	dump, dumpTail := command(cfg, e.f.dump, dumpArgs...)
	loader, loadTail := command(cfg, e.f.client, "--no-defaults", "--protocol=socket",
		"--socket="+socket, "--user=root", "--binary-mode",
		"--max-allowed-packet=1073741824", "--init-command=SET sql_log_bin = 0")
	in, err := loader.StdinPipe()
	if err != nil {
		return "", 0, err
	}
	sn := &sniffer{w: in}
	dump.Stdout = sn
	dump.Stderr = io.MultiWriter(Output, dumpTail)
	releaseLoader, err := startWithContext(ctx, loader)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", e.f.client, err)
	}
	releaseDump, err := startWithContext(ctx, dump)
	if err != nil {
		_ = in.Close()
		_ = loader.Wait()
		releaseLoader()
		return "", 0, fmt.Errorf("%s: %w", e.f.dump, err)
	}
	dumpErr := dump.Wait()
	releaseDump()
	_ = in.Close()
	loadErr := loader.Wait()
	releaseLoader()
	if dumpErr != nil {
		return "", 0, commandError(cfg, e.f.dump, dumpErr, dumpTail)
	}
	if loadErr != nil {
		return "", 0, commandError(cfg, e.f.client, loadErr, loadTail)
	}
	if !sn.found {
		return "", 0, errors.New("the dump recorded no binary log coordinates: is the primary's binary log on?")
	}
	return sn.file, sn.pos, nil
}

// optionValue quotes a value for an option file.
func optionValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// waitReceiving waits until the replica's receiving thread has connected to
// the primary, so that a wrong address or password fails the clone.
func (e *Engine) waitReceiving(ctx context.Context, cfg engine.Config, conn *sql.Conn) error {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := e.readReplicaStatus(ctx, conn)
		if err != nil {
			return fmt.Errorf("reading the replication status: %s", redact(cfg, err.Error()))
		}
		if st != nil && st.ioRunning == "Yes" && st.sqlRunning == "Yes" {
			return nil
		}
		if st != nil && st.ioErrno == errDiverged {
			return errors.New(redact(cfg, "the primary refuses this replica's position: "+st.ioError))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			msg := "replication did not start"
			if st != nil {
				msg = strings.TrimSpace(fmt.Sprintf("%s: receiving %s, applying %s %s %s", msg,
					st.ioRunning, st.sqlRunning, st.ioError, st.sqlError))
			}
			return errors.New(redact(cfg, msg))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
