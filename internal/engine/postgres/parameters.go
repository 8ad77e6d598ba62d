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
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

// kind is a setting's type, as pg_settings.vartype names it. Strings are
// not listed: the server takes any string.
type kind int

const (
	kindBool kind = iota
	kindInt
	kindReal
	kindEnum
)

// setting is what the server knows of one setting: its type, base unit,
// range in that unit and, for an enum, its values.
type setting struct {
	kind kind
	// unit is pg_settings.unit: "" (none), "B", "kB", "8kB", "MB" for
	// memory, "ms", "s", "min" for time.
	unit string
	// min and max bound the value in the unit (integers and reals).
	min, max float64
	// values are an enum's values as pg_settings.enumvals lists them;
	// hidden are the further spellings the server accepts.
	values, hidden []string
}

const (
	intMax    = math.MaxInt32
	maxBlocks = intMax / 2 // shared_buffers, temp_buffers and kin
	maxConns  = 262143     // MAX_BACKENDS
	dblMax    = math.MaxFloat64
)

var (
	// boolSpellings are the hidden values of the enums that also take a
	// boolean (synchronous_commit, huge_pages, ...).
	boolSpellings = []string{"true", "false", "yes", "no", "1", "0"}
	serverLevels  = []string{"debug5", "debug4", "debug3", "debug2", "debug1", "info", "notice", "warning", "error", "log", "fatal", "panic"}
	clientLevels  = []string{"debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"}
	isolation     = []string{"serializable", "repeatable read", "read committed", "read uncommitted"}
)

func boolSetting() setting { return setting{kind: kindBool} }
func intSetting(unit string, lo, hi float64) setting {
	return setting{kind: kindInt, unit: unit, min: lo, max: hi}
}
func realSetting(unit string, lo, hi float64) setting {
	return setting{kind: kindReal, unit: unit, min: lo, max: hi}
}
func enumSetting(values []string, hidden ...string) setting {
	return setting{kind: kindEnum, values: values, hidden: hidden}
}

