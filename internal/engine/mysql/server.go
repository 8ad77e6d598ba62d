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
	"database/sql/driver"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// Start runs the server as a child process with the configuration from
// cfg.ConfigDir and paths, port, address and server id from cfg; a replica
// (cfg.PrimaryHost set) runs read-only and replicates: MySQL's resumes by
// itself, MariaDB's ensures its users and then follows cfg.PrimaryHost
// (follow). It returns once the superuser can connect over the socket.
func (e *Engine) Start(ctx context.Context, cfg engine.Config) (engine.Server, error) {
	if err := ensureRunDir(cfg); err != nil {
		return nil, err
	}
	cfgText, err := os.ReadFile(filepath.Join(cfg.ConfigDir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	socket := filepath.Join(cfg.RunDir, "mysqld.sock")
	// What an unclean end left behind: a MySQL server refuses to start
	// while the socket's lock file names a live process, and in a
	// container that may be any process. A server still running on the
	// data directory is kept off by InnoDB's own lock.
	for _, f := range []string{socket, socket + ".lock", filepath.Join(cfg.RunDir, "mysqld.pid")} {
		_ = os.Remove(f)
	}
	args := e.serverArgs(cfg, socket)
	if cfg.Port != 0 {
		args = append(args, "--port="+strconv.Itoa(cfg.Port))
	}
	if cfg.Host != "" {
		args = append(args, "--bind-address="+cfg.Host)
	}
	if cfg.PrimaryHost != "" {
		args = append(args, "--read-only")
		if e.f.superReadOnly {
			args = append(args, "--super-read-only")
		}
	}
	p, err := e.startProcess(cfg, args)
	if err != nil {
		return nil, err
	}
	db, err := e.waitReady(ctx, cfg, p, socket, cfg.Superuser)
	if err == nil && e.f.gtid && cfg.PrimaryHost != "" {
		err = e.ensureUsers(ctx, db, cfg)
		if err == nil {
			err = e.withConn(ctx, db, cfg, func(conn *sql.Conn) error { return e.follow(ctx, conn, cfg) })
		}
		if err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = p.stop(sctx)
		return nil, err
	}
	current := parseConfig(string(cfgText))
	s := &Server{e: e, cfg: cfg, p: p, db: db, started: current, current: current, failed: map[string]bool{}}
	if cfg.PrimaryHost == "" {
		if err := s.primarySync(ctx); err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return s, nil
}

// Server is a running MySQL or MariaDB server.
type Server struct {
	e   *Engine
	cfg engine.Config
	p   *process
	db  *sql.DB

	mu sync.Mutex
	// started is the configuration the server started with, current the
	// one last applied; failed are dynamic-looking settings the server
	// refused to change at run time.
	started, current map[string]string
	failed           map[string]bool
	pending          []string
	// refused are the values SET GLOBAL refused, by setting.
	refused map[string]refusal
}

// refusal is a value the server refused for a setting, and its words.
type refusal struct{ value, reason string }

var _ engine.Server = (*Server)(nil)

// EnsureUsers makes the owner, its database and the replication user exist
// with the passwords of the configuration.
func (s *Server) EnsureUsers(ctx context.Context) error {
	return s.e.ensureUsers(ctx, s.db, s.cfg)
}

// ensureUsers runs ensureUsers on one connection of db. MariaDB's every
// instance, replicas too, ensures its users itself, outside the binary
// log: with semi-synchronous replication a logged statement would wait for
// a replica, and a replica being cloned waits for it.
func (e *Engine) ensureUsers(ctx context.Context, db *sql.DB, cfg engine.Config) error {
	return e.withConn(ctx, db, cfg, func(conn *sql.Conn) error {
		if !e.f.gtid {
			return ensureUsers(ctx, conn, cfg)
		}
		if err := execAll(ctx, conn, cfg, "leaving the binary log", "SET SESSION sql_log_bin = 0"); err != nil {
			return err
		}
		err := ensureUsers(ctx, conn, cfg)
		if rerr := execAll(ctx, conn, cfg, "returning to the binary log", "SET SESSION sql_log_bin = 1"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // not back into the pool
			if err == nil {
				err = rerr
			}
		}
		return err
	})
}

var (
	variableName = regexp.MustCompile(`^[a-z0-9_]+$`)
	integer      = regexp.MustCompile(`^-?[0-9]+$`)
	sized        = regexp.MustCompile(`^([0-9]+)([kKmMgG])$`)
)

// setValue is a value for SET GLOBAL: integers and decimal numbers as they
// are (the servers refuse a quoted 0.5 for long_query_time), sizes such as
// 64M in bytes, anything else a string literal.
func setValue(v string) string {
	if integer.MatchString(v) || decimal.MatchString(v) {
		return v
	}
	if m := sized.FindStringSubmatch(v); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		switch strings.ToLower(m[2]) {
		case "k":
			n <<= 10
		case "m":
			n <<= 20
		case "g":
			n <<= 30
		}
		return strconv.FormatInt(n, 10)
	}
	return literal(v)
}

// Reload re-reads my.cnf. The servers cannot reload their configuration, so
// the settings that changed are set with SET GLOBAL (a removed one back to
// its default); settings that need a restart, and those the server refuses
// to change at run time, are reported in Status.PendingRestart, and values
// it refuses in Status.Refused. A refused value is tried again at the next
// Reload that finds the setting changed from the value applied.
func (s *Server) Reload(ctx context.Context) error {
	text, err := os.ReadFile(filepath.Join(s.cfg.ConfigDir, ConfigFile))
	if err != nil {
		return fmt.Errorf("reading the configuration: %w", err)
	}
	next := parseConfig(string(text))
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.refused {
		if v, ok := next[k]; !ok || v != r.value {
			delete(s.refused, k)
		}
	}
	var errs []string
	for _, k := range union(s.current, next) {
		old, had := s.current[k]
		v, has := next[k]
		if had == has && old == v {
			continue
		}
		if (s.e.Controlled(k) && !strings.HasPrefix(k, semiSyncPrefix)) || s.e.NeedsRestart(k) ||
			(k == semiSyncPrimary && s.cfg.PrimaryHost != "") {
			continue
		}
		if !variableName.MatchString(k) {
			s.failed[k] = true
			continue
		}
		value := "DEFAULT"
		if has {
			value = setValue(v)
		}
		if _, err := s.db.ExecContext(ctx, "SET GLOBAL "+k+" = "+value); err != nil {
			switch errorNumber(err) {
			case 1193, 1238: // unknown, or read-only at run time
				s.failed[k] = true
				continue
			case 0: // not the server's answer: tried again
				errs = append(errs, fmt.Sprintf("setting %s: %s", k, redact(s.cfg, err.Error())))
			default: // the server refuses the value
				if s.refused == nil {
					s.refused = map[string]refusal{}
				}
				s.refused[k] = refusal{value: v, reason: redact(s.cfg, err.Error())}
			}
			// Keep the old value: it is what runs.
			if had {
				next[k] = old
			} else {
				delete(next, k)
			}
			continue
		}
		delete(s.failed, k)
		delete(s.refused, k)
	}
	s.current = next
	s.pending = nil
	for _, k := range union(s.started, next) {
		old, had := s.started[k]
		v, has := next[k]
		if had == has && old == v {
			continue
		}
		if s.e.NeedsRestart(k) || s.failed[k] {
			s.pending = append(s.pending, k)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("reload: %s", strings.Join(errs, "; "))
	}
	return nil
}

func union(a, b map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// Status reports the role (replica when replication is configured), the
// version, readiness (a replica's receiving and applying threads both
// running), the replica's delay and pending restarts.
func (s *Server) Status(ctx context.Context) engine.Status {
	s.mu.Lock()
	st := engine.Status{Role: engine.RolePrimary, PendingRestart: append([]string(nil), s.pending...)}
	for _, k := range slices.Sorted(maps.Keys(s.refused)) {
		st.Refused = append(st.Refused, engine.RefusedSetting{Name: k, Reason: s.refused[k].reason})
	}
	s.mu.Unlock()
	st.Role = s.role()
	select {
	case <-s.p.done:
		st.Message = "the server has exited"
		return st
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		st.Message = "cannot connect: " + redact(s.cfg, err.Error())
		return st
	}
	defer func() { _ = conn.Close() }()
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&st.Version); err != nil {
		st.Message = "cannot query: " + redact(s.cfg, err.Error())
		return st
	}
	rs, err := s.e.readReplicaStatus(ctx, conn)
	if err != nil {
		st.Message = "cannot read the replication status: " + redact(s.cfg, err.Error())
		return st
	}
	if rs == nil {
		st.Role = engine.RolePrimary
		st.Ready = true
		if s.e.f.gtid {
			var pos string
			if err := conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err == nil {
				st.Position = gtidPosition(pos)
			}
		}
		return st
	}
	st.Role = engine.RoleReplica
	st.LagSeconds = rs.lag
	if s.e.f.gtid {
		st.Position = gtidPosition(rs.gtidIOPos)
	}
	st.Ready = rs.ioRunning == "Yes" && rs.sqlRunning == "Yes"
	if !st.Ready {
		st.Message = redact(s.cfg, strings.TrimSpace(fmt.Sprintf("replication: receiving %s, applying %s. %s %s",
			rs.ioRunning, rs.sqlRunning, rs.ioError, rs.sqlError)))
	}
	return st
}

// Stop shuts the server down (SIGTERM), killing it when ctx ends first. A
// MariaDB primary first turns read-only, records its GTID position for
// StoppedPosition and shuts down once its replicas have received all of it
// (shutdownAfterReplicas).
func (s *Server) Stop(ctx context.Context) error {
	if s.e.f.gtid && s.recordStop(ctx) {
		s.shutdownAfterReplicas(ctx)
	}
	_ = s.db.Close()
	return s.p.stop(ctx)
}

// replicasDrainTimeout bounds how long a stopping primary waits for its
// replicas to receive its binary log.
const replicasDrainTimeout = 30 * time.Second

// shutdownAfterReplicas shuts a primary down once every connected replica
// has received all of its binary log (SHUTDOWN WAIT FOR ALL SLAVES), so
// that a switchover target can catch up with where it stopped. The caller
// then waits for the process, and kills it when ctx ends.
func (s *Server) shutdownAfterReplicas(ctx context.Context) {
	s.p.mu.Lock()
	s.p.stopping = true // its exit is no failure
	s.p.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = s.withConn(sctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(sctx, "SHUTDOWN WAIT FOR ALL SLAVES")
		return err
	})
	cancel()
	select {
	case <-s.p.done:
	case <-ctx.Done():
	case <-time.After(replicasDrainTimeout):
	}
}

// Fence kills the server: a commit waiting for a replica's
// acknowledgement is never acknowledged.
func (s *Server) Fence() error {
	_ = os.Remove(stoppedFile(s.cfg))
	s.p.mu.Lock()
	s.p.stopping = true
	s.p.mu.Unlock()
	_ = s.p.cmd.Process.Kill()
	<-s.p.done
	_ = s.db.Close()
	return nil
}

var _ engine.Fencer = (*Server)(nil)

// recordStop writes a primary's final GTID position into the run
// directory, or removes a stale one. It reports whether it wrote one.
func (s *Server) recordStop(ctx context.Context) bool {
	_ = os.Remove(stoppedFile(s.cfg))
	if s.role() != engine.RolePrimary {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var pos string
	err := s.withConn(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, "SET GLOBAL read_only = ON"); err != nil {
			return err
		}
		return conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos)
	})
	return err == nil && os.WriteFile(stoppedFile(s.cfg), []byte(pos+"\n"), 0o600) == nil
}

