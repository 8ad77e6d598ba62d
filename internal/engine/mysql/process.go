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
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	drv "github.com/go-sql-driver/mysql"

	"github.com/steward-dev/steward/internal/engine"
)

// program finds one of the engine's programs: in cfg.BinDir when set, else
// on $PATH, else in /usr/sbin or /usr/bin, where the official images and
// the distributions put them.
func program(cfg engine.Config, name string) string {
	if cfg.BinDir != "" {
		return filepath.Join(cfg.BinDir, name)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return name
}

// asRoot reports whether the engine's programs would run as root: they are
// then told to switch to the mysql user, as the servers refuse root.
func asRoot(cfg engine.Config) bool {
	return os.Geteuid() == 0 && cfg.RunAsUID == 0
}

// command prepares one of the engine's programs: its output goes to Output
// and to tail (for error messages), it runs as cfg.RunAsUID/GID when set,
// and its environment carries no client settings from ours.
func command(cfg engine.Config, name string, args ...string) (*exec.Cmd, *tailBuffer) {
	cmd := exec.Command(program(cfg, name), args...)
	tail := &tailBuffer{max: 4096}
	cmd.Stdout = io.MultiWriter(Output, tail)
	cmd.Stderr = cmd.Stdout
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MYSQL_") || strings.HasPrefix(kv, "MARIADB_") ||
			(cfg.RunDir != "" && strings.HasPrefix(kv, "TMPDIR=")) {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	if cfg.RunDir != "" {
		// The server's tmpdir (temporary tables, sort files) defaults to
		// $TMPDIR: a directory of its own, not a /tmp other servers share.
		cmd.Env = append(cmd.Env, "TMPDIR="+scratchDir(cfg))
	}
	if cfg.RunAsUID != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: cfg.RunAsUID, Gid: cfg.RunAsGID, NoSetGroups: true,
		}}
	}
	return cmd, tail
}

// run runs a program to its end. The error names the program and quotes the
// end of its output, with the passwords of cfg removed.
func run(ctx context.Context, cfg engine.Config, name string, args ...string) error {
	cmd, tail := command(cfg, name, args...)
	release, err := startWithContext(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: %s", name, redact(cfg, err.Error()))
	}
	err = cmd.Wait()
	release()
	if err != nil {
		return commandError(cfg, name, err, tail)
	}
	return nil
}

func commandError(cfg engine.Config, name string, err error, tail *tailBuffer) error {
	return fmt.Errorf("%s: %s: %s", name, redact(cfg, err.Error()), redact(cfg, strings.TrimSpace(tail.String())))
}

// startWithContext starts cmd and kills it when ctx ends before release is
// called (after cmd.Wait).
func startWithContext(ctx context.Context, cmd *exec.Cmd) (release func(), err error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	return func() { stop() }, nil
}

// redact removes the passwords of cfg from a text.
func redact(cfg engine.Config, s string) string {
	for _, p := range []string{cfg.Superuser.Password, cfg.Owner.Password, cfg.Replication.Password} {
		if p != "" {
			s = strings.ReplaceAll(s, p, "********")
		}
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, nil))
}

// scratchDir is the engine's temporary directory, inside cfg.RunDir.
func scratchDir(cfg engine.Config) string { return filepath.Join(cfg.RunDir, "tmp") }

// ensureRunDir makes cfg.RunDir and the scratch directory inside it.
func ensureRunDir(cfg engine.Config) error {
	if err := ensureDir(cfg, cfg.RunDir); err != nil {
		return err
	}
	return ensureDir(cfg, scratchDir(cfg))
}

// ensureDir creates a directory and, when the engine's programs run as
// another user, gives it to that user.
func ensureDir(cfg engine.Config, dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return chown(cfg, dir)
}

func chown(cfg engine.Config, path string) error {
	if cfg.RunAsUID == 0 || os.Geteuid() != 0 {
		return nil
	}
	return os.Chown(path, int(cfg.RunAsUID), int(cfg.RunAsGID))
}

// writeSecretFile writes a file only its owner (the engine's user) can read.
func writeSecretFile(cfg engine.Config, path, content string) error {
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return err
	}
	if err := chown(cfg, path); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// emptyDir removes what a failed initialisation left in dir, keeping dir
// itself (it may be a mount point).
func emptyDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// process is a running server.
type process struct {
	cmd  *exec.Cmd
	tail *tailBuffer
	done chan struct{}
	mu   sync.Mutex
	err  error
	// stopping is set by stop: an exit then is no failure.
	stopping bool
}

