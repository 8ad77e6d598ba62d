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
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/steward-dev/steward/internal/engine"
)

func TestCheckParameter(t *testing.T) {
	e := &Engine{}
	for _, tc := range []struct {
		key, value string
		// want is "" for a value the server takes, else the error.
		want string
	}{
		// Sizes: a unit after optional spaces, case-sensitive; a bare
		// number is in the base unit (8kB pages for shared_buffers).
		{"shared_buffers", "128MB", ""},
		{"shared_buffers", "128 MB", ""},
		{"shared_buffers", " 128MB ", ""},
		{"shared_buffers", "1GB", ""},
		{"shared_buffers", "1.5GB", ""},
		{"shared_buffers", "16384", ""},
		{"shared_buffers", "0x4000", ""},
		{"shared_buffers", "1e4", ""},
		{"shared_buffers", "128kB", ""},
		{"shared_buffers", "127kB", ""}, // 15.875 pages, rounded to 16
		{"Shared_Buffers", "128MB", ""},
		{"shared_buffers", "not-a-size", `"not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`},
		{"shared_buffers", "128mb", `"128mb" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB); units are case-sensitive: MB, not mb`},
		{"shared_buffers", "128KB", `"128KB" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB); units are case-sensitive: kB, not KB`},
		{"shared_buffers", "128M", `"128M" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`},
		{"shared_buffers", "", `"" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`},
		{"shared_buffers", "64kB", "64kB is out of range: between 128kB and 8589934584kB"},
		{"shared_buffers", "-1", "-1 is out of range: between 128kB and 8589934584kB"},
		{"shared_buffers", "100TB", "100TB is out of range: between 128kB and 8589934584kB"},
		{"work_mem", "4MB", ""},
		{"work_mem", "63kB", "63kB is out of range: between 64kB and 2147483647kB"},
		{"max_wal_size", "1GB", ""},
		{"max_wal_size", "1MB", "1MB is out of range: between 2MB and 2147483647MB"},
		{"wal_buffers", "-1", ""}, // -1: a share of shared_buffers
		{"wal_buffers", "16MB", ""},
		{"wal_buffers", "-2", "-2 is out of range: between -1 and 2097144kB"},
		{"autovacuum_work_mem", "-1", ""},
		{"track_activity_query_size", "1MB", ""},
		{"track_activity_query_size", "99B", "99B is out of range: between 100B and 1MB"},
		// Integers: octal with a leading 0, hex, fractions rounded.
		{"max_connections", "100", ""},
		{"max_connections", " 100 ", ""},
		{"max_connections", "100.4", ""},
		{"max_connections", "010", ""},
		{"max_connections", "-5", "-5 is out of range: between 1 and 262143"},
		{"max_connections", "0", "0 is out of range: between 1 and 262143"},
		{"max_connections", "262144", "262144 is out of range: between 1 and 262143"},
		{"max_connections", "08", `"08" is not an integer`},
		{"max_connections", "100MB", `"100MB" is not an integer`},
		{"max_connections", "1,000", `"1,000" is not an integer`},
		{"max_connections", "inf", `"inf" is not an integer`},
		{"max_connections", "lots", `"lots" is not an integer`},
		// Durations.
		{"statement_timeout", "30s", ""},
		{"statement_timeout", "5min", ""},
		{"statement_timeout", "5 min", ""},
		{"statement_timeout", "1.5h", ""},
		{"statement_timeout", "500us", ""},
		{"statement_timeout", "0", ""},
		{"statement_timeout", "5m", `"5m" is not a duration: use a number with ms, s, min, h or d (e.g. 30s)`},
		{"statement_timeout", "5 minutes", `"5 minutes" is not a duration: use a number with ms, s, min, h or d (e.g. 30s)`},
		{"statement_timeout", "30S", `"30S" is not a duration: use a number with ms, s, min, h or d (e.g. 30s); units are case-sensitive: s, not S`},
		{"statement_timeout", "-1", "-1 is out of range: between 0 and 2147483647ms"},
		{"statement_timeout", "25d", "25d is out of range: between 0 and 2147483647ms"},
		{"log_min_duration_statement", "-1", ""},
		{"log_min_duration_statement", "250ms", ""},
		{"checkpoint_timeout", "15min", ""},
		{"checkpoint_timeout", "10s", "10s is out of range: between 30s and 1d"},
		{"checkpoint_timeout", "2d", "2d is out of range: between 30s and 1d"},
		{"autovacuum_naptime", "1min", ""},
		// Reals.
		{"random_page_cost", "1.1", ""},
		{"random_page_cost", ".5", ""},
		{"random_page_cost", "4", ""},
		{"random_page_cost", "-1", "-1 is out of range: at least 0"},
		{"random_page_cost", "inf", "inf is out of range: at least 0"},
		{"random_page_cost", "nan", `"nan" is not a number`},
		{"random_page_cost", "1,1", `"1,1" is not a number`},
		{"checkpoint_completion_target", "0.9", ""},
		{"checkpoint_completion_target", "1.5", "1.5 is out of range: between 0 and 1"},
		{"vacuum_cost_delay", "2ms", ""},
		{"vacuum_cost_delay", "1.5 ms", ""},
		{"vacuum_cost_delay", "2s", "2s is out of range: between 0 and 100ms"},
		{"autovacuum_vacuum_cost_delay", "-1", ""},
		// Booleans: any case, unique prefixes; no spaces.
		{"jit", "on", ""},
		{"jit", "OFF", ""},
		{"jit", "true", ""},
		{"jit", "f", ""},
		{"jit", "Yes", ""},
		{"jit", "n", ""},
		{"jit", "1", ""},
		{"jit", "0", ""},
		{"jit", "of", ""},
		{"jit", "o", `"o" is not a boolean: use on or off (or true, false, yes, no, 1, 0)`},
		{"jit", " on", `" on" is not a boolean: use on or off (or true, false, yes, no, 1, 0)`},
		{"jit", "2", `"2" is not a boolean: use on or off (or true, false, yes, no, 1, 0)`},
		{"jit", "enabled", `"enabled" is not a boolean: use on or off (or true, false, yes, no, 1, 0)`},
		// Enums: any case, hidden spellings too.
		{"synchronous_commit", "remote_apply", ""},
		{"synchronous_commit", "OFF", ""},
		{"synchronous_commit", "true", ""},
		{"synchronous_commit", "t", `"t" is not allowed: use local, remote_write, remote_apply, on or off`},
		{"huge_pages", "try", ""},
		{"huge_pages", "maybe", `"maybe" is not allowed: use off, on or try`},
		{"log_min_messages", "debug", ""},
		{"log_min_messages", "WARNING", ""},
		{"log_min_messages", "verbose", `"verbose" is not allowed: use debug5, debug4, debug3, debug2, debug1, info, notice, warning, error, log, fatal or panic`},
		{"log_statement", "ddl", ""},
		{"default_transaction_isolation", "Read Committed", ""},
		{"default_transaction_isolation", "read_committed", `"read_committed" is not allowed: use serializable, repeatable read, read committed or read uncommitted`},
		// Unknown settings, strings and an extension's are the server's to judge.
		{"shared_preload_libraries", "pg_stat_statements", ""},
		{"pg_stat_statements.max", "lots", ""},
		{"no_such_setting", "anything", ""},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			err := e.CheckParameter(tc.key, tc.value)
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

// TestTunedValuesAreValid checks that what TuneFor derives passes the check
// for every memory size, so that a preset never degrades a Database.
func TestTunedValuesAreValid(t *testing.T) {
	e := &Engine{}
	for _, m := range []int64{8 * miB, 512 * miB, giB, 2 * giB, 3 * giB, 64 * giB, 1_000_000_000} {
		if bad := engine.CheckParameters(e, TuneFor(m)); bad != nil {
			t.Errorf("TuneFor(%d): %v", m, bad)
		}
	}
}

// TestSettingsMatchServer compares the settings table with the real
// server's pg_settings, then every check with the server's own: for many
// values of each setting, CheckParameter refuses a value exactly when
// ALTER SYSTEM (which parses and validates as postgresql.conf does) does.
func TestSettingsMatchServer(t *testing.T) {
	f := newFixture(t)
	f.initPrimary(t)
	f.render(t, engine.Tuning{Version: "15"})
	f.start(t)
	c := mustConnect(t, f.cfg, f.cfg.Superuser, "postgres")
	ctx := context.Background()

	type row struct {
		Name, Vartype, Unit, Min, Max string
		Enumvals                      []string
	}
	rows, err := c.Query(ctx, `SELECT name, vartype, coalesce(unit, ''), coalesce(min_val, ''), coalesce(max_val, ''),
		coalesce(enumvals, '{}') FROM pg_settings`)
	if err != nil {
		t.Fatal(err)
	}
	server, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]row{}
	for _, r := range server {
		byName[r.Name] = r
	}
	vartypes := map[kind]string{kindBool: "bool", kindInt: "integer", kindReal: "real", kindEnum: "enum"}
	for name, s := range settings {
		r, ok := byName[name]
		if !ok {
			t.Errorf("%s: not a setting of PostgreSQL 15", name)
			continue
		}
		if r.Vartype != vartypes[s.kind] || r.Unit != s.unit {
			t.Errorf("%s: %s in %q here, %s in %q on the server", name, vartypes[s.kind], s.unit, r.Vartype, r.Unit)
		}
		if s.kind == kindInt || s.kind == kindReal {
			lo, _ := strconv.ParseFloat(r.Min, 64)
			hi, _ := strconv.ParseFloat(r.Max, 64)
			// pg_settings prints reals with 6 digits: 1.79769e+308.
			if lo != s.min || (hi != s.max && !(s.max == dblMax && r.Max == "1.79769e+308")) {
				t.Errorf("%s: range %v..%v here, %s..%s on the server", name, s.min, s.max, r.Min, r.Max)
			}
		}
		if s.kind == kindEnum && !slices.Equal(r.Enumvals, s.values) {
			t.Errorf("%s: values %v here, %v on the server", name, s.values, r.Enumvals)
		}
	}

	// The server refuses these settings' maximums for their sum, which is
	// not checked.
	summed := []string{"max_connections", "autovacuum_max_workers", "max_worker_processes"}
	tried := 0
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		for _, v := range candidates(settings[name]) {
			if n, err := strconv.Atoi(v); err == nil && n > 262000 && slices.Contains(summed, name) {
				continue
			}
			tried++
			_, serverErr := c.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", name, Quote(v)))
			ours := f.e.CheckParameter(name, v)
			if (serverErr == nil) != (ours == nil) {
				t.Errorf("%s = %q: the server says %v, CheckParameter %v", name, v, serverErr, ours)
			}
		}
	}
	t.Logf("%d values of %d settings tried", tried, len(settings))
}

