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
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/engine"
)

func TestTuneFor(t *testing.T) {
	tests := []struct {
		name   string
		memory int64
		want   map[string]string
	}{
		{"small", 512 * miB, map[string]string{
			"max_connections": "100", "shared_buffers": "128MB", "effective_cache_size": "384MB",
			"maintenance_work_mem": "26214kB", "work_mem": "1310kB", "wal_keep_size": "256MB",
		}},
		{"medium", giB, map[string]string{
			"max_connections": "100", "shared_buffers": "256MB", "effective_cache_size": "768MB",
			"maintenance_work_mem": "52428kB", "work_mem": "2621kB", "wal_keep_size": "256MB",
		}},
		{"large", 2 * giB, map[string]string{
			"max_connections": "200", "shared_buffers": "512MB", "effective_cache_size": "1536MB",
			"maintenance_work_mem": "104857kB", "work_mem": "2621kB", "wal_keep_size": "256MB",
		}},
		{"huge: maintenance_work_mem capped", 64 * giB, map[string]string{
			"max_connections": "300", "shared_buffers": "16GB", "effective_cache_size": "48GB",
			"maintenance_work_mem": "2GB", "work_mem": "55924kB", "wal_keep_size": "256MB",
		}},
		{"odd size: whole pages", 1_000_000_000, map[string]string{
			"max_connections": "100", "shared_buffers": "244136kB", "effective_cache_size": "732416kB",
			"maintenance_work_mem": "48828kB", "work_mem": "2441kB", "wal_keep_size": "256MB",
		}},
		{"tiny: floors", 8 * miB, map[string]string{
			"max_connections": "100", "shared_buffers": "2MB", "effective_cache_size": "6MB",
			"maintenance_work_mem": "1MB", "work_mem": "64kB", "wal_keep_size": "256MB",
		}},
		{"unknown", 0, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TuneFor(tt.memory)
			if len(got) != len(tt.want) {
				t.Errorf("TuneFor(%d) = %v, want %v", tt.memory, got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("TuneFor(%d)[%s] = %q, want %q", tt.memory, k, got[k], v)
				}
			}
		})
	}
}

func TestRenderParametersOverrideTuning(t *testing.T) {
	e := &Engine{}
	files, err := e.Render(engine.Tuning{Version: "15", MemoryBytes: giB, Port: 6543, Parameters: map[string]string{
		"Work_Mem":                      "8MB",
		"application_name":              `it's a \ test`,
		"auto_explain.log_min_duration": "1s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	conf := files["postgresql.conf"]
	for _, want := range []string{
		"work_mem = '8MB'\n",
		"shared_buffers = '256MB'\n",
		`application_name = 'it''s a \\ test'` + "\n",
		"auto_explain.log_min_duration = '1s'\n",
		"port = '6543'\n",
		"password_encryption = 'scram-sha-256'\n",
		"wal_level = 'replica'\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("postgresql.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "work_mem = '2621kB'") {
		t.Errorf("the tuned work_mem was not overridden:\n%s", conf)
	}
	for _, name := range []string{"pg_hba.conf", "pg_ident.conf"} {
		if files[name] == "" {
			t.Errorf("%s not rendered", name)
		}
	}
	if !strings.Contains(files["pg_hba.conf"], "host    replication  all   0.0.0.0/0  scram-sha-256") {
		t.Errorf("pg_hba.conf does not allow replication with a password:\n%s", files["pg_hba.conf"])
	}

	for _, bad := range []map[string]string{
		{"Port": "1"},
		{"hba_file": "/etc/passwd"},
		{"include": "/tmp/x"},
		{"work_mem = '1MB'\nport": "1"},
		{"": "x"},
	} {
		if _, err := e.Render(engine.Tuning{Parameters: bad}); err == nil {
			t.Errorf("Render accepted %q", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     "'plain'",
		"it's":      "'it''s'",
		`a\b`:       `'a\\b'`,
		"two\nline": `'two\nline'`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"plain": "'plain'",
		"it's":  "'it''s'",
		`a\'b`:  ` E'a\\''b'`,
	} {
		if got := quoteLiteral(in); got != want {
			t.Errorf("quoteLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestControlledAndNeedsRestart(t *testing.T) {
	e := &Engine{}
	for _, k := range []string{"port", "LISTEN_ADDRESSES", "data_directory", "hba_file", "ident_file", "config_file",
		"external_pid_file", "unix_socket_directories", "wal_level", "max_wal_senders", "hot_standby",
		"primary_conninfo", "primary_slot_name", "restore_command", "archive_mode", "archive_command", "ssl_key_file"} {
		if !e.Controlled(k) {
			t.Errorf("Controlled(%q) = false", k)
		}
	}
	for _, k := range []string{"work_mem", "shared_buffers", "max_connections", "log_min_duration_statement"} {
		if e.Controlled(k) {
			t.Errorf("Controlled(%q) = true", k)
		}
	}
	for k, want := range map[string]bool{"shared_buffers": true, "Max_Connections": true, "shared_preload_libraries": true,
		"wal_level": true, "port": true, "work_mem": false, "log_min_duration_statement": false} {
		if got := e.NeedsRestart(k); got != want {
			t.Errorf("NeedsRestart(%q) = %v, want %v", k, got, want)
		}
	}
	if got := e.Image("16.4"); got != "postgres:16.4" {
		t.Errorf("Image = %s", got)
	}
	if got, err := engine.Get("postgres"); err != nil || got.Name() != "postgres" {
		t.Errorf("engine.Get(postgres) = %v, %v", got, err)
	}
}