// serverArgs are the options every server start gets: the configuration
// file first, then paths and identity from cfg.
func (e *Engine) serverArgs(cfg engine.Config, socket string) []string {
	var args []string
	if _, err := os.Stat(filepath.Join(cfg.ConfigDir, ConfigFile)); err == nil && cfg.ConfigDir != "" {
		args = append(args, "--defaults-file="+filepath.Join(cfg.ConfigDir, ConfigFile))
	} else {
		args = append(args, "--no-defaults")
	}
	args = append(args,
		"--datadir="+cfg.DataDir,
		"--socket="+socket,
		"--pid-file="+filepath.Join(cfg.RunDir, "mysqld.pid"),
		fmt.Sprintf("--server-id=%d", max(cfg.ServerID, 1)),
		"--relay-log=relay-bin",
	)
	if e.f.gtid {
		args = append(args,
			// Replication starts only when Steward says from where.
			"--skip-slave-start",
			// A replica logs what it applies, so that once promoted its
			// binary log serves the others from their GTID positions.
			"--log-slave-updates",
			// A replica refuses a transaction out of GTID order instead of
			// diverging silently; a rejoin after a failover then fails
			// where histories differ, and the instance is cloned afresh.
			"--gtid-strict-mode=ON",
			// With the primary's heartbeat every second, a replica notices
			// a lost primary within five seconds.
			fmt.Sprintf("--slave-net-timeout=%d", int(replicaNetTimeout/time.Second)),
			// Only the primary waits for its replicas (primarySync): a
			// replica that did would hold every transaction it applies
			// for a replica of its own.
			"--rpl-semi-sync-master-enabled=OFF",
		)
	}
	if asRoot(cfg) {
		args = append(args, "--user=mysql")
	}
	return args
}

// startProcess starts the server.
func (e *Engine) startProcess(cfg engine.Config, args []string) (*process, error) {
	cmd, tail := command(cfg, e.f.server, args...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", e.f.server, err)
	}
	p := &process{cmd: cmd, tail: tail, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		switch {
		case err != nil && !p.stopping:
			p.err = commandError(engine.Config{}, e.f.server, err, tail)
		case err == nil && !p.stopping:
			p.err = fmt.Errorf("%s exited", e.f.server)
		}
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// stop shuts the server down with SIGTERM and, when ctx ends first, kills it.
func (p *process) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitErr()
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("server killed: it did not shut down in time: %w", ctx.Err())
	}
}

func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// connect opens a pool of connections over the server's socket. Each connection
// runs with a known sql_mode, so that the quoting of literals holds
// (NO_BACKSLASH_ESCAPES would change it).
func connect(socket string, c engine.Credentials) (*sql.DB, error) {
	dc := drv.NewConfig()
	dc.Net = "unix"
	dc.Addr = socket
	dc.User = c.Username
	dc.Passwd = c.Password
	dc.Timeout = 5 * time.Second
	dc.Params = map[string]string{"sql_mode": "'STRICT_TRANS_TABLES'"}
	conn, err := drv.NewConnector(dc)
	if err != nil {
		return nil, errors.New("invalid connection settings")
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// withConn runs fn on one connection of db.
func (e *Engine) withConn(ctx context.Context, db *sql.DB, cfg engine.Config, fn func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connecting to %s: %s", e.f.server, redact(cfg, err.Error()))
	}
	defer func() { _ = conn.Close() }()
	return fn(conn)
}

// waitReady waits until the server accepts a connection as c, and returns
// the connection pool.
func (e *Engine) waitReady(ctx context.Context, cfg engine.Config, p *process, socket string, c engine.Credentials) (*sql.DB, error) {
	db, err := connect(socket, c)
	if err != nil {
		return nil, err
	}
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = db.PingContext(pctx)
		cancel()
		if last == nil {
			return db, nil
		}
		var me *drv.MySQLError
		if errors.As(last, &me) {
			// The server answered: it is up, and refuses us.
			_ = db.Close()
			return nil, fmt.Errorf("connecting to %s as %q: %s", e.f.server, c.Username, redact(cfg, me.Error()))
		}
		select {
		case <-p.done:
			_ = db.Close()
			if err := p.exitErr(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s exited while starting", e.f.server)
		case <-ctx.Done():
			_ = db.Close()
			return nil, fmt.Errorf("waiting for %s to accept connections: %w (last: %s)", e.f.server, ctx.Err(), redact(cfg, last.Error()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