// settings are the commonly tuned settings of PostgreSQL 13 to 17 with
// their types, units and ranges. They were read from pg_settings (vartype,
// unit, min_val, max_val, enumvals) of PostgreSQL 15 and checked against
// the other versions' documentation: where a setting exists in every
// supported version, its range is the same in each. Hidden enum values
// (true, yes, debug, ...) were tried with ALTER SYSTEM. Settings Steward
// controls are not here (see controlled): Render refuses them. Beyond its
// range, the server refuses max_connections + autovacuum_max_workers +
// max_worker_processes + max_wal_senders + 1 above 262143, which is not
// checked here.
var settings = map[string]setting{
	// Memory.
	"shared_buffers":            intSetting("8kB", 16, maxBlocks),
	"temp_buffers":              intSetting("8kB", 100, maxBlocks),
	"work_mem":                  intSetting("kB", 64, intMax),
	"maintenance_work_mem":      intSetting("kB", 1024, intMax),
	"autovacuum_work_mem":       intSetting("kB", -1, intMax),
	"logical_decoding_work_mem": intSetting("kB", 64, intMax),
	"hash_mem_multiplier":       realSetting("", 1, 1000),
	"effective_cache_size":      intSetting("8kB", 1, intMax),
	"huge_pages":                enumSetting([]string{"off", "on", "try"}, boolSpellings...),
	"temp_file_limit":           intSetting("kB", -1, intMax),

	// Connections.
	"max_connections":                intSetting("", 1, maxConns),
	"superuser_reserved_connections": intSetting("", 0, maxConns),
	"max_prepared_transactions":      intSetting("", 0, maxConns),
	"max_locks_per_transaction":      intSetting("", 10, intMax),
	"tcp_keepalives_idle":            intSetting("s", 0, intMax),
	"tcp_keepalives_interval":        intSetting("s", 0, intMax),
	"tcp_keepalives_count":           intSetting("", 0, intMax),

	// Write-ahead log and checkpoints.
	"wal_buffers":                  intSetting("8kB", -1, maxConns),
	"max_wal_size":                 intSetting("MB", 2, intMax),
	"min_wal_size":                 intSetting("MB", 2, intMax),
	"wal_keep_size":                intSetting("MB", 0, intMax),
	"max_slot_wal_keep_size":       intSetting("MB", -1, intMax),
	"wal_writer_delay":             intSetting("ms", 1, 10000),
	"commit_delay":                 intSetting("", 0, 100000),
	"checkpoint_timeout":           intSetting("s", 30, 86400),
	"checkpoint_completion_target": realSetting("", 0, 1),
	"checkpoint_warning":           intSetting("s", 0, intMax),
	"synchronous_commit":           enumSetting([]string{"local", "remote_write", "remote_apply", "on", "off"}, boolSpellings...),
	"full_page_writes":             boolSetting(),
	"wal_log_hints":                boolSetting(),

	// Background writer.
	"bgwriter_delay":          intSetting("ms", 10, 10000),
	"bgwriter_lru_maxpages":   intSetting("", 0, maxBlocks),
	"bgwriter_lru_multiplier": realSetting("", 0, 10),

	// Planner.
	"random_page_cost":                 realSetting("", 0, dblMax),
	"seq_page_cost":                    realSetting("", 0, dblMax),
	"cpu_tuple_cost":                   realSetting("", 0, dblMax),
	"cpu_index_tuple_cost":             realSetting("", 0, dblMax),
	"cpu_operator_cost":                realSetting("", 0, dblMax),
	"parallel_setup_cost":              realSetting("", 0, dblMax),
	"parallel_tuple_cost":              realSetting("", 0, dblMax),
	"effective_io_concurrency":         intSetting("", 0, 1000),
	"maintenance_io_concurrency":       intSetting("", 0, 1000),
	"default_statistics_target":        intSetting("", 1, 10000),
	"from_collapse_limit":              intSetting("", 1, intMax),
	"join_collapse_limit":              intSetting("", 1, intMax),
	"constraint_exclusion":             enumSetting([]string{"partition", "on", "off"}, boolSpellings...),
	"plan_cache_mode":                  enumSetting([]string{"auto", "force_generic_plan", "force_custom_plan"}),
	"jit":                              boolSetting(),
	"jit_above_cost":                   realSetting("", -1, dblMax),
	"jit_inline_above_cost":            realSetting("", -1, dblMax),
	"jit_optimize_above_cost":          realSetting("", -1, dblMax),
	"enable_seqscan":                   boolSetting(),
	"enable_indexscan":                 boolSetting(),
	"enable_bitmapscan":                boolSetting(),
	"enable_hashjoin":                  boolSetting(),
	"enable_mergejoin":                 boolSetting(),
	"enable_nestloop":                  boolSetting(),
	"enable_partitionwise_join":        boolSetting(),
	"enable_partitionwise_aggregate":   boolSetting(),
	"max_worker_processes":             intSetting("", 0, maxConns),
	"max_parallel_workers":             intSetting("", 0, 1024),
	"max_parallel_workers_per_gather":  intSetting("", 0, 1024),
	"max_parallel_maintenance_workers": intSetting("", 0, 1024),
	"parallel_leader_participation":    boolSetting(),

	// Autovacuum and vacuum.
	"autovacuum":                            boolSetting(),
	"autovacuum_max_workers":                intSetting("", 1, maxConns),
	"autovacuum_naptime":                    intSetting("s", 1, intMax/1000),
	"autovacuum_vacuum_threshold":           intSetting("", 0, intMax),
	"autovacuum_vacuum_scale_factor":        realSetting("", 0, 100),
	"autovacuum_vacuum_insert_threshold":    intSetting("", -1, intMax),
	"autovacuum_vacuum_insert_scale_factor": realSetting("", 0, 100),
	"autovacuum_analyze_threshold":          intSetting("", 0, intMax),
	"autovacuum_analyze_scale_factor":       realSetting("", 0, 100),
	"autovacuum_vacuum_cost_delay":          realSetting("ms", -1, 100),
	"autovacuum_vacuum_cost_limit":          intSetting("", -1, 10000),
	"autovacuum_freeze_max_age":             intSetting("", 100000, 2000000000),
	"autovacuum_multixact_freeze_max_age":   intSetting("", 10000, 2000000000),
	"vacuum_cost_delay":                     realSetting("ms", 0, 100),
	"vacuum_cost_limit":                     intSetting("", 1, 10000),
	"vacuum_freeze_min_age":                 intSetting("", 0, 1000000000),
	"vacuum_freeze_table_age":               intSetting("", 0, 2000000000),

	// Timeouts and locks.
	"statement_timeout":                   intSetting("ms", 0, intMax),
	"lock_timeout":                        intSetting("ms", 0, intMax),
	"idle_in_transaction_session_timeout": intSetting("ms", 0, intMax),
	"idle_session_timeout":                intSetting("ms", 0, intMax),
	"deadlock_timeout":                    intSetting("ms", 1, intMax),

	// Logging and statistics.
	"log_min_duration_statement":  intSetting("ms", -1, intMax),
	"log_min_duration_sample":     intSetting("ms", -1, intMax),
	"log_statement_sample_rate":   realSetting("", 0, 1),
	"log_autovacuum_min_duration": intSetting("ms", -1, intMax),
	"log_statement":               enumSetting([]string{"none", "ddl", "mod", "all"}),
	"log_min_messages":            enumSetting(serverLevels, "debug"),
	"log_min_error_statement":     enumSetting(serverLevels, "debug"),
	"client_min_messages":         enumSetting(clientLevels, "debug", "info"),
	"log_error_verbosity":         enumSetting([]string{"terse", "default", "verbose"}),
	"log_checkpoints":             boolSetting(),
	"log_connections":             boolSetting(),
	"log_disconnections":          boolSetting(),
	"log_lock_waits":              boolSetting(),
	"log_temp_files":              intSetting("kB", -1, intMax),
	"track_io_timing":             boolSetting(),
	"track_activity_query_size":   intSetting("B", 100, 1048576),
	"track_functions":             enumSetting([]string{"none", "pl", "all"}),

	// Sessions.
	"default_transaction_isolation": enumSetting(isolation),
	"default_transaction_read_only": boolSetting(),
}

