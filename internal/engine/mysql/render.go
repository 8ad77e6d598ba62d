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
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/steward-dev/steward/internal/engine"
)

// ConfigFile is the one file Render produces; the server reads it with
// --defaults-file.
const ConfigFile = "my.cnf"

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
	// poolChunk is innodb_buffer_pool_chunk_size's default; the servers
	// round the pool up to a multiple of chunk × instances.
	poolChunk = 128 * mib
)

// BufferPool returns innodb_buffer_pool_size and innodb_buffer_pool_instances
// for a memory limit:
//
//	size      = 50% of memory below 4 GiB, 75% from 4 GiB on,
//	            rounded down to a multiple of 128 MiB × instances,
//	            at least 128 MiB; 128 MiB when the memory is unknown (0)
//	instances = size / 1 GiB, between 1 and 8
//
// so 512Mi gives 256 MiB, 1Gi 512 MiB, 2Gi 1 GiB, 8Gi 6 GiB (6 instances).
// The rounding keeps the server from rounding up past the share chosen.
// MariaDB has a single buffer pool since 10.5 and is given no instances.
func BufferPool(memoryBytes int64) (size int64, instances int) {
	if memoryBytes <= 0 {
		return poolChunk, 1
	}
	size = memoryBytes / 2
	if memoryBytes >= 4*gib {
		size = memoryBytes / 4 * 3
	}
	instances = int(min(max(size/gib, 1), 8))
	unit := poolChunk * int64(instances)
	size = size / unit * unit
	if size < poolChunk {
		size = poolChunk
	}
	return size, instances
}

// MaxConnections returns max_connections for a memory limit:
//
//	max_connections = memory / 8 MiB, between 50 and 4000;
//	151 (the servers' default) when the memory is unknown (0)
//
// so 512Mi gives 64, 1Gi 128, 2Gi 256.
func MaxConnections(memoryBytes int64) int {
	if memoryBytes <= 0 {
		return 151
	}
	return int(min(max(memoryBytes/(8*mib), 50), 4000))
}

// semiSyncTimeout, in milliseconds, is how long a commit waits for a
// replica before the primary goes on asynchronously until a replica has
// caught up again. Forever would deadlock a replica being cloned behind a
// schema change that waits for a replica.
const semiSyncTimeout = "60000"

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Render returns my.cnf with one [mysqld] section: tuned settings from the
// memory limit, binary logging in row format, utf8mb4, the port, then the
// user's parameters, which win. Paths, the server id, read-only mode and the
// replication settings are not in it: Start passes them from Config.
func (e *Engine) Render(t engine.Tuning) (map[string]string, error) {
	pool, instances := BufferPool(t.MemoryBytes)
	params := map[string]string{
		"innodb_buffer_pool_size": strconv.FormatInt(pool, 10),
		"max_connections":         strconv.Itoa(MaxConnections(t.MemoryBytes)),
		"log_bin":                 "binlog",
		"binlog_format":           "ROW",
		// Seven days of binary logs, enough for a replica being cloned.
		"binlog_expire_logs_seconds": "604800",
		"character_set_server":       "utf8mb4",
		// Client addresses in Kubernetes have no useful names.
		"skip_name_resolve": "ON",
	}
	if e.f.gtid && t.SynchronousReplicas > 0 {
		// Semi-synchronous replication: a commit is acknowledged once a
		// replica has it (AFTER_SYNC: before other sessions see it), and
		// waits for one up to semiSyncTimeout.
		params["rpl_semi_sync_master_enabled"] = "ON"
		params["rpl_semi_sync_slave_enabled"] = "ON"
		params["rpl_semi_sync_master_wait_point"] = "AFTER_SYNC"
		params["rpl_semi_sync_master_timeout"] = semiSyncTimeout
	}
	if e.f.bufferPoolInstances {
		params["innodb_buffer_pool_instances"] = strconv.Itoa(instances)
	}
	if t.Port != 0 {
		params["port"] = strconv.Itoa(t.Port)
	}
	// In key order, so that the same parameters always render the same,
	// or fail on the same key; two keys of one variable (max-connections
	// and max_connections) are refused, as either value would be an
	// arbitrary choice.
	given := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(t.Parameters)) {
		v := t.Parameters[k]
		if !keyPattern.MatchString(k) {
			return nil, fmt.Errorf("invalid parameter name %q", k)
		}
		if e.Controlled(k) {
			return nil, fmt.Errorf("parameter %q is set by Steward", k)
		}
		if strings.ContainsAny(v, "\n\r\x00") {
			return nil, fmt.Errorf("parameter %q: the value must be one line", k)
		}
		n := normalize(k)
		if other, ok := given[n]; ok {
			return nil, fmt.Errorf("parameters %q and %q both set %s: keep one", other, k, n)
		}
		given[n] = k
		params[n] = strings.TrimSpace(v)
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Rendered by Steward; the server's paths, identity and replication\n# settings are given on its command line.\n[mysqld]\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, params[k])
	}
	return map[string]string{ConfigFile: b.String()}, nil
}

// parseConfig reads the [mysqld] section of an option file: normalised names
// to values, with quotes removed.
func parseConfig(text string) map[string]string {
	out := map[string]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.ToLower(strings.TrimSpace(line[1 : len(line)-1]))
			continue
		}
		if section != "mysqld" && section != "server" && section != "mariadb" && section != "mariadbd" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			v = "ON"
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[normalize(k)] = v
	}
	return out
}