// primarySync turns semi-synchronous waiting on, on a primary, when the
// configuration asks for it.
func (s *Server) primarySync(ctx context.Context) error {
	s.mu.Lock()
	on := s.current[semiSyncPrimary] == "ON"
	s.mu.Unlock()
	if !s.e.f.gtid || !on {
		return nil
	}
	return s.withConn(ctx, func(conn *sql.Conn) error {
		return execAll(ctx, conn, s.cfg, "turning semi-synchronous replication on", "SET GLOBAL "+semiSyncPrimary+" = ON")
	})
}

// semiSyncPrimary makes a primary wait for a replica's acknowledgement.
const semiSyncPrimary = "rpl_semi_sync_master_enabled"

// role is the role the server was started in or promoted to.
func (s *Server) role() engine.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.PrimaryHost != "" {
		return engine.RoleReplica
	}
	return engine.RolePrimary
}

// withConn runs fn on one connection of the server.
func (s *Server) withConn(ctx context.Context, fn func(*sql.Conn) error) error {
	return s.e.withConn(ctx, s.db, s.cfg, fn)
}

// Done is closed when the server has exited.
func (s *Server) Done() <-chan struct{} { return s.p.done }

// Err says why the server exited: nil after Stop and a clean shutdown.
func (s *Server) Err() error { return s.p.exitErr() }