// CheckParameter reports whether PostgreSQL would take value for the
// setting key (case-insensitive), as it parses postgresql.conf: booleans
// on, off, true, false, yes, no, 1, 0 and their unique prefixes, any case;
// integers in decimal, octal (leading 0) or hex (0x), or with a fraction
// or exponent, which is rounded; memory and time with an optional unit,
// case-sensitive, after optional spaces (128MB, 128 MB, 5min), a bare
// number being in the setting's base unit; enums in any case. A value out
// of the setting's range is refused too. Settings not in settings (every
// string, every setting of an extension) are accepted.
func (e *Engine) CheckParameter(key, value string) error {
	s, ok := settings[strings.ToLower(strings.TrimSpace(key))]
	if !ok {
		return nil
	}
	return s.check(value)
}

// check returns nil if the server would take v.
func (s setting) check(v string) error {
	switch s.kind {
	case kindBool:
		if _, ok := parseBool(v); !ok {
			return fmt.Errorf("%q is not a boolean: use on or off (or true, false, yes, no, 1, 0)", v)
		}
		return nil
	case kindEnum:
		for _, list := range [][]string{s.values, s.hidden} {
			for _, allowed := range list {
				if asciiLower(v) == allowed {
					return nil
				}
			}
		}
		return fmt.Errorf("%q is not allowed: use %s", v, engine.Alternatives(s.values))
	}
	n, err := s.parse(v)
	if err != nil {
		return err
	}
	if n < s.min || n > s.max {
		return fmt.Errorf("%s is out of range: %s", strings.TrimSpace(v), s.rangeText())
	}
	return nil
}

// parse reads an integer or real setting's value in its base unit, as the
// server's parse_int and parse_real do.
func (s setting) parse(v string) (float64, error) {
	n, rest, ok := number(v, s.kind == kindInt)
	if !ok {
		return 0, s.notA(v, "")
	}
	rest = strings.TrimLeft(rest, cSpace)
	if rest != "" {
		if s.unit == "" {
			return 0, s.notA(v, "")
		}
		var found bool
		n, found = toBaseUnit(n, rest, s.unit)
		if !found {
			return 0, s.notA(v, rest)
		}
	}
	if s.kind == kindInt {
		n = math.RoundToEven(n)
		// Beyond what the server can hold: out of range in any case.
		if n > intMax {
			return math.Inf(1), nil
		}
		if n < math.MinInt32 {
			return math.Inf(-1), nil
		}
	}
	return n, nil
}

