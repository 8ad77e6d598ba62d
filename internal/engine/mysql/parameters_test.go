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
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

func TestCheckParameter(t *testing.T) {
	for _, tc := range []struct {
		e          *Engine
		key, value string
		// want is "" for a value the server takes, else the error.
		want string
	}{
		// Sizes: bytes, or K, M, G in any case.
		{MySQL, "innodb_buffer_pool_size", "1G", ""},
		{MySQL, "innodb_buffer_pool_size", "1073741824", ""},
		{MySQL, "innodb-buffer-pool-size", "512m", ""},
		{MySQL, "loose_innodb_buffer_pool_size", " 512M ", ""},
		{MySQL, "innodb_buffer_pool_size", "lots", `"lots" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`},
		{MySQL, "innodb_buffer_pool_size", "1.5G", `"1.5G" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`},
		{MySQL, "innodb_buffer_pool_size", "1T", `"1T" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`},
		{MySQL, "innodb_buffer_pool_size", "128MB", `"128MB" is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)`},
		{MySQL, "innodb_buffer_pool_size", "4M", "4M is out of range: at least 5M"},
		{MariaDB.Engine, "innodb_buffer_pool_size", "4M", ""},
		{MariaDB.Engine, "innodb_buffer_pool_size", "1M", "1M is out of range: at least 2M"},
		{MySQL, "max_allowed_packet", "64M", ""},
		{MySQL, "max_allowed_packet", "2G", "2G is out of range: between 1K and 1G"},
		{MariaDB.Engine, "read_buffer_size", "4096", "4096 is out of range: between 8K and 2147483647"},
		{MySQL, "tmp_table_size", "-1", "-1 is out of range: at least 1K"},
		{MySQL, "tmp_table_size", "99999999999999999999", "99999999999999999999 is out of range: at least 1K"},
		{MySQL, "max_connections", "99999999999999999999", "99999999999999999999 is out of range: between 1 and 100000"},
		// Integers.
		{MySQL, "max_connections", "500", ""},
		{MySQL, "max_connections", "1", ""},
		{MariaDB.Engine, "max_connections", "1", "1 is out of range: between 10 and 100000"},
		{MySQL, "max_connections", "-5", "-5 is out of range: between 1 and 100000"},
		{MySQL, "max_connections", "200000", "200000 is out of range: between 1 and 100000"},
		{MySQL, "max_connections", "many", `"many" is not an integer`},
		{MySQL, "max_connections", "+100", `"+100" is not an integer`},
		{MariaDB.Engine, "max_user_connections", "-1", ""},
		{MySQL, "max_user_connections", "-1", "-1 is out of range: between 0 and 4294967295"},
		{MySQL, "innodb_flush_log_at_trx_commit", "2", ""},
		{MySQL, "innodb_flush_log_at_trx_commit", "3", "3 is out of range: between 0 and 2"},
		{MariaDB.Engine, "innodb_flush_log_at_trx_commit", "3", ""},
		{MySQL, "wait_timeout", "0", "0 is out of range: between 1 and 31536000"},
		{MySQL, "table_open_cache", "4000", ""},
		// Reals.
		{MySQL, "long_query_time", "2", ""},
		{MySQL, "long_query_time", "0.5", ""},
		{MySQL, "long_query_time", "1e1", ""},
		{MySQL, "long_query_time", "-1", "-1 is out of range: between 0 and 31536000"},
		{MySQL, "long_query_time", "2s", `"2s" is not a number`},
		{MySQL, "innodb_max_dirty_pages_pct", "100", "100 is out of range: between 0 and 99.999"},
		// Booleans: what both my.cnf and SET GLOBAL take.
		{MySQL, "slow_query_log", "ON", ""},
		{MySQL, "slow_query_log", "off", ""},
		{MySQL, "slow-query-log", "1", ""},
		{MySQL, "slow_query_log", "0", ""},
		{MySQL, "slow_query_log", "yes", `"yes" is not a boolean: use ON, OFF, 1 or 0`},
		{MySQL, "slow_query_log", "true", `"true" is not a boolean: use ON, OFF, 1 or 0`},
		{MariaDB.Engine, "innodb_file_per_table", "2", `"2" is not a boolean: use ON, OFF, 1 or 0`},
		// Enums: by name in any case, or by position.
		{MySQL, "transaction_isolation", "READ-COMMITTED", ""},
		{MySQL, "transaction-isolation", "read-committed", ""},
		{MySQL, "transaction_isolation", "1", ""},
		{MySQL, "transaction_isolation", "READ_COMMITTED", `"READ_COMMITTED" is not allowed: use READ-UNCOMMITTED, READ-COMMITTED, REPEATABLE-READ or SERIALIZABLE`},
		{MySQL, "transaction_isolation", "4", `"4" is not allowed: use READ-UNCOMMITTED, READ-COMMITTED, REPEATABLE-READ or SERIALIZABLE`},
		{MariaDB.Engine, "tx_isolation", "SERIALIZABLE", ""},
		{MySQL, "binlog_format", "row", ""},
		{MySQL, "binlog_format", "STATEMENT", ""},
		{MySQL, "binlog_format", "FAST", `"FAST" is not allowed: use ROW, STATEMENT or MIXED`},
		{MariaDB.Engine, "event_scheduler", "ORIGINAL", ""},
		{MySQL, "event_scheduler", "ORIGINAL", `"ORIGINAL" is not allowed: use ON, OFF or DISABLED`},
		// Strings, sets and unknown variables are the server's to judge.
		{MySQL, "sql_mode", "STRICT_TRANS_TABLES,NO_ZERO_DATE", ""},
		{MySQL, "character_set_server", "utf8mb4", ""},
		{MySQL, "no_such_variable", "anything", ""},
		{MariaDB.Engine, "max_execution_time", "lots", ""}, // MySQL's, not MariaDB's
	} {
		t.Run(tc.e.Name()+"/"+tc.key+"="+tc.value, func(t *testing.T) {
			err := tc.e.CheckParameter(tc.key, tc.value)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckParameter(%q, %q) = %q, want %q", tc.key, tc.value, got, tc.want)
			}
		})
	}
}

