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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

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

func writeStandbySignal(cfg engine.Config) error {
	p := filepath.Join(cfg.DataDir, "standby.signal")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return err
	}
	return chown(cfg, p)
}

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
		"-c", "config_file=" + filepath.Join(cfg.ConfigDir, "postgresql.conf"),
		"-c", "hba_file=" + filepath.Join(cfg.ConfigDir, "pg_hba.conf"),
		"-c", "ident_file=" + filepath.Join(cfg.ConfigDir, "pg_ident.conf"),
		"-c", "port=" + strconv.Itoa(port(cfg)),
		"-c", "listen_addresses=" + host,
		"-c", "unix_socket_directories=" + cfg.RunDir,
	}
	if cfg.PrimaryHost != "" {
		passfile, err := writePassfile(cfg)
		if err != nil {
			return nil, err
		}
		if err := writeStandbySignal(cfg); err != nil {
			return nil, err
		}
		appName := "steward-" + strconv.Itoa(cfg.ServerID)
		conninfo := fmt.Sprintf("host=%s port=%d user=%s passfile=%s application_name=%s",
			conninfoValue(cfg.PrimaryHost), primaryPort(cfg), conninfoValue(cfg.Replication.Username),
			conninfoValue(passfile), conninfoValue(appName))
		args = append(args, "-c", "primary_conninfo="+conninfo)
	}
	return e.start(ctx, cfg, args)
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

// start runs postgres with args as a child process and waits until it
// accepts connections on its socket.
func (e *Engine) start(ctx context.Context, cfg engine.Config, args []string) (*server, error) {
	cmd, err := e.command(cfg, nil, "postgres", args...)
	if err != nil {
		return nil, err
	}
	cmd.Stdout = e.output()
	cmd.Stderr = e.output()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	s := &server{cfg: cfg, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("postgres exited: %w", err)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	var last error
	for {
		select {
		case <-s.done:
			if last != nil {
				return nil, fmt.Errorf("%w (last connection attempt: %w)", s.exitErr(), last)
			}
			return nil, s.exitErr()
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = s.Stop(sctx)
			cancel()
			if last == nil {
				return nil, fmt.Errorf("waiting for postgres to accept connections: %w", ctx.Err())
			}
			return nil, fmt.Errorf("waiting for postgres to accept connections: %w (last attempt: %w)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
		c, err := s.connect(ctx, 2*time.Second)
		if err == nil {
			_ = c.Close(context.Background())
			return s, nil
		}
		last = err
	}
}

// command builds the command for one of the PostgreSQL programs: found in
// BinDir or $PATH, run as RunAsUID/GID when set, with the environment of
// this process minus Steward's variables (which hold passwords) and the
// libpq variables, plus extraEnv.
func (e *Engine) command(cfg engine.Config, extraEnv []string, name string, args ...string) (*exec.Cmd, error) {
	var path string
	if cfg.BinDir != "" {
		path = filepath.Join(cfg.BinDir, name)
	} else {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, err
		}
		path = p
	}
	cmd := exec.Command(path, args...)
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "STEWARD_") || strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, extraEnv...)
	cmd.Env = env
	cmd.Dir = "/"
	if cfg.RunAsUID != 0 && uint32(os.Geteuid()) != cfg.RunAsUID {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: cfg.RunAsUID, Gid: cfg.RunAsGID, NoSetGroups: os.Geteuid() != 0,
		}}
		// Not root's home: the tools need none, and root's is not theirs.
		cmd.Env = append(cmd.Env, "HOME=/")
	}
	return cmd, nil
}

// runTool runs a tool to completion; its output goes to the engine's output
// and, on failure, its tail into the error.
func (e *Engine) runTool(ctx context.Context, cfg engine.Config, extraEnv []string, name string, args ...string) error {
	cmd, err := e.command(cfg, extraEnv, name, args...)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	select {
	case err = <-waitDone:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-waitDone:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err = <-waitDone
		}
		if err == nil {
			err = ctx.Err()
		}
	}
	out := buf.Bytes()
	_, _ = e.output().Write(out)
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if len(tail) > 2000 {
			tail = "..." + tail[len(tail)-2000:]
		}
		return fmt.Errorf("%s: %w: %s", name, err, tail)
	}
	return nil
}

