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
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/engine"
)

func TestRegistered(t *testing.T) {
	for name, want := range map[string]string{"mysql": "mysql:8.4", "mariadb": "mariadb:8.4"} {
		e, err := engine.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Image("8.4"); got != want {
			t.Errorf("%s: Image = %q, want %q", name, got, want)
		}
	}
}

func TestRenderTuning(t *testing.T) {
	cases := []struct {
		memory         int64
		pool           string
		connections    string
		mysqlInstances string
	}{
		{0, "134217728", "151", "1"},
		{512 * mib, "268435456", "64", "1"},
		{1 * gib, "536870912", "128", "1"},
		{2 * gib, "1073741824", "256", "1"},
		{8 * gib, "6442450944", "1024", "6"},
	}
	for _, c := range cases {
		files, err := MariaDB.Render(engine.Tuning{MemoryBytes: c.memory, Port: 3306})
		if err != nil {
			t.Fatal(err)
		}
		got := parseConfig(files[ConfigFile])
		want := map[string]string{
			"innodb_buffer_pool_size": c.pool, "max_connections": c.connections,
			"port": "3306", "log_bin": "binlog", "binlog_format": "ROW",
			"character_set_server": "utf8mb4",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("memory %d: %s = %q, want %q", c.memory, k, got[k], v)
			}
		}
		for _, k := range []string{"server_id", "datadir", "socket", "innodb_buffer_pool_instances"} {
			if _, ok := got[k]; ok {
				t.Errorf("memory %d: mariadb's my.cnf sets %s", c.memory, k)
			}
		}
		files, err = MySQL.Render(engine.Tuning{MemoryBytes: c.memory})
		if err != nil {
			t.Fatal(err)
		}
		if got := parseConfig(files[ConfigFile])["innodb_buffer_pool_instances"]; got != c.mysqlInstances {
			t.Errorf("memory %d: mysql's innodb_buffer_pool_instances = %q, want %q", c.memory, got, c.mysqlInstances)
		}
	}
}

func TestRenderParametersWin(t *testing.T) {
	files, err := MariaDB.Render(engine.Tuning{MemoryBytes: gib, Parameters: map[string]string{
		"Max-Connections": "333", "innodb_buffer_pool_size": "805306368", "sql_mode": "ANSI",
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := parseConfig(files[ConfigFile])
	for k, v := range map[string]string{"max_connections": "333", "innodb_buffer_pool_size": "805306368", "sql_mode": "ANSI"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if n := strings.Count(files[ConfigFile], "max_connections"); n != 1 {
		t.Errorf("max_connections appears %d times", n)
	}
}

func TestRenderRejects(t *testing.T) {
	for _, p := range []map[string]string{
		{"server-id": "7"},
		{"loose-Bind_Address": "0.0.0.0"},
		{"skip-log-bin": ""},
		{"gtid_domain_id": "2"},
		{"sql_mode": "ANSI\n[client]"},
		{"a b": "1"},
	} {
		if _, err := MySQL.Render(engine.Tuning{Parameters: p}); err == nil {
			t.Errorf("Render accepted %v", p)
		}
	}
}

func TestControlledAndNeedsRestart(t *testing.T) {
	for _, k := range []string{"port", "BIND-ADDRESS", "datadir", "socket", "pid_file", "Server_ID",
		"log-bin", "relay_log", "gtid_mode", "gtid-strict-mode", "read_only", "super-read-only",
		"skip-networking", "user", "loose-server-id", "skip-slave-start"} {
		if !MySQL.Controlled(k) {
			t.Errorf("%s is not controlled", k)
		}
	}
	for _, k := range []string{"max_connections", "innodb_buffer_pool_size", "sql_mode", "skip-name-resolve", "long_query_time"} {
		if MySQL.Controlled(k) {
			t.Errorf("%s is controlled", k)
		}
	}
	for _, k := range []string{"innodb_log_file_size", "INNODB-BUFFER-POOL-SIZE", "lower_case_table_names", "performance_schema_max_table_instances"} {
		if !MariaDB.NeedsRestart(k) {
			t.Errorf("%s does not need a restart", k)
		}
	}
	for _, k := range []string{"max_connections", "long-query-time", "sql_mode"} {
		if MariaDB.NeedsRestart(k) {
			t.Errorf("%s needs a restart", k)
		}
	}
}

func TestQuoting(t *testing.T) {
	if got, want := literal(`a'b\c`), `'a\'b\\c'`; got != want {
		t.Errorf("literal = %s, want %s", got, want)
	}
	if got, want := ident("a`b"), "`a``b`"; got != want {
		t.Errorf("ident = %s, want %s", got, want)
	}
	if got, want := optionValue(`p"a\ss`), `"p\"a\\ss"`; got != want {
		t.Errorf("optionValue = %s, want %s", got, want)
	}
}

func TestSetValueAndParseConfig(t *testing.T) {
	for in, want := range map[string]string{"77": "77", "-1": "-1", "64M": "67108864", "1k": "1024",
		"2G": "2147483648", "0.5": "0.5", "1e1": "1e1", "1.2.3": "'1.2.3'", "ON": "'ON'", "ANSI,NO_ZERO_DATE": "'ANSI,NO_ZERO_DATE'", "x'y": `'x\'y'`} {
		if got := setValue(in); got != want {
			t.Errorf("setValue(%q) = %s, want %s", in, got, want)
		}
	}
	got := parseConfig("[client]\nport=1\n[mysqld]\n# c\nMax-Connections = 5\nskip-name-resolve\nsql_mode = \"ANSI\"\n[mysqldump]\nquick\n")
	want := map[string]string{"max_connections": "5", "skip_name_resolve": "ON", "sql_mode": "ANSI"}
	if len(got) != len(want) {
		t.Errorf("parseConfig = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parseConfig: %s = %q, want %q", k, got[k], v)
		}
	}
}
