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
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

// kind is a variable's type. Strings and sets (sql_mode) are not listed:
// the server is theirs to judge.
type kind int

const (
	kindBool kind = iota
	kindInt
	// kindSize is an integer number of bytes.
	kindSize
	kindReal
	kindEnum
)

// variable is what the server knows of one system variable: its type,
// range and, for an enum, its values.
type variable struct {
	kind kind
	// min and max bound an integer or a size; max is unbounded at
	// math.MaxUint64.
	min int64
	max uint64
	// fmin and fmax bound a real.
	fmin, fmax float64
	// values are an enum's values.
	values []string
}

const unbounded = math.MaxUint64

func boolVar() variable                    { return variable{kind: kindBool} }
func intVar(lo int64, hi uint64) variable  { return variable{kind: kindInt, min: lo, max: hi} }
func sizeVar(lo int64, hi uint64) variable { return variable{kind: kindSize, min: lo, max: hi} }
func realVar(lo, hi float64) variable      { return variable{kind: kindReal, fmin: lo, fmax: hi} }
func enumVar(values ...string) variable    { return variable{kind: kindEnum, values: values} }

var isolationLevels = []string{"READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"}

// commonVariables are the commonly tuned variables whose type and range
// MySQL 8.0, 8.4 and MariaDB 10.11 share. The MariaDB values were read from
// information_schema.SYSTEM_VARIABLES of MariaDB 10.11 (VARIABLE_TYPE,
// NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, ENUM_VALUE_LIST); the MySQL ones
// come from the MySQL 8.0 and 8.4 reference manuals (not run against a
// MySQL server). mysqlVariables and mariadbVariables hold what differs.
// Steward's controlled options are not here: Render refuses them.
var commonVariables = map[string]variable{
	"max_heap_table_size":             sizeVar(16384, unbounded),
	"join_buffer_size":                sizeVar(128, unbounded),
	"max_allowed_packet":              sizeVar(1024, 1<<30),
	"max_binlog_size":                 sizeVar(4096, 1<<30),
	"innodb_log_file_size":            sizeVar(4<<20, unbounded),
	"innodb_sort_buffer_size":         sizeVar(65536, 64<<20),
	"read_rnd_buffer_size":            sizeVar(1, math.MaxInt32),
	"thread_cache_size":               intVar(0, 16384),
	"wait_timeout":                    intVar(1, 31536000),
	"interactive_timeout":             intVar(1, 31536000),
	"net_read_timeout":                intVar(1, 31536000),
	"net_write_timeout":               intVar(1, 31536000),
	"connect_timeout":                 intVar(2, 31536000),
	"innodb_lru_scan_depth":           intVar(100, unbounded),
	"innodb_purge_threads":            intVar(1, 32),
	"innodb_read_io_threads":          intVar(1, 64),
	"innodb_flush_neighbors":          intVar(0, 2),
	"innodb_autoinc_lock_mode":        intVar(0, 2),
	"sync_binlog":                     intVar(0, math.MaxUint32),
	"long_query_time":                 realVar(0, 31536000),
	"innodb_max_dirty_pages_pct":      realVar(0, 99.999),
	"slow_query_log":                  boolVar(),
	"general_log":                     boolVar(),
	"log_queries_not_using_indexes":   boolVar(),
	"innodb_file_per_table":           boolVar(),
	"innodb_print_all_deadlocks":      boolVar(),
	"innodb_stats_on_metadata":        boolVar(),
	"innodb_adaptive_hash_index":      boolVar(),
	"innodb_deadlock_detect":          boolVar(),
	"innodb_strict_mode":              boolVar(),
	"local_infile":                    boolVar(),
	"performance_schema":              boolVar(),
	"explicit_defaults_for_timestamp": boolVar(),
	"skip_name_resolve":               boolVar(),
	"transaction_isolation":           enumVar(isolationLevels...),
	"binlog_format":                   enumVar("ROW", "STATEMENT", "MIXED"),
}

