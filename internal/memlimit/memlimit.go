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

// Package memlimit gives the Go runtime a soft memory limit below the
// container's memory limit. The runtime reads the CPU quota of its cgroup
// (GOMAXPROCS) but not its memory limit: left alone, the garbage collector
// lets the heap grow to twice what is live, and a container whose live heap
// is above half its limit is killed for memory it could have collected.
package memlimit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's memory limit the Go runtime is
// asked to stay under; the rest is for what the runtime does not count
// (the binary's mapped text, the kernel's page tables and buffers).
const Share = 0.9

// unlimited is where cgroup v1 counts a limit as none: it writes the
// largest page-aligned int64 for "no limit".
const unlimited = 1 << 60

// Result says what Set did.
type Result struct {
	// Bytes is the soft limit set; 0 when none was.
	Bytes int64
	// Cgroup is the memory limit it was derived from, and File where it
	// was read.
	Cgroup int64
	File   string
	// FromEnv is set when GOMEMLIMIT was given, which Set leaves to the
	// runtime.
	FromEnv bool
}

// String says what Set did, for the operator's start-up log.
func (r Result) String() string {
	switch {
	case r.FromEnv:
		return "GOMEMLIMIT set in the environment"
	case r.Bytes == 0:
		return "no cgroup memory limit"
	default:
		return fmt.Sprintf("%d bytes, %.0f%% of the cgroup memory limit %d in %s", r.Bytes, Share*100, r.Cgroup, r.File)
	}
}

// Set gives the runtime a soft memory limit of Share of the tightest
// cgroup memory limit of this process, unless GOMEMLIMIT is set (even to
// "off") or there is no limit.
func Set() Result {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return Result{FromEnv: true}
	}
	limit, file := Cgroup("/", "/proc/self/cgroup")
	if limit == 0 {
		return Result{}
	}
	r := Result{Bytes: int64(float64(limit) * Share), Cgroup: limit, File: file}
	debug.SetMemoryLimit(r.Bytes)
	return r
}

// Cgroup returns the tightest memory limit over the cgroups of the process
// whose /proc/<pid>/cgroup is procCgroup, and the file it was read from; 0
// when there is none. root is the file system's root ("/" but in tests).
//
// A container usually sees its own cgroup at the root of the mount (a
// cgroup namespace in v2, runc's bind mount in v1); a process outside one
// sees its full path, and its limit may be set on any ancestor. Both v1's
// memory controller and the v2 hierarchy are read, each from the process's
// cgroup up to the mount's root.
func Cgroup(root, procCgroup string) (int64, string) {
	v1, v2 := "/", "/"
	if f, err := os.Open(filepath.Join(root, procCgroup)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// hierarchy-ID:controller-list:cgroup-path
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case hasController(parts[1], "memory"):
				v1 = parts[2]
			}
		}
		_ = f.Close()
	}
	var best int64
	var bestFile string
	consider := func(mount, path, name string) {
		for dir := filepath.Clean(path); ; dir = filepath.Dir(dir) {
			file := filepath.Join(root, mount, dir, name)
			if n := readLimit(file); n > 0 && (best == 0 || n < best) {
				best, bestFile = n, filepath.Join("/", mount, dir, name)
			}
			if dir == "/" || dir == "." {
				return
			}
		}
	}
	consider("sys/fs/cgroup", v2, "memory.max")
	consider("sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
	return best, bestFile
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit file: 0 for none, unreadable, "max"
// or v1's "unlimited".
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0
	}
	return n
}
