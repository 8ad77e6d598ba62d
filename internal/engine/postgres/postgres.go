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

// Package postgres is Steward's PostgreSQL engine (versions 13 to 17). It
// registers itself as "postgres" in package engine.
//
// # What the pod provides
//
// Every database pod runs the official image (postgres:<version>, uid 999,
// the PostgreSQL programs on $PATH) with `steward instance` as entrypoint.
// The pod must provide:
//
//   - DataDir: a directory on the persistent volume, one level below its
//     mount point (e.g. /var/lib/postgresql/data/pgdata under a volume
//     mounted at /var/lib/postgresql/data), because a fresh volume may hold
//     lost+found and initdb and pg_basebackup need an empty directory. It is
//     created with mode 0700 when missing.
//   - ConfigDir: the files Render produced (postgresql.conf, pg_hba.conf,
//     pg_ident.conf), typically a ConfigMap volume; read-only is fine.
//   - RunDir: a writable directory (an emptyDir) for the server's Unix
//     socket and short-lived secret files (the initdb password file, the
//     replica's password file). Its path must be short: a Unix socket path
//     is limited to 107 bytes.
//
// # How the server reads its configuration
//
// The server is started as
//
//	postgres -D <DataDir> -c config_file=<RunDir>/postgresql.conf \
//	    -c hba_file=<ConfigDir>/pg_hba.conf -c ident_file=<ConfigDir>/pg_ident.conf \
//	    -c port=<Port> -c listen_addresses=<Host or *> \
//	    -c unix_socket_directories=<RunDir>
//
// Settings given with -c win over the files, so the file locations, the
// port and the socket directory always come from the instance's Config.
// <RunDir>/postgresql.conf includes <ConfigDir>/postgresql.conf and then,
// on a replica, sets primary_conninfo; everything else comes from
// ConfigDir. postgresql.auto.conf in DataDir is
// still read (ALTER SYSTEM). A configuration change in ConfigDir takes
// effect with Server.Reload, or at the next start for the settings for which
// NeedsRestart is true.
//
// # Users and authentication
//
// initdb creates the superuser with its password; every connection, local or
// over TCP, authenticates with scram-sha-256, including the instance
// manager's own connections over the Unix socket. Passwords never appear on
// a command line, in the environment of the server, or in a log: initdb reads
// the superuser's from a file in RunDir (mode 0600, deleted afterwards),
// pg_basebackup and the WAL receiver read the replication user's from a
// password file in RunDir, and roles get their passwords as SCRAM verifiers
// computed here, so that the server never even sees the plain text.
// Server.EnsureUsers updates the owner's and the replication user's
// passwords at every start; the superuser's is set by initdb only, and the
// instance manager logs in with it, so changing it needs ALTER ROLE first.
//
// # Replication
//
// Ordinal 0 is the primary. A replica is cloned with pg_basebackup (-X
// stream) and gets a standby.signal file; its primary_conninfo is written at
// every start from Config.PrimaryHost and PrimaryPort, with
// passfile=<RunDir>/pgpass rather than a password, into the file the server
// is started with (<RunDir>/postgresql.conf, which includes ConfigDir's), so
// that no password is stored in the data directory, a changed address or
// password takes effect at the next start, and a running standby follows
// another primary on a reload (Repoint).
package postgres

import (
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

func init() { engine.Register(&Engine{}) }

// Engine implements engine.Engine for PostgreSQL.
type Engine struct {
	// Output receives the output of the server and of its tools (initdb,
	// pg_basebackup); nil means os.Stderr, i.e. the pod's log.
	Output io.Writer
}

var _ engine.Engine = (*Engine)(nil)

func (e *Engine) output() io.Writer {
	if e.Output != nil {
		return e.Output
	}
	return os.Stderr
}

// Name is "postgres".
func (e *Engine) Name() string { return "postgres" }

// Versions lists the supported major versions.
func (e *Engine) Versions() []string { return []string{"13", "14", "15", "16", "17"} }

// Image is the official image of a version ("16" or "16.4"): postgres:<v>.
func (e *Engine) Image(version string) string { return "postgres:" + version }

// controlled are the settings Steward sets itself: file locations, listening,
// replication and archiving, TLS files, logging destination, and the
// directives that would read other files.
var controlled = map[string]bool{
	"port": true, "listen_addresses": true,
	"data_directory": true, "config_file": true, "hba_file": true, "ident_file": true,
	"external_pid_file":       true,
	"unix_socket_directories": true, "unix_socket_group": true, "unix_socket_permissions": true,
	"wal_level": true, "max_wal_senders": true, "hot_standby": true,
	"primary_conninfo": true, "primary_slot_name": true, "promote_trigger_file": true,
	"restore_command": true, "archive_cleanup_command": true, "recovery_end_command": true,
	"recovery_target": true, "recovery_target_action": true, "recovery_target_inclusive": true,
	"recovery_target_lsn": true, "recovery_target_name": true, "recovery_target_time": true,
	"recovery_target_timeline": true, "recovery_target_xid": true,
	"archive_mode": true, "archive_command": true, "archive_library": true,
	"password_encryption": true,
	"ssl":                 true, "ssl_cert_file": true, "ssl_key_file": true, "ssl_ca_file": true,
	"ssl_crl_file": true, "ssl_crl_dir": true, "ssl_passphrase_command": true,
	"logging_collector": true, "log_destination": true, "log_directory": true, "log_filename": true,
	"include": true, "include_if_exists": true, "include_dir": true,
	// Failover's safety rests on these: a primary cut off from its replicas
	// notices within wal_sender_timeout, and which commits count as kept is
	// spec.highAvailability.synchronousReplicas.
	"wal_sender_timeout": true, "wal_receiver_timeout": true, "synchronous_standby_names": true,
}

// Controlled reports whether Steward sets key itself (case-insensitive).
func (e *Engine) Controlled(key string) bool {
	return controlled[strings.ToLower(strings.TrimSpace(key))]
}

// restart are the settings of context "postmaster" in PostgreSQL 13 to 17:
// a change takes effect only at the next start.
var restart = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`
		archive_mode autovacuum_freeze_max_age autovacuum_max_workers
		autovacuum_multixact_freeze_max_age bonjour bonjour_name cluster_name
		data_directory data_sync_retry dynamic_shared_memory_type event_source
		external_pid_file hba_file hot_standby huge_page_size huge_pages ident_file
		jit_provider listen_addresses logging_collector max_connections
		max_files_per_process max_locks_per_transaction max_logical_replication_workers
		max_pred_locks_per_transaction max_prepared_transactions max_replication_slots
		max_wal_senders max_worker_processes min_dynamic_shared_memory
		old_snapshot_threshold port recovery_target recovery_target_action
		recovery_target_inclusive recovery_target_lsn recovery_target_name
		recovery_target_time recovery_target_timeline recovery_target_xid
		shared_buffers shared_memory_type shared_preload_libraries
		superuser_reserved_connections track_activity_query_size track_commit_timestamp
		unix_socket_directories unix_socket_group unix_socket_permissions wal_buffers
		wal_decode_buffer_size wal_level wal_log_hints ignore_invalid_pages
		config_file restore_command primary_conninfo primary_slot_name
		reserved_connections debug_io_direct max_notify_queue_pages
		commit_timestamp_buffers multixact_member_buffers multixact_offset_buffers
		notify_buffers serializable_buffers subtransaction_buffers transaction_buffers
		autovacuum_worker_slots io_method io_workers`) {
		restart[k] = true
	}
}