// prepareDataDir creates DataDir with mode 0700 and checks it is empty.
func prepareDataDir(cfg engine.Config) error {
	if cfg.DataDir == "" {
		return errors.New("no data directory")
	}
	if err := prepareDir(cfg, cfg.DataDir); err != nil {
		return err
	}
	entries, err := os.ReadDir(cfg.DataDir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty (%s, ...); use a subdirectory of the volume", cfg.DataDir, entries[0].Name())
	}
	return nil
}

// prepareDir creates dir with mode 0700 when missing and, running as root with
// RunAsUID set, gives it to that user. A directory of its own gets mode 0700;
// one that belongs to another user, such as an emptyDir's mount point (root's,
// writable by all or by the pod's fsGroup), is left as it is: its files are
// private by their own modes.
func prepareDir(cfg engine.Config, dir string) error {
	const perm = 0o700
	if dir == "" {
		return errors.New("a directory is not configured")
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	if err := chown(cfg, dir); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil
	}
	if fi.Mode().Perm() != perm {
		return os.Chmod(dir, perm)
	}
	return nil
}

func chown(cfg engine.Config, path string) error {
	if cfg.RunAsUID == 0 || os.Geteuid() != 0 {
		return nil
	}
	return os.Chown(path, int(cfg.RunAsUID), int(cfg.RunAsGID))
}

// writeSecretFile writes content to a new file in RunDir with mode 0600,
// readable by the server's user.
func writeSecretFile(cfg engine.Config, pattern, content string) (string, error) {
	f, err := os.CreateTemp(cfg.RunDir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err = f.Chmod(0o600); err == nil {
		_, err = f.WriteString(content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = chown(cfg, name)
	}
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("writing a secret file in %s: %w", cfg.RunDir, err)
	}
	return name, nil
}

// writePassfile writes <RunDir>/pgpass with the replication user's password
// for any host, atomically.
func writePassfile(cfg engine.Config) (string, error) {
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	line := fmt.Sprintf("*:*:*:%s:%s\n", esc.Replace(cfg.Replication.Username), esc.Replace(cfg.Replication.Password))
	tmp, err := writeSecretFile(cfg, "pgpass-", line)
	if err != nil {
		return "", err
	}
	p := filepath.Join(cfg.RunDir, "pgpass")
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return p, nil
}

// server is a running postgres.
type server struct {
	cfg  engine.Config
	cmd  *exec.Cmd
	done chan struct{}

	mu  sync.Mutex
	err error
}

var _ engine.Server = (*server)(nil)

func (s *server) Done() <-chan struct{} { return s.done }

func (s *server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *server) exitErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return errors.New("postgres exited")
}

// connect opens a connection as the superuser over the Unix socket.
func (s *server) connect(ctx context.Context, timeout time.Duration) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cc.Host = s.cfg.RunDir
	cc.Port = uint16(port(s.cfg))
	cc.User = s.cfg.Superuser.Username
	cc.Password = s.cfg.Superuser.Password
	cc.Database = "postgres"
	cc.ConnectTimeout = timeout
	cc.TLSConfig = nil
	cc.Fallbacks = nil
	cc.RuntimeParams = map[string]string{"application_name": "steward"}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return pgx.ConnectConfig(ctx, cc)
}

// Stop asks for a fast shutdown (SIGINT) and waits; when ctx ends first it
// kills the server.
func (s *server) Stop(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("postgres did not stop in time and was killed: %w", ctx.Err())
	}
}

// Reload makes the server re-read its configuration files and waits until
// it has (pg_conf_load_time changes), up to 10 seconds.
func (s *server) Reload(ctx context.Context) error {
	c, err := s.connect(ctx, 5*time.Second)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	var before time.Time
	err = c.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&before)
	if err == nil {
		_, err = c.Exec(ctx, "SELECT pg_reload_conf()")
	}
	_ = c.Close(context.Background())
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := s.connect(ctx, 5*time.Second)
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		var after time.Time
		err = c.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&after)
		_ = c.Close(context.Background())
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		if after.After(before) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("reload: the server did not reload its configuration within 10s")
}