// mysqlVariables are MySQL's own variables and ranges.
var mysqlVariables = map[string]variable{
	"innodb_buffer_pool_size":        sizeVar(5<<20, unbounded),
	"innodb_buffer_pool_instances":   intVar(1, 64),
	"innodb_io_capacity":             intVar(100, unbounded),
	"innodb_io_capacity_max":         intVar(100, unbounded),
	"innodb_redo_log_capacity":       sizeVar(8<<20, 512<<30),
	"innodb_log_buffer_size":         sizeVar(1<<20, math.MaxUint32),
	"tmp_table_size":                 sizeVar(1024, unbounded),
	"sort_buffer_size":               sizeVar(32768, unbounded),
	"read_buffer_size":               sizeVar(8192, 2147479552),
	"max_connections":                intVar(1, 100000),
	"max_connect_errors":             intVar(1, unbounded),
	"max_user_connections":           intVar(0, math.MaxUint32),
	"max_execution_time":             intVar(0, math.MaxUint32),
	"table_open_cache":               intVar(1, 524288),
	"table_definition_cache":         intVar(400, 524288),
	"innodb_lock_wait_timeout":       intVar(1, 1<<30),
	"innodb_write_io_threads":        intVar(1, 64),
	"innodb_flush_log_at_trx_commit": intVar(0, 2),
	"innodb_flush_log_at_timeout":    intVar(1, 2700),
	"binlog_expire_logs_seconds":     intVar(0, math.MaxUint32),
	"event_scheduler":                enumVar("ON", "OFF", "DISABLED"),
}

// mariadbVariables are MariaDB's own variables and ranges. MariaDB 10.11
// names the isolation level tx_isolation; the option file also takes
// transaction_isolation.
var mariadbVariables = map[string]variable{
	"innodb_buffer_pool_size":        sizeVar(2<<20, unbounded),
	"innodb_log_buffer_size":         sizeVar(2<<20, 2147479552),
	"tmp_table_size":                 sizeVar(0, unbounded),
	"sort_buffer_size":               sizeVar(1024, unbounded),
	"read_buffer_size":               sizeVar(8192, math.MaxInt32),
	"query_cache_size":               sizeVar(0, unbounded),
	"innodb_io_capacity":             intVar(100, math.MaxUint32),
	"innodb_io_capacity_max":         intVar(100, math.MaxUint32),
	"max_connections":                intVar(10, 100000),
	"max_connect_errors":             intVar(1, math.MaxUint32),
	"max_user_connections":           intVar(-1, math.MaxInt32),
	"max_statement_time":             realVar(0, 31536000),
	"table_open_cache":               intVar(10, 1048576),
	"table_definition_cache":         intVar(400, 2097152),
	"innodb_lock_wait_timeout":       intVar(0, 100000000),
	"innodb_write_io_threads":        intVar(2, 64),
	"innodb_flush_log_at_trx_commit": intVar(0, 3),
	"innodb_flush_log_at_timeout":    intVar(0, 2700),
	"binlog_expire_logs_seconds":     intVar(0, 8553600),
	"event_scheduler":                enumVar("ON", "OFF", "DISABLED", "ORIGINAL"),
	"query_cache_type":               enumVar("OFF", "ON", "DEMAND"),
	"tx_isolation":                   enumVar(isolationLevels...),
}

// variable looks key up: the flavor's own first, then the common ones.
func (e *Engine) variable(key string) (variable, bool) {
	k := normalize(key)
	own := mysqlVariables
	if e.f == mariadbFlavor {
		own = mariadbVariables
	}
	if v, ok := own[k]; ok {
		return v, true
	}
	v, ok := commonVariables[k]
	return v, ok
}