// candidates are values to try on a setting: its bounds and their
// neighbours in several units, and the spellings the parsers treat
// specially.
func candidates(s setting) []string {
	vs := []string{"", " ", "abc", "0", "1", "-1", "-5", "2", "1.5", "1e3", "0x10", "010", "08", "inf", "nan", "1,5"}
	switch s.kind {
	case kindBool:
		return append(vs, "on", "ON", "off", "of", "o", "t", "tr", "true", "TRUE", "truex", "f", "y", "ye", "yes", "n", "no", " on", "on ", "enabled")
	case kindEnum:
		for _, v := range append(slices.Clone(s.values), s.hidden...) {
			vs = append(vs, v, strings.ToUpper(v), v+" ", v[:len(v)-1])
		}
		return append(vs, "bogus", "true", "on", "t", "debug", "info")
	}
	for _, n := range []float64{s.min, s.max} {
		if n == dblMax {
			continue
		}
		for _, d := range []float64{-1, 0, 1} {
			vs = append(vs, strconv.FormatFloat(n+d, 'f', -1, 64))
		}
		vs = append(vs, s.format(n))
	}
	if isMemory(s.unit) {
		vs = append(vs, "128MB", "128 MB", "128mb", "128M", "128KB", "1.5GB", "64kB", "127kB", "1TB", "100TB", "1B", "8192B", "1MB x", "1 MB ", "0x10MB")
	}
	if s.unit != "" && !isMemory(s.unit) {
		vs = append(vs, "30s", "5min", "5 min", "5m", "1h", "1.5h", "500us", "1.5ms", "1d", "25d", "30S", "1e3ms", "2s", "100.4")
	}
	return vs
}