// NeedsRestart reports whether a change of key takes effect only after a
// restart: the postmaster-context settings of the supported versions. (Of
// these, restore_command, primary_conninfo and primary_slot_name can be
// reloaded since PostgreSQL 13 or 14 but are listed to be safe.)
func (e *Engine) NeedsRestart(key string) bool {
	return restart[strings.ToLower(strings.TrimSpace(key))]
}

var keyPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// Render returns postgresql.conf, pg_hba.conf and pg_ident.conf for
// ConfigDir. The tuned values of TuneFor come first, the user's Parameters
// win over them; the settings Steward controls are fixed. The parameters
// are read in key order, so that the same ones always render the same, or
// fail on the same key; two keys of one setting (e.g. work_mem and
// Work_Mem) are refused, as either value would be an arbitrary choice.
func (e *Engine) Render(t engine.Tuning) (map[string]string, error) {
	tuned := TuneFor(t.MemoryBytes)
	given := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(t.Parameters)) {
		lk := strings.ToLower(strings.TrimSpace(k))
		if !keyPattern.MatchString(lk) {
			return nil, fmt.Errorf("invalid PostgreSQL parameter name %q", k)
		}
		if e.Controlled(lk) {
			return nil, fmt.Errorf("parameter %s is set by Steward and cannot be changed", lk)
		}
		if other, ok := given[lk]; ok {
			return nil, fmt.Errorf("parameters %q and %q both set %s: keep one", other, k, lk)
		}
		given[lk] = k
		tuned[lk] = t.Parameters[k]
	}
	port := t.Port
	if port == 0 {
		port = 5432
	}
	var b strings.Builder
	b.WriteString("# Rendered by Steward. Do not edit: changes are overwritten.\n")
	b.WriteString("# data_directory, config_file, hba_file, ident_file, port, listen_addresses,\n")
	b.WriteString("# unix_socket_directories and primary_conninfo are given on the command line\n")
	b.WriteString("# and win over this file; listen_addresses and unix_socket_directories are\n")
	b.WriteString("# not set here because a differing value would show as pending a restart.\n\n")
	b.WriteString("# Set by Steward\n")
	fixed := [][2]string{
		{"port", fmt.Sprint(port)},
		{"password_encryption", "scram-sha-256"},
		{"wal_level", "replica"},
		{"max_wal_senders", "10"},
		{"hot_standby", "on"},
		{"logging_collector", "off"},
		{"log_destination", "stderr"},
		{"wal_sender_timeout", "3s"},
		{"wal_receiver_timeout", "3s"},
		{"synchronous_standby_names", synchronousStandbys(t.SynchronousReplicas)},
	}
	for _, kv := range fixed {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], Quote(kv[1]))
	}
	b.WriteString("\n# Tuned for the memory limit, then the user's parameters\n")
	keys := make([]string, 0, len(tuned))
	for k := range tuned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, Quote(tuned[k]))
	}
	hba := `# Rendered by Steward. Every connection authenticates with a SCRAM password.
# TYPE  DATABASE     USER  ADDRESS    METHOD
local   all          all              scram-sha-256
local   replication  all              scram-sha-256
host    all          all   0.0.0.0/0  scram-sha-256
host    all          all   ::/0       scram-sha-256
host    replication  all   0.0.0.0/0  scram-sha-256
host    replication  all   ::/0       scram-sha-256
`
	return map[string]string{
		"postgresql.conf": b.String(),
		"pg_hba.conf":     hba,
		"pg_ident.conf":   "# Rendered by Steward: no user name maps.\n",
	}, nil
}

// synchronousStandbys is synchronous_standby_names for n synchronous
// replicas: any n of the streaming ones, whatever their names.
func synchronousStandbys(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("ANY %d (*)", n)
}

// Quote returns v as a single-quoted postgresql.conf value: quotes are
// doubled, backslashes and line breaks escaped.
func Quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `''`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return "'" + r.Replace(v) + "'"
}
