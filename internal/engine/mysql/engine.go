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
	"io"
	"os"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

// Output receives what the server and the programs the engine runs print.
// Set it before the engine is used.
var Output io.Writer = os.Stderr

// Engine runs MySQL or MariaDB, depending on its flavor.
type Engine struct {
	f *flavor
}

var _ engine.Engine = (*Engine)(nil)

// MySQL and MariaDB are the two registered engines. MariaDB's instances
// change roles (failover, switchover) by GTID; MySQL keeps its first
// instance as the primary.
var (
	MySQL   = &Engine{f: mysqlFlavor}
	MariaDB = &GTIDEngine{Engine: &Engine{f: mariadbFlavor}}
)

func init() {
	engine.Register(MySQL)
	engine.Register(MariaDB)
}

// Name is "mysql" or "mariadb".
func (e *Engine) Name() string { return e.f.name }

// Versions lists the supported major versions.
func (e *Engine) Versions() []string { return append([]string(nil), e.f.versions...) }

// Image is the official image of a version.
func (e *Engine) Image(version string) string { return e.f.image + ":" + version }

// normalize turns an option name into its variable spelling: lower case,
// '_' for '-', without the "loose_" prefix the servers accept.
func normalize(key string) string {
	k := strings.ToLower(strings.TrimSpace(key))
	k = strings.ReplaceAll(k, "-", "_")
	return strings.TrimPrefix(k, "loose_")
}

// baseName strips the boolean prefixes of an option: skip_log_bin sets
// log_bin.
func baseName(k string) string {
	for _, p := range []string{"skip_", "disable_", "enable_"} {
		if strings.HasPrefix(k, p) {
			return strings.TrimPrefix(k, p)
		}
	}
	return k
}

// controlled are the options Steward sets itself: ports, paths, identity,
// replication and access.
var controlled = map[string]bool{
	"port": true, "bind_address": true, "socket": true, "datadir": true,
	"basedir": true, "pid_file": true, "user": true, "server_id": true,
	"log_bin": true, "log_bin_basename": true, "log_bin_index": true,
	"sql_log_bin": true, "relay_log": true, "relay_log_index": true,
	"relay_log_basename": true, "relay_log_info_file": true,
	"master_info_file": true, "read_only": true, "super_read_only": true,
	"networking": true, "skip_networking": true, "grant_tables": true,
	"skip_grant_tables": true, "init_file": true, "log_error": true,
	"slave_start": true, "replica_start": true, "skip_slave_start": true,
	"skip_replica_start": true, "enforce_gtid_consistency": true,
	"log_slave_updates": true, "log_replica_updates": true,
	"report_host": true, "report_port": true, "server_uuid": true,
	"defaults_file": true, "defaults_extra_file": true,
	"no_defaults": true, "plugin_dir": true, "socket_path": true,
	"admin_address": true, "admin_port": true, "mysqlx_port": true,
	"mysqlx_socket": true, "mysqlx_bind_address": true,
	"secure_file_priv": true, "tmpdir": true, "slave_net_timeout": true,
	"replica_net_timeout":  true,
	"innodb_data_home_dir": true, "innodb_log_group_home_dir": true,
	"innodb_undo_directory": true, "innodb_directories": true,
}

// controlledPrefixes are families of controlled options.
var controlledPrefixes = []string{"gtid_", "master_", "source_", "replicate_", "wsrep_", semiSyncPrefix}

// semiSyncPrefix names the semi-synchronous replication settings: Steward's,
// from synchronousReplicas, and changed at run time by Reload.
const semiSyncPrefix = "rpl_semi_sync_"

// Controlled reports whether Steward sets this option itself. Case and the
// spelling with '-' or '_' do not matter; "loose-" and the boolean prefixes
// "skip-", "disable-", "enable-" are seen through.
func (e *Engine) Controlled(key string) bool {
	k := normalize(key)
	for _, c := range []string{k, baseName(k)} {
		if controlled[c] {
			return true
		}
		for _, p := range controlledPrefixes {
			if strings.HasPrefix(c, p) {
				return true
			}
		}
	}
	return false
}

// static are the variables that cannot be changed while the server runs, or
// that Steward chooses to change only with a restart. innodb_buffer_pool_size
// is dynamic in both servers, but resizing runs in chunks while the server
// works and its value follows the memory limit, whose change restarts the pod
// anyway: Steward treats it as needing a restart.
var static = map[string]bool{
	"innodb_buffer_pool_size": true, "innodb_buffer_pool_instances": true,
	"innodb_buffer_pool_chunk_size": true, "innodb_log_file_size": true,
	"innodb_log_files_in_group": true, "innodb_log_buffer_size": true,
	"innodb_redo_log_capacity": true, "innodb_page_size": true,
	"innodb_data_file_path": true, "innodb_temp_data_file_path": true,
	"innodb_flush_method": true, "innodb_doublewrite": true,
	"innodb_read_io_threads": true, "innodb_write_io_threads": true,
	"innodb_purge_threads": true, "innodb_open_files": true,
	"innodb_autoinc_lock_mode": true, "innodb_undo_tablespaces": true,
	"innodb_use_native_aio": true, "innodb_numa_interleave": true,
	"innodb_force_recovery": true, "innodb_buffer_pool_load_at_startup": true,
	"innodb_sort_buffer_size": true, "innodb_ft_min_token_size": true,
	"innodb_ft_max_token_size": true, "innodb_rollback_on_timeout": true,
	"lower_case_table_names": true, "performance_schema": true,
	"name_resolve": true, "skip_name_resolve": true,
	"table_open_cache_instances": true, "thread_handling": true,
	"thread_stack": true, "back_log": true, "open_files_limit": true,
	"plugin_load": true, "plugin_load_add": true, "ft_min_word_len": true,
	"ft_max_word_len": true, "ft_stopword_file": true, "large_pages": true,
	"memlock": true, "default_authentication_plugin": true,
	"ssl_ca": true, "ssl_cert": true, "ssl_key": true, "ssl_cipher": true,
	"tls_version":                true,
	"aria_pagecache_buffer_size": true, "max_digest_length": true,
	"skip_external_locking": true, "external_locking": true, "lc_messages_dir": true,
	"character_sets_dir": true, "log_tc": true, "log_tc_size": true,
}

// NeedsRestart reports whether a change of the option takes effect only
// after a restart. Options of the performance_schema family all do.
func (e *Engine) NeedsRestart(key string) bool {
	k := normalize(key)
	if strings.HasPrefix(k, "performance_schema") {
		return true
	}
	return static[k] || static[baseName(k)]
}