// CheckParameter reports whether the server would take value for the
// variable key, both in my.cnf and as Reload sets it with SET GLOBAL:
// booleans ON, OFF, 1 or 0 (any case); integers and sizes as a whole
// number, sizes also with a K, M or G suffix (any case); reals as a
// decimal number; enums by name (any case) or position; and a number
// within the variable's range, which the server would otherwise silently
// clamp. Spelling and "loose-" do not matter, as in Controlled. Variables
// not listed (strings, sets such as sql_mode, plugins' variables) are
// accepted.
func (e *Engine) CheckParameter(key, value string) error {
	v, ok := e.variable(key)
	if !ok {
		return nil
	}
	return v.check(strings.TrimSpace(value))
}

var (
	wholeNumber = regexp.MustCompile(`^-?[0-9]+$`)
	suffixed    = regexp.MustCompile(`^([0-9]+)([kKmMgG])$`)
	decimal     = regexp.MustCompile(`^-?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$`)
)

// check returns nil if the server would take s.
func (v variable) check(s string) error {
	switch v.kind {
	case kindBool:
		switch strings.ToUpper(s) {
		case "ON", "OFF", "1", "0":
			return nil
		}
		return fmt.Errorf("%q is not a boolean: use ON, OFF, 1 or 0", s)
	case kindEnum:
		for _, allowed := range v.values {
			if strings.EqualFold(s, allowed) {
				return nil
			}
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < len(v.values) && wholeNumber.MatchString(s) {
			return nil
		}
		return fmt.Errorf("%q is not allowed: use %s", s, engine.Alternatives(v.values))
	case kindReal:
		f, err := strconv.ParseFloat(s, 64)
		if !decimal.MatchString(s) || err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		if f < v.fmin || f > v.fmax {
			return fmt.Errorf("%s is out of range: between %s and %s", s,
				strconv.FormatFloat(v.fmin, 'f', -1, 64), strconv.FormatFloat(v.fmax, 'f', -1, 64))
		}
		return nil
	}
	neg, n, overflow, ok := v.parse(s)
	if !ok {
		if v.kind == kindSize {
			return fmt.Errorf("%q is not a size: use a number of bytes, or one with K, M or G (e.g. 128M)", s)
		}
		return fmt.Errorf("%q is not an integer", s)
	}
	in := !neg && (v.min <= 0 || n >= uint64(v.min)) && n <= v.max
	if neg {
		in = v.min < 0 && n <= uint64(-v.min)
	}
	if !in || overflow {
		return fmt.Errorf("%s is out of range: %s", s, v.rangeText())
	}
	return nil
}

// parse reads a whole number, or one with a K, M or G suffix: its sign and
// magnitude, whether it is too large for 64 bits (the server clamps it),
// and false when s is neither.
func (v variable) parse(s string) (neg bool, n uint64, overflow, ok bool) {
	digits, shift := strings.TrimPrefix(s, "-"), uint(0)
	neg = len(digits) < len(s)
	if !wholeNumber.MatchString(s) {
		m := suffixed.FindStringSubmatch(s)
		if m == nil {
			return false, 0, false, false
		}
		digits, shift = m[1], map[string]uint{"k": 10, "m": 20, "g": 30}[strings.ToLower(m[2])]
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n > math.MaxUint64>>shift {
		return neg, math.MaxUint64, true, true
	}
	return neg, n << shift, false, true
}

// rangeText describes the range: "between 10 and 100000", for a size in
// the largest suffix that shows the bounds exactly ("between 1K and 1G"),
// "at least 5M" when the maximum is unbounded.
func (v variable) rangeText() string {
	format := func(n uint64) string { return strconv.FormatUint(n, 10) }
	if v.kind == kindSize {
		format = formatBytes
	}
	lo := strconv.FormatInt(v.min, 10)
	if v.min > 0 {
		lo = format(uint64(v.min))
	}
	if v.max == unbounded {
		return "at least " + lo
	}
	return "between " + lo + " and " + format(v.max)
}

// formatBytes writes n with the largest of the suffixes G, M and K that
// divides it.
func formatBytes(n uint64) string {
	for _, s := range []struct {
		suffix string
		shift  uint
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n != 0 && n%(1<<s.shift) == 0 {
			return strconv.FormatUint(n>>s.shift, 10) + s.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}
