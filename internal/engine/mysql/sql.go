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
	"strconv"
	"strings"

	drv "github.com/go-sql-driver/mysql"

	"github.com/steward-dev/steward/internal/engine"
)

// literal quotes a string literal. The connections the engine opens run without
// NO_BACKSLASH_ESCAPES (see connect), so backslash escapes hold.
func literal(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

// QuoteIdent quotes a MySQL identifier (a database, table or column
// name) with backquotes.
func QuoteIdent(s string) string { return ident(s) }

// ident quotes an identifier.
func ident(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// account names a user at a host.
func account(user, host string) string {
	return literal(user) + "@" + literal(host)
}

// execer is a connection or a pool.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// execAll runs statements; an error says what failed (what) and the server's
// message with the passwords of cfg removed, never the statement.
func execAll(ctx context.Context, db execer, cfg engine.Config, what string, stmts ...string) error {
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %s", what, redact(cfg, err.Error()))
		}
	}
	return nil
}

// errorNumber is the server's error number of err, or 0.
func errorNumber(err error) uint16 {
	var me *drv.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// ensureUser makes a user exist at host with the password.
func ensureUser(ctx context.Context, db execer, cfg engine.Config, c engine.Credentials, host string) error {
	if c.Username == "" {
		return errors.New("a user name is empty")
	}
	a := account(c.Username, host)
	return execAll(ctx, db, cfg, fmt.Sprintf("creating user %q", c.Username),
		"CREATE USER IF NOT EXISTS "+a+" IDENTIFIED BY "+literal(c.Password),
		"ALTER USER "+a+" IDENTIFIED BY "+literal(c.Password),
	)
}

// ensureUsers makes the owner, its database and the replication user exist
// with the passwords of cfg. Owner and replication user may connect from
// anywhere; the network policy and the passwords guard them.
func ensureUsers(ctx context.Context, db execer, cfg engine.Config) error {
	if cfg.Database == "" {
		return errors.New("no database name")
	}
	if err := ensureUser(ctx, db, cfg, cfg.Owner, "%"); err != nil {
		return err
	}
	if err := execAll(ctx, db, cfg, fmt.Sprintf("creating database %q", cfg.Database),
		"CREATE DATABASE IF NOT EXISTS "+ident(cfg.Database),
		"GRANT ALL PRIVILEGES ON "+ident(cfg.Database)+".* TO "+account(cfg.Owner.Username, "%"),
	); err != nil {
		return err
	}
	if err := ensureUser(ctx, db, cfg, cfg.Replication, "%"); err != nil {
		return err
	}
	return execAll(ctx, db, cfg, fmt.Sprintf("granting replication to %q", cfg.Replication.Username),
		"GRANT REPLICATION SLAVE ON *.* TO "+account(cfg.Replication.Username, "%"))
}

// queryRows reads all rows of a query as maps from column name to value;
// NULL is absent.
func queryRows(ctx context.Context, db *sql.Conn, query string) ([]map[string]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := map[string]string{}
		for i, c := range cols {
			if vals[i].Valid {
				m[c] = vals[i].String
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// replicaStatus is the replication status of a server, or nil when it does
// not replicate. Column names differ: MySQL 8.0.22+ says Replica_/Source_,
// MariaDB and older spellings Slave_/Master_.
type replicaStatus struct {
	ioRunning, sqlRunning string
	lag                   *float64
	ioError, sqlError     string
	ioErrno               int
	// host and port are the primary's; gtidIOPos is the GTID position
	// received (MariaDB), usingGTID how the replica follows ("No",
	// "Slave_Pos", "Current_Pos").
	host, port, gtidIOPos, usingGTID string
}

func (e *Engine) readReplicaStatus(ctx context.Context, db *sql.Conn) (*replicaStatus, error) {
	rows, err := queryRows(ctx, db, e.f.showReplicaStatus)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	pick := func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := r[n]; ok {
				return v, true
			}
		}
		return "", false
	}
	st := &replicaStatus{}
	st.ioRunning, _ = pick("Replica_IO_Running", "Slave_IO_Running")
	st.sqlRunning, _ = pick("Replica_SQL_Running", "Slave_SQL_Running")
	st.ioError, _ = pick("Last_IO_Error")
	st.sqlError, _ = pick("Last_SQL_Error")
	if v, ok := pick("Last_IO_Errno"); ok {
		st.ioErrno, _ = strconv.Atoi(v)
	}
	st.host, _ = pick("Source_Host", "Master_Host")
	st.port, _ = pick("Source_Port", "Master_Port")
	st.gtidIOPos, _ = pick("Gtid_IO_Pos")
	st.usingGTID, _ = pick("Using_Gtid")
	if v, ok := pick("Seconds_Behind_Source", "Seconds_Behind_Master"); ok {
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil {
			st.lag = &f
		}
	}
	return st, nil
}
