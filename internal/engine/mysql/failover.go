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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	drv "github.com/go-sql-driver/mysql"

	"github.com/steward-dev/steward/internal/engine"
)

// GTIDEngine is the MariaDB engine: an Engine whose replicas follow by
// GTID, so that one can be promoted and the others, the former primary
// included, pointed at it.
type GTIDEngine struct {
	*Engine
}

var _ engine.Failover = (*GTIDEngine)(nil)

var _ engine.Repointer = (*Server)(nil)

// replicaNetTimeout is the replicas' slave_net_timeout, with the primary's
// heartbeat every heartbeatPeriod.
const (
	replicaNetTimeout = 3 * time.Second
	heartbeatPeriod   = "1"
)

// errDiverged is a replica's history that the primary does not have:
// ER_MASTER_FATAL_ERROR_READING_BINLOG, the requested GTID not in the
// primary's binary log.
const errDiverged = 1236

// stoppedFile records, in the run directory, the GTID position at which a
// primary stopped.
func stoppedFile(cfg engine.Config) string { return filepath.Join(cfg.RunDir, "stopped-gtid") }

// IsReplica reports whether the data directory was last a replica's: a
// replica keeps master.info, which RESET SLAVE ALL at promotion removes.
func (e *GTIDEngine) IsReplica(cfg engine.Config) (bool, error) {
	_, err := os.Stat(filepath.Join(cfg.DataDir, "master.info"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, err
}

// StoppedPosition is the position Stop recorded when the primary shut down.
func (e *GTIDEngine) StoppedPosition(_ context.Context, cfg engine.Config) (int64, error) {
	b, err := os.ReadFile(stoppedFile(cfg))
	if err != nil {
		return 0, fmt.Errorf("reading the stopped primary's GTID position: %w", err)
	}
	return gtidPosition(strings.TrimSpace(string(b))), nil
}

// Promote makes a running replica the primary: it stops receiving, applies
// everything it received, forgets its primary (RESET SLAVE ALL) and turns
// read_only off.
func (e *GTIDEngine) Promote(ctx context.Context, s engine.Server, _ int64) error {
	srv, ok := s.(*Server)
	if !ok {
		return fmt.Errorf("not a %s server", e.f.name)
	}
	err := srv.withConn(ctx, func(conn *sql.Conn) error {
		if err := execAll(ctx, conn, srv.cfg, "stopping the receiving thread", "STOP SLAVE IO_THREAD"); err != nil {
			return err
		}
		rs, err := e.readReplicaStatus(ctx, conn)
		if err != nil {
			return fmt.Errorf("reading the replication status: %s", redact(srv.cfg, err.Error()))
		}
		if rs != nil && rs.gtidIOPos != "" {
			// Everything received is applied before the first write.
			var done int
			if err := conn.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 120)", rs.gtidIOPos).Scan(&done); err != nil {
				return fmt.Errorf("applying what was received: %s", redact(srv.cfg, err.Error()))
			}
			if done != 0 {
				return fmt.Errorf("applying what was received (up to %s) did not finish within two minutes", rs.gtidIOPos)
			}
		}
		return execAll(ctx, conn, srv.cfg, "promoting", "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	})
	if err != nil {
		return err
	}
	srv.mu.Lock()
	srv.cfg.PrimaryHost, srv.cfg.PrimaryPort = "", 0
	srv.mu.Unlock()
	return srv.primarySync(ctx)
}

// Repoint makes a running MariaDB replica follow the primary at host and
// port by GTID, from where it is, without a restart (engine.Repointer).
// MySQL, which follows ordinal 0 for good, has no use for it.
func (s *Server) Repoint(ctx context.Context, host string, port int) error {
	if !s.e.f.gtid {
		return errors.New("only a replica following by GTID is re-pointed")
	}
	if s.role() != engine.RoleReplica {
		return errors.New("not a replica")
	}
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	cfg.PrimaryHost, cfg.PrimaryPort = host, port
	if err := s.e.withConn(ctx, s.db, cfg, func(conn *sql.Conn) error { return s.e.follow(ctx, conn, cfg) }); err != nil {
		return err
	}
	s.mu.Lock()
	s.cfg.PrimaryHost, s.cfg.PrimaryPort = host, port
	s.mu.Unlock()
	return nil
}

// Rejoin points a stopped data directory, a former primary's or a
// replica's, at cfg.PrimaryHost from its own GTID position. A history the
// new primary does not have (a former primary's last writes that no
// replica received) makes the primary refuse it: Rejoin fails, and the
// instance is cloned afresh.
func (e *GTIDEngine) Rejoin(ctx context.Context, cfg engine.Config) error {
	replica, err := e.IsReplica(cfg)
	if err != nil {
		return err
	}
	return e.withLocalServer(ctx, cfg, cfg.Superuser, func(conn *sql.Conn, _ string) error {
		var binlogPos, slavePos string
		if err := conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos, @@gtid_slave_pos").Scan(&binlogPos, &slavePos); err != nil {
			return fmt.Errorf("reading the GTID positions: %s", redact(cfg, err.Error()))
		}
		pos := slavePos
		if !replica || pos == "" {
			// What a former primary wrote is in its binary log only.
			pos = binlogPos
		}
		if err := execAll(ctx, conn, cfg, "pointing replication at the new primary",
			"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos = "+literal(pos),
			e.changeSourceGTID(cfg), e.f.startReplica); err != nil {
			return err
		}
		return e.waitReceiving(ctx, cfg, conn)
	})
}

// changeSourceGTID is the CHANGE MASTER statement of a GTID replica.
func (e *Engine) changeSourceGTID(cfg engine.Config) string {
	r := cfg.Replication
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, "+
		"MASTER_USE_GTID=slave_pos, MASTER_HEARTBEAT_PERIOD=%s, MASTER_CONNECT_RETRY=1",
		literal(cfg.PrimaryHost), cfg.PrimaryPort, literal(r.Username), literal(r.Password), heartbeatPeriod)
}

// follow starts replication on a replica just started: from where it was
// when its primary is the same, else pointed at cfg.PrimaryHost by GTID.
func (e *Engine) follow(ctx context.Context, conn *sql.Conn, cfg engine.Config) error {
	rs, err := e.readReplicaStatus(ctx, conn)
	if err != nil {
		return fmt.Errorf("reading the replication status: %s", redact(cfg, err.Error()))
	}
	if rs != nil && rs.host == cfg.PrimaryHost && rs.port == strconv.Itoa(cfg.PrimaryPort) {
		return execAll(ctx, conn, cfg, "starting replication", e.f.startReplica)
	}
	stmts := []string{e.f.stopReplica}
	if rs == nil || rs.usingGTID == "" || rs.usingGTID == "No" {
		// Never followed by GTID: what it applied is its position.
		stmts = append(stmts, "SET GLOBAL gtid_slave_pos = IF(@@gtid_slave_pos = '', @@gtid_binlog_pos, @@gtid_slave_pos)")
	}
	stmts = append(stmts, e.changeSourceGTID(cfg), e.f.startReplica)
	return execAll(ctx, conn, cfg, "pointing replication at "+cfg.PrimaryHost, stmts...)
}

// gtidPosition sums the sequence numbers of a GTID position
// ("0-1-42,1-2-7"): how many transactions the history holds, comparable
// between the instances of one Database.
func gtidPosition(pos string) int64 {
	var n int64
	for _, g := range strings.Split(pos, ",") {
		g = strings.TrimSpace(g)
		if i := strings.LastIndexByte(g, '-'); i >= 0 {
			seq, err := strconv.ParseInt(g[i+1:], 10, 64)
			if err == nil {
				n += seq
			}
		}
	}
	return n
}

// primaryGTID converts binary log coordinates of the primary into its GTID
// position there (BINLOG_GTID_POS), over TCP as the superuser.
func (e *Engine) primaryGTID(ctx context.Context, cfg engine.Config, file string, pos int64) (string, error) {
	dc := drv.NewConfig()
	dc.Net = "tcp"
	dc.Addr = net.JoinHostPort(cfg.PrimaryHost, strconv.Itoa(cfg.PrimaryPort))
	dc.User, dc.Passwd = cfg.Superuser.Username, cfg.Superuser.Password
	dc.Timeout = 10 * time.Second
	c, err := drv.NewConnector(dc)
	if err != nil {
		return "", errors.New("invalid connection settings")
	}
	db := sql.OpenDB(c)
	defer func() { _ = db.Close() }()
	var gtid sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, pos).Scan(&gtid); err != nil {
		return "", fmt.Errorf("reading the primary's GTID position: %s", redact(cfg, err.Error()))
	}
	if !gtid.Valid {
		return "", fmt.Errorf("the primary has no GTID position for %s:%d", file, pos)
	}
	return gtid.String, nil
}

// PrimaryTracksReplicas is false: a MariaDB primary keeps a lost replica's
// connection until TCP gives up, minutes later.
func (e *GTIDEngine) PrimaryTracksReplicas() bool { return false }
