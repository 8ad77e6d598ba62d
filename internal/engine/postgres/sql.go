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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/steward-dev/steward/internal/engine"
)

// superuserConfig is a connection as the superuser to database postgres
// at host (a socket directory or an address) and port.
func superuserConfig(cfg engine.Config, host string, port int, timeout time.Duration) (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cc.Host = host
	cc.Port = uint16(port)
	cc.User = cfg.Superuser.Username
	cc.Password = cfg.Superuser.Password
	cc.Database = "postgres"
	cc.ConnectTimeout = timeout
	cc.TLSConfig = nil
	cc.Fallbacks = nil
	cc.RuntimeParams = map[string]string{"application_name": "steward"}
	return cc, nil
}

// connect opens a connection as the superuser over the Unix socket.
func (s *server) connect(ctx context.Context, timeout time.Duration) (*pgx.Conn, error) {
	cc, err := superuserConfig(s.cfg, s.cfg.RunDir, port(s.cfg), timeout)
	if err != nil {
		return nil, err
	}
	// The manager's own writes (users at every start) must not wait for
	// synchronous replicas, which clone the primary only once it is ready.
	cc.RuntimeParams["synchronous_commit"] = "local"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return pgx.ConnectConfig(ctx, cc)
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
		s.log.forgetRefusals()
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
			return s.checkReload(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("reload: the server did not reload its configuration within 10s")
}

// checkReload records the settings the reload refused: those of the
// configuration files the server could not apply (pg_file_settings), less
// those that wait for a restart, with the server's reason where trying the
// value in a transaction rolled back gives it.
func (s *server) checkReload(ctx context.Context) error {
	c, err := s.connect(ctx, 5*time.Second)
	if err != nil {
		return fmt.Errorf("reading what the reload applied: %w", err)
	}
	defer func() { _ = c.Close(context.Background()) }()
	type setting struct{ name, value string }
	rows, err := c.Query(ctx, `SELECT f.name, f.setting FROM pg_file_settings f
		WHERE f.error IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM pg_settings p WHERE p.name = f.name AND p.pending_restart)
		ORDER BY f.name`)
	if err != nil {
		return fmt.Errorf("reading what the reload applied: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (setting, error) {
		var v setting
		return v, r.Scan(&v.name, &v.value)
	})
	if err != nil {
		return fmt.Errorf("reading what the reload applied: %w", err)
	}
	var refused []engine.RefusedSetting
	for _, f := range found {
		reason := trySetting(ctx, c, f.name, f.value)
		if reason == reasonInLog {
			reason = s.loggedRefusal(ctx, f.name)
		}
		refused = append(refused, engine.RefusedSetting{Name: f.name, Reason: reason})
	}
	s.mu.Lock()
	s.refused = refused
	s.mu.Unlock()
	return nil
}

// reasonInLog is the reason given for a refused setting when neither a
// trial nor the postmaster's log as Steward read it says why.
const reasonInLog = "the server did not apply the value in the configuration file; its log says why"

// loggedRefusal is the postmaster's message about the setting name at the
// last reload, which the server's log has by the time the reload's new
// load time shows; a moment is left for its output to come through the
// pipe. It is reasonInLog when there is none.
func (s *server) loggedRefusal(ctx context.Context, name string) string {
	for range 10 {
		if r := s.log.refusal(name); r != "" {
			return r
		}
		select {
		case <-ctx.Done():
			return reasonInLog
		case <-time.After(50 * time.Millisecond):
		}
	}
	return reasonInLog
}

// trySetting is the server's reason to refuse value for the setting name:
// the error of set_config in a transaction rolled back. A setting that
// cannot be set in a session gives no reason that way: reasonInLog.
func trySetting(ctx context.Context, c *pgx.Conn, name, value string) string {
	tx, err := c.Begin(ctx)
	if err != nil {
		return reasonInLog
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// The trial's error is not the server's to log.
	if _, err := tx.Exec(ctx, "SET LOCAL log_min_messages = fatal"); err != nil {
		return reasonInLog
	}
	_, err = tx.Exec(ctx, "SELECT set_config($1, $2, true)", name, value)
	var pe *pgconn.PgError
	// 55P02: cannot be changed now; 42501: permission denied to set it.
	if !errors.As(err, &pe) || pe.Code == "55P02" || pe.Code == "42501" {
		return reasonInLog
	}
	if pe.Detail != "" {
		return pe.Message + " (" + pe.Detail + ")"
	}
	return pe.Message
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

// Status reports the role, readiness, position, lag and pending restarts.
func (s *server) Status(ctx context.Context) engine.Status {
	primaryHost := s.primaryHost()
	st := engine.Status{Role: engine.RolePrimary}
	if primaryHost != "" {
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
	s.mu.Lock()
	st.Refused = slices.Clone(s.refused)
	s.mu.Unlock()
	if !inRecovery {
		s.primaryStatus(ctx, c, &st, primaryHost)
		return st
	}
	s.replicaStatus(ctx, c, &st, primaryHost)
	return st
}

// primaryStatus fills in a primary's position, timeline and streaming
// replicas.
func (s *server) primaryStatus(ctx context.Context, c *pgx.Conn, st *engine.Status, primaryHost string) {
	var tli string
	err := c.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8),
		coalesce((SELECT array_agg(application_name ORDER BY application_name) FROM pg_stat_replication
		          WHERE state = 'streaming'), '{}')`).Scan(&st.Position, &tli, &st.Streaming)
	if err != nil {
		st.Message = "querying the position: " + err.Error()
		return
	}
	st.Timeline, _ = strconv.ParseInt(tli, 16, 64)
	if primaryHost != "" {
		st.Message = "configured as a replica of " + primaryHost + " but not in recovery"
		return
	}
	st.Ready = true
}

// replicaStatus fills in a replica's position, lag and readiness: it is
// ready while its WAL receiver streams from the primary.
func (s *server) replicaStatus(ctx context.Context, c *pgx.Conn, st *engine.Status, primaryHost string) {
	var lagBytes, tli *int64
	var lagSeconds *float64
	var receiver *string
	err := c.QueryRow(ctx, `SELECT
		pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint,
		CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
		     ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END,
		(SELECT status FROM pg_stat_wal_receiver),
		coalesce(pg_wal_lsn_diff(greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), '0/0')::bigint, 0),
		coalesce((SELECT received_tli FROM pg_stat_wal_receiver), (SELECT timeline_id FROM pg_control_checkpoint()))::bigint`,
	).Scan(&lagBytes, &lagSeconds, &receiver, &st.Position, &tli)
	if err != nil {
		st.Message = "querying replication: " + err.Error()
		return
	}
	st.LagBytes, st.LagSeconds = lagBytes, lagSeconds
	if tli != nil {
		st.Timeline = *tli
	}
	switch {
	case primaryHost == "":
		st.Message = "in recovery without a primary"
	case receiver == nil:
		st.Message = "not connected to the primary " + primaryHost
	case *receiver != "streaming":
		st.Message = "WAL receiver is " + *receiver + ", not streaming"
	default:
		st.Ready = true
	}
}