// notA is the error for a value that is not a number, or whose unit is
// unknown (rest is then what follows the number).
func (s setting) notA(v, rest string) error {
	var msg string
	switch {
	case isMemory(s.unit):
		msg = fmt.Sprintf("%q is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)", v)
	case s.unit != "":
		msg = fmt.Sprintf("%q is not a duration: use a number with ms, s, min, h or d (e.g. 30s)", v)
	case s.kind == kindInt:
		return fmt.Errorf("%q is not an integer", v)
	default:
		return fmt.Errorf("%q is not a number", v)
	}
	unit := strings.TrimRight(rest, cSpace)
	for _, u := range unitTable(s.unit) {
		if unit != u && asciiLower(unit) == asciiLower(u) {
			msg += fmt.Sprintf("; units are case-sensitive: %s, not %s", u, unit)
			break
		}
	}
	return errors.New(msg)
}

// rangeText describes the range, in the largest units that show the
// bounds exactly: "between 1 and 262143", "between 128kB and 8589934584kB",
// "at least 0".
func (s setting) rangeText() string {
	if s.max == dblMax {
		return "at least " + s.format(s.min)
	}
	return "between " + s.format(s.min) + " and " + s.format(s.max)
}

// format writes n, in the base unit, in the largest unit that divides it.
func (s setting) format(n float64) string {
	if s.unit == "" || n <= 0 || n != math.Trunc(n) {
		text := strconv.FormatFloat(n, 'g', -1, 64)
		if n > 0 && s.unit != "" {
			text += s.unit
		}
		return text
	}
	table := unitTable(s.unit)
	base := unitSize(s.unit)
	for _, u := range table {
		// Bytes or microseconds: exact in a float64 for every bound.
		whole := n * base
		if size := unitSize(u); size <= whole && math.Mod(whole, size) == 0 && u != "us" {
			return strconv.FormatFloat(whole/size, 'f', -1, 64) + u
		}
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + s.unit
}

// cSpace are the characters C's isspace accepts.
const cSpace = " \t\n\v\f\r"

// number reads the number at the start of v as the server does: for an
// integer setting strtol in base 0 (decimal, 0 octal, 0x hex), then strtod
// when a '.' or an exponent follows or strtol overflows; for a real
// setting strtod. It returns the value, the rest of v, and false when
// there is no number or it is out of a double's range or not a number.
func number(v string, integer bool) (float64, string, bool) {
	if integer {
		n, rest, overflow := strtol(v)
		if rest != "" && (rest[0] == '.' || rest[0] == 'e' || rest[0] == 'E') || overflow {
			return strtod(v)
		}
		if len(rest) == len(v) {
			return 0, v, false
		}
		return n, rest, true
	}
	return strtod(v)
}

// strtol is C's strtol(v, &end, 0) on a 64-bit long: the value, the rest,
// and whether it overflowed.
func strtol(v string) (float64, string, bool) {
	s := strings.TrimLeft(v, cSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base, digits := 10, "0123456789"
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && isDigit(s[2], "0123456789abcdefABCDEF"):
		base, digits, s = 16, "0123456789abcdefABCDEF", s[2:]
	case s != "" && s[0] == '0':
		base, digits = 8, "01234567"
	}
	i := 0
	for i < len(s) && isDigit(s[i], digits) {
		i++
	}
	if i == 0 {
		return 0, v, false
	}
	n, err := strconv.ParseInt(s[:i], base, 64)
	if neg {
		n = -n
	}
	return float64(n), s[i:], err != nil
}

func isDigit(c byte, digits string) bool { return strings.IndexByte(digits, c) >= 0 }

// strtod is C's strtod as glibc has it, for what postgresql.conf values
// hold: decimal numbers with an optional exponent, hexadecimal ones, inf
// and infinity, nan. It returns false for no number, an overflow or nan.
func strtod(v string) (float64, string, bool) {
	s := strings.TrimLeft(v, cSpace)
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	lower := asciiLower(s)
	inf := math.Inf(1)
	if sign == "-" {
		inf = math.Inf(-1)
	}
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return inf, s[len("infinity"):], true
	case strings.HasPrefix(lower, "inf"):
		return inf, s[len("inf"):], true
	case strings.HasPrefix(lower, "nan"):
		return 0, v, false
	}
	hex := len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X")
	digits, exp := "0123456789", "eE"
	start := 0
	if hex {
		digits, exp, start = "0123456789abcdefABCDEF", "pP", 2
	}
	i, mantissa := start, 0
	for i < len(s) && isDigit(s[i], digits) {
		i, mantissa = i+1, mantissa+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i], digits) {
			i, mantissa = i+1, mantissa+1
		}
	}
	if mantissa == 0 {
		if hex { // "0x" without digits is the number 0 followed by x.
			return 0, s[1:], true
		}
		return 0, v, false
	}
	end := i
	if i < len(s) && strings.IndexByte(exp, s[i]) >= 0 {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k], "0123456789") {
			k++
		}
		if k > j {
			end = k
		}
	}
	text := s[:end]
	if hex && !strings.ContainsAny(text, "pP") {
		text += "p0"
	}
	f, err := strconv.ParseFloat(sign+text, 64)
	if err != nil {
		return 0, v, false
	}
	return f, s[end:], true
}