// TestTunedValuesAreValid checks that what Render derives from the memory
// passes the check, so that a preset never degrades a Database.
func TestTunedValuesAreValid(t *testing.T) {
	for _, e := range []*Engine{MySQL, MariaDB.Engine} {
		for _, m := range []int64{0, 256 * mib, 512 * mib, gib, 2 * gib, 8 * gib, 64 * gib} {
			files, err := e.Render(engine.Tuning{MemoryBytes: m, Port: 3306})
			if err != nil {
				t.Fatal(err)
			}
			if bad := engine.CheckParameters(e, parseConfig(files[ConfigFile])); bad != nil {
				t.Errorf("%s, %d bytes: %v", e.Name(), m, bad)
			}
		}
	}
}

// TestVariablesMatchMariaDB compares the MariaDB variables with what a real
// MariaDB server reports in information_schema.SYSTEM_VARIABLES, then, for
// the variables Reload sets while the server runs, compares the syntax
// CheckParameter accepts with what SET GLOBAL accepts of the values Reload
// sends (a value out of range is clamped there, with a warning).
func TestVariablesMatchMariaDB(t *testing.T) {
	requireMariaDB(t)
	e := MariaDB.Engine
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := newServerConfig(t, 1)
	writeConfig(t, e, cfg, engine.Tuning{Port: cfg.Port})
	if err := e.InitPrimary(ctx, cfg); err != nil {
		t.Fatalf("InitPrimary: %v", err)
	}
	startServer(ctx, t, e, cfg)
	db := tcp(t, cfg, cfg.Superuser, "")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()

	names := slices.Sorted(maps.Keys(commonVariables))
	for _, k := range slices.Sorted(maps.Keys(mariadbVariables)) {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	readOnly := map[string]bool{}
	for _, name := range names {
		v, _ := e.variable(name)
		var typ, lo, hi, values, ro sql.NullString
		err := conn.QueryRowContext(ctx, `SELECT VARIABLE_TYPE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, ENUM_VALUE_LIST, READ_ONLY
			FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = ?`, strings.ToUpper(name)).Scan(&typ, &lo, &hi, &values, &ro)
		if err == sql.ErrNoRows && name == "transaction_isolation" {
			continue // an option of MariaDB 10.11, whose variable is tx_isolation
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		readOnly[name] = ro.String == "YES"
		switch v.kind {
		case kindBool:
			if typ.String != "BOOLEAN" {
				t.Errorf("%s: a boolean here, %s on the server", name, typ.String)
			}
		case kindEnum:
			if typ.String != "ENUM" || !sameSet(strings.Split(values.String, ","), v.values) {
				t.Errorf("%s: values %v here, %s %s on the server", name, v.values, typ.String, values.String)
			}
		case kindReal:
			if typ.String != "DOUBLE" || lo.String != strconv.FormatFloat(v.fmin, 'f', -1, 64) || hi.String != strconv.FormatFloat(v.fmax, 'f', -1, 64) {
				t.Errorf("%s: a real in %v..%v here, %s in %s..%s on the server", name, v.fmin, v.fmax, typ.String, lo.String, hi.String)
			}
		default:
			max := strconv.FormatUint(v.max, 10)
			if v.max == unbounded {
				// The largest values of a type, or just below: unbounded.
				max = hi.String
				if n, err := strconv.ParseUint(hi.String, 10, 64); err != nil || n < math.MaxUint64/2 {
					t.Errorf("%s: unbounded here, at most %s on the server", name, hi.String)
				}
			}
			if !strings.Contains(typ.String, "INT") || lo.String != strconv.FormatInt(v.min, 10) || hi.String != max {
				t.Errorf("%s: an integer in %d..%s here, %s in %s..%s on the server", name, v.min, max, typ.String, lo.String, hi.String)
			}
		}
	}

	// SET GLOBAL of these would allocate or create what the values ask for,
	// or they take some values at startup only (max_user_connections when
	// the server started with 0).
	skip := []string{"innodb_buffer_pool_size", "innodb_log_file_size", "query_cache_size", "event_scheduler", "max_user_connections"}
	tried := 0
	for _, name := range names {
		if _, known := readOnly[name]; !known || readOnly[name] || e.NeedsRestart(name) || slices.Contains(skip, name) {
			continue
		}
		variableName := name
		if name == "transaction_isolation" {
			variableName = "tx_isolation"
		}
		v, _ := e.variable(name)
		for _, value := range mysqlCandidates(v) {
			tried++
			_, serverErr := conn.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = %s", variableName, setValue(value)))
			err := e.CheckParameter(name, value)
			syntaxOK := err == nil || strings.Contains(err.Error(), "is out of range")
			if (serverErr == nil) != syntaxOK {
				t.Errorf("%s = %q: SET GLOBAL says %v, CheckParameter %v", name, value, serverErr, err)
			}
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET GLOBAL %s = DEFAULT", variableName)); err != nil {
				t.Fatalf("resetting %s: %v", name, err)
			}
		}
	}
	t.Logf("%d variables compared, %d values tried with SET GLOBAL", len(names), tried)
}

// mysqlCandidates are values to try on a variable.
func mysqlCandidates(v variable) []string {
	vs := []string{"abc", "0", "1", "-1", "2", "1.5", "1e1", "+1", "1 2"}
	switch v.kind {
	case kindBool:
		return append(vs, "ON", "on", "OFF", "off", "TRUE", "yes", "enabled")
	case kindEnum:
		for _, s := range v.values {
			vs = append(vs, s, strings.ToLower(s), strings.ReplaceAll(s, "-", "_"))
		}
		return append(vs, "3", "4", "bogus")
	case kindReal:
		return append(vs, "0.5", ".5", "5.", "1e2", "10", "2s", "1,5")
	}
	return append(vs, "4096", "1K", "1k", "64M", "1G", "1T", "1.5G", "128MB", "12345", "99999999999999999999")
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.EqualFunc(a, b, strings.EqualFold)
}
