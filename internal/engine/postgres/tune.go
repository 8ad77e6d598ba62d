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

import "strconv"

const (
	kiB = int64(1) << 10
	miB = int64(1) << 20
	giB = int64(1) << 30
)

// TuneFor returns the settings derived from the container's memory limit in
// bytes; zero or less means unknown and returns none (the server's defaults).
// The formula, with M the memory limit:
//
//	max_connections      = 100 for M ≤ 1Gi, 200 for M ≤ 4Gi, 300 above
//	shared_buffers       = M / 4          (rounded down to 8kB pages)
//	effective_cache_size = M × 3 / 4      (rounded down to 8kB pages)
//	maintenance_work_mem = M / 20, at most 2GB (rounded down to kB)
//	work_mem             = M / (4 × max_connections), at least 64kB
//	wal_keep_size        = 256MB
//
// Shared buffers take a quarter of the memory, the rest is left to the
// operating system's page cache, which effective_cache_size tells the
// planner about. work_mem is used per sort or hash, possibly several times
// per query, so a quarter of the memory spread over all connections leaves
// room. wal_keep_size keeps enough WAL on the primary for a replica that
// falls behind briefly (replicas use no replication slots).
//
// The presets give:
//
//	preset  memory  max_connections  shared_buffers  effective_cache_size  maintenance_work_mem  work_mem
//	small   512Mi   100              128MB           384MB                 26214kB               1310kB
//	medium  1Gi     100              256MB           768MB                 52428kB               2621kB
//	large   2Gi     200              512MB           1536MB                104857kB              2621kB
//
// Values are written in the largest unit (kB, MB, GB, TB) that divides them,
// as PostgreSQL's SHOW prints them.
func TuneFor(memoryBytes int64) map[string]string {
	if memoryBytes <= 0 {
		return map[string]string{}
	}
	m := memoryBytes
	var conns int64
	switch {
	case m <= giB:
		conns = 100
	case m <= 4*giB:
		conns = 200
	default:
		conns = 300
	}
	page := 8 * kiB
	maint := min(m/20, 2*giB)
	work := max(m/(4*conns), 64*kiB)
	return map[string]string{
		"max_connections":      strconv.FormatInt(conns, 10),
		"shared_buffers":       memory(m / 4 / page * page),
		"effective_cache_size": memory(m * 3 / 4 / page * page),
		"maintenance_work_mem": memory(max(maint, miB)),
		"work_mem":             memory(work),
		"wal_keep_size":        "256MB",
	}
}

// memory writes bytes, rounded down to kB, in the largest unit that divides
// the value.
func memory(bytes int64) string {
	kb := bytes / kiB
	units := []string{"kB", "MB", "GB", "TB"}
	i := 0
	for i < len(units)-1 && kb != 0 && kb%1024 == 0 {
		kb /= 1024
		i++
	}
	return strconv.FormatInt(kb, 10) + units[i]
}