// parseBool is the server's parse_bool: on, off, true, false, yes, no, 1
// and 0 in any case, and unique prefixes of true, false, yes and no, and
// of off from "of".
func parseBool(v string) (bool, bool) {
	l := asciiLower(v)
	switch {
	case l == "":
		return false, false
	case abbreviates(l, "true"):
		return true, true
	case abbreviates(l, "false"):
		return false, true
	case abbreviates(l, "yes"):
		return true, true
	case abbreviates(l, "no"):
		return false, true
	case l == "on":
		return true, true
	case l == "of" || l == "off":
		return false, true
	case l == "1":
		return true, true
	case l == "0":
		return false, true
	}
	return false, false
}

// abbreviates reports whether l is word or a beginning of it.
func abbreviates(l, word string) bool {
	return len(l) <= len(word) && word[:len(l)] == l
}

// memoryUnits and timeUnits are the units of the server's conversion
// tables, largest first.
var (
	memoryUnits = []string{"TB", "GB", "MB", "kB", "B"}
	timeUnits   = []string{"d", "h", "min", "s", "ms", "us"}
)

// asciiLower lower-cases ASCII letters only, as the server's
// pg_strcasecmp compares.
func asciiLower(v string) string {
	b := []byte(v)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isMemory(unit string) bool {
	return unit == "B" || unit == "kB" || unit == "8kB" || unit == "MB"
}

func unitTable(unit string) []string {
	switch {
	case unit == "":
		return nil
	case isMemory(unit):
		return memoryUnits
	}
	return timeUnits
}

// unitSize is a unit's size in bytes or microseconds.
func unitSize(unit string) float64 {
	return map[string]float64{
		"B": 1, "kB": 1 << 10, "8kB": 8 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40,
		"us": 1, "ms": 1e3, "s": 1e6, "min": 60e6, "h": 3600e6, "d": 86400e6,
	}[unit]
}

// toBaseUnit is the server's convert_to_base_unit: n in the unit of text
// (which may end in spaces) converted to base. A fractional value is
// rounded to a whole number of the next smaller unit, as the server does.
func toBaseUnit(n float64, text, base string) (float64, bool) {
	text = strings.TrimRight(text, cSpace)
	table := unitTable(base)
	for i, u := range table {
		if u != text {
			continue
		}
		v := n * (unitSize(u) / unitSize(base))
		if i+1 < len(table) {
			next := unitSize(table[i+1]) / unitSize(base)
			v = math.RoundToEven(v/next) * next
		}
		return v, true
	}
	return 0, false
}