// EnsureUsers creates or updates the owner and the replication user with
// the passwords of the Config, and the database owned by the owner.
func (s *server) EnsureUsers(ctx context.Context) error {
	cfg := s.cfg
	if cfg.Owner.Username == "" || cfg.Replication.Username == "" || cfg.Database == "" {
		return errors.New("ensure users: owner, replication user and database names are required")
	}
	c, err := s.connect(ctx, 10*time.Second)
	if err != nil {
		return fmt.Errorf("ensure users: %w", err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	// Should a statement fail, the server must not log it: it may hold a
	// password (a verifier, or the plain text for non-ASCII passwords).
	if _, err := c.Exec(ctx, "SET log_min_error_statement = panic; SET log_statement = none"); err != nil {
		return fmt.Errorf("ensure users: %w", err)
	}
	if err := ensureRole(ctx, c, cfg.Owner, "LOGIN"); err != nil {
		return err
	}
	if err := ensureRole(ctx, c, cfg.Replication, "LOGIN REPLICATION"); err != nil {
		return err
	}
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.Database).Scan(&exists); err != nil {
		return fmt.Errorf("ensure users: looking up database %s: %w", cfg.Database, err)
	}
	db := pgx.Identifier{cfg.Database}.Sanitize()
	owner := pgx.Identifier{cfg.Owner.Username}.Sanitize()
	stmt := "ALTER DATABASE " + db + " OWNER TO " + owner
	if !exists {
		stmt = "CREATE DATABASE " + db + " OWNER " + owner
	}
	if _, err := c.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("ensure users: database %s: %w", cfg.Database, err)
	}
	return nil
}

func ensureRole(ctx context.Context, c *pgx.Conn, cred engine.Credentials, attrs string) error {
	if cred.Password == "" {
		return fmt.Errorf("ensure users: role %s has no password", cred.Username)
	}
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", cred.Username).Scan(&exists); err != nil {
		return fmt.Errorf("ensure users: looking up role %s: %w", cred.Username, err)
	}
	secret, ok, err := scramVerifier(cred.Password)
	if err != nil {
		return fmt.Errorf("ensure users: role %s: computing the password verifier: %w", cred.Username, err)
	}
	if !ok {
		secret = cred.Password
	}
	verb := "ALTER"
	if !exists {
		verb = "CREATE"
	}
	stmt := verb + " ROLE " + pgx.Identifier{cred.Username}.Sanitize() + " " + attrs + " PASSWORD " + quoteLiteral(secret)
	if _, err := c.Exec(ctx, stmt); err != nil {
		// The error is the server's, about the statement; it does not echo
		// the statement, which holds the password.
		return fmt.Errorf("ensure users: %s role %s: %w", strings.ToLower(verb), cred.Username, err)
	}
	return nil
}

// Status reports the role, readiness, lag and pending restarts.
func (s *server) Status(ctx context.Context) engine.Status {
	st := engine.Status{Role: engine.RolePrimary}
	if s.cfg.PrimaryHost != "" {
		st.Role = engine.RoleReplica
	}
	select {
	case <-s.done:
		st.Message = s.exitErr().Error()
		return st
	default:
	}
	c, err := s.connect(ctx, 5*time.Second)
	if err != nil {
		st.Message = "connecting: " + err.Error()
		return st
	}
	defer func() { _ = c.Close(context.Background()) }()
	var inRecovery bool
	if err := c.QueryRow(ctx, "SELECT current_setting('server_version'), pg_is_in_recovery()").Scan(&st.Version, &inRecovery); err != nil {
		st.Message = "querying: " + err.Error()
		return st
	}
	if inRecovery {
		st.Role = engine.RoleReplica
	} else {
		st.Role = engine.RolePrimary
	}
	rows, err := c.Query(ctx, "SELECT name FROM pg_settings WHERE pending_restart ORDER BY name")
	if err == nil {
		st.PendingRestart, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		st.Message = "querying pending restarts: " + err.Error()
		return st
	}
	if !inRecovery {
		if s.cfg.PrimaryHost != "" {
			st.Message = "configured as a replica of " + s.cfg.PrimaryHost + " but not in recovery"
			return st
		}
		st.Ready = true
		return st
	}
	var lagBytes *int64
	var lagSeconds *float64
	var receiver *string
	err = c.QueryRow(ctx, `SELECT
		pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint,
		CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
		     ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END,
		(SELECT status FROM pg_stat_wal_receiver)`).Scan(&lagBytes, &lagSeconds, &receiver)
	if err != nil {
		st.Message = "querying replication: " + err.Error()
		return st
	}
	st.LagBytes, st.LagSeconds = lagBytes, lagSeconds
	switch {
	case s.cfg.PrimaryHost == "":
		st.Message = "in recovery without a primary"
	case receiver == nil:
		st.Message = "not connected to the primary " + s.cfg.PrimaryHost
	case *receiver != "streaming":
		st.Message = "WAL receiver is " + *receiver + ", not streaming"
	default:
		st.Ready = true
	}
	return st
}
