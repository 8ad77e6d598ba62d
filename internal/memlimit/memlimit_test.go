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

package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestCgroup(t *testing.T) {
	const v1Unlimited = "9223372036854771712\n"
	for _, tc := range []struct {
		name     string
		self     string            // /proc/self/cgroup
		files    map[string]string // under /sys/fs/cgroup
		want     int64
		wantFile string
	}{{
		name:     "v2 in a cgroup namespace",
		self:     "0::/\n",
		files:    map[string]string{"memory.max": "536870912\n"},
		want:     536870912,
		wantFile: "/sys/fs/cgroup/memory.max",
	}, {
		name:  "v2 without a limit",
		self:  "0::/\n",
		files: map[string]string{"memory.max": "max\n"},
	}, {
		name: "v2 outside a namespace: the limit is on an ancestor",
		self: "0::/kubepods/burstable/pod1/c1\n",
		files: map[string]string{
			"kubepods/burstable/pod1/c1/memory.max": "max\n",
			"kubepods/burstable/pod1/memory.max":    "1073741824\n",
			"memory.max":                            "max\n",
		},
		want:     1073741824,
		wantFile: "/sys/fs/cgroup/kubepods/burstable/pod1/memory.max",
	}, {
		// runc mounts the container's own v1 cgroup at the root; the path
		// in /proc/self/cgroup is the host's and does not exist inside.
		name: "v1 in a container",
		self: "12:pids:/kubepods/pod1/c1\n4:memory:/kubepods/pod1/c1\n0::/\n",
		files: map[string]string{
			"memory/memory.limit_in_bytes": "536870912\n",
		},
		want:     536870912,
		wantFile: "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name: "v1 on a host without a limit",
		self: "4:memory:/process_api/abc\n0::/\n",
		files: map[string]string{
			"memory/process_api/abc/memory.limit_in_bytes": v1Unlimited,
			"memory/memory.limit_in_bytes":                 v1Unlimited,
		},
	}, {
		name: "the tighter of both hierarchies and all ancestors",
		self: "3:cpu,memory:/a/b\n0::/a/b\n",
		files: map[string]string{
			"memory/a/b/memory.limit_in_bytes": "800000000\n",
			"memory/a/memory.limit_in_bytes":   "600000000\n",
			"a/b/memory.max":                   "700000000\n",
		},
		want:     600000000,
		wantFile: "/sys/fs/cgroup/memory/a/memory.limit_in_bytes",
	}, {
		name: "nothing to read",
		self: "",
	}, {
		name:  "garbage",
		self:  "0::/\n",
		files: map[string]string{"memory.max": "lots\n"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(rel, content string) {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("proc/self/cgroup", tc.self)
			for rel, content := range tc.files {
				write(filepath.Join("sys/fs/cgroup", rel), content)
			}
			got, file := Cgroup(root, "/proc/self/cgroup")
			if got != tc.want || file != tc.wantFile {
				t.Errorf("Cgroup = %d from %q, want %d from %q", got, file, tc.want, tc.wantFile)
			}
		})
	}
}

func TestSetLeavesAGivenGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "off")
	before := debug.SetMemoryLimit(-1)
	if r := Set(); !r.FromEnv || r.Bytes != 0 {
		t.Errorf("Set = %+v, want it to leave GOMEMLIMIT to the runtime", r)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("the runtime's limit changed from %d to %d", before, after)
	}
}
