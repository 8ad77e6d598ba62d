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

package localcluster

// What real nodes change on the host, outside the cluster's directory, and
// how Stop and the sweep of crashed clusters undo it: cgroups, mounts,
// processes that left their process group, host-wide sysctls, and the
// sockets containerd keeps in /run/containerd.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupPrefix starts the name of every cgroup, network namespace and CNI
// network of the cluster with the given ID.
func cgroupPrefix(id string) string { return "steward-" + id + "-" }

// cgroupMounts returns the mount points of the cgroup hierarchies: one per
// v1 hierarchy, and the v2 one.
func cgroupMounts() ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			dirs = append(dirs, m.point)
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	return dirs, nil
}

// nodeCPUShares is the CPU weight of a real node's cgroup, in v1 shares
// (cgroup v2: nodeCPUShares/1024*100). Every process outside a cgroup of
// its own (the test binaries, the compilers of the other packages' tests)
// weighs 1024 on its own, so at the default of 1024 a node's pods together
// weighed as much as one busy compiler, and on a loaded machine they got a
// small part of a core: servers that answer their clients in seconds,
// status reads and lease renewals that time out. A node of its own would
// not share its CPUs with them; this weight lets its pods take what they
// need first, and nothing when they are idle.
const nodeCPUShares = 8192

// makeCgroup creates the cgroup name at the top of every hierarchy, ready
// for the kubelet to use as its cgroupRoot, with a CPU weight of
// nodeCPUShares. In a v1 cpuset hierarchy a new cgroup has no CPUs or
// memory nodes until given its parent's.
func makeCgroup(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(m, file))
			if err != nil {
				continue // not a v1 cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				return fmt.Errorf("setting %s of cgroup %s: %w", file, dir, err)
			}
		}
		for file, value := range map[string]int{"cpu.shares": nodeCPUShares, "cpu.weight": nodeCPUShares * 100 / 1024} {
			if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
				continue // not a hierarchy with the cpu controller
			}
			if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(value)), 0o644); err != nil {
				return fmt.Errorf("setting %s of cgroup %s: %w", file, dir, err)
			}
		}
	}
	return nil
}

// killCgroup sends SIGKILL to every process in the cgroup name and below,
// in every hierarchy, until none is left.
func killCgroup(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pids []int
		for _, m := range mounts {
			pids = append(pids, cgroupPIDs(filepath.Join(m, name))...)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v in cgroup %s survived SIGKILL", pids, name)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupPIDs lists the live processes in dir and its descendants.
func cgroupPIDs(dir string) []int {
	var pids []int
	// Errors are skipped: cgroups come and go while the walk runs.
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil || !d.IsDir() {
			return nil //nolint:nilerr // a cgroup removed during the walk
		}
		data, readErr := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if readErr != nil {
			return nil //nolint:nilerr // likewise
		}
		for field := range strings.FieldsSeq(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil && pid > 1 && !isZombie(pid) {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroup removes the cgroup name and its descendants, deepest first,
// from every hierarchy. Its processes must be gone.
func removeCgroup(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		root := filepath.Join(m, name)
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs) // children after their parents in a walk
		for _, dir := range dirs {
			if err := rmdirRetry(dir); err != nil {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup, retrying for a moment while the
// kernel finishes tearing down its last processes.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// strayCgroups returns the names of the top-level cgroups that start with
// prefix, in any hierarchy.
func strayCgroups(prefix string) []string {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil
	}
	var names []string
	for _, m := range mounts {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point  string
	fstype string
}

// readMounts parses /proc/self/mountinfo.
func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var mounts []mount
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for scanner.Scan() {
		// ID parent major:minor root point options [optional...] - fstype source super
		fields := strings.Fields(scanner.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		mounts = append(mounts, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	return mounts, scanner.Err()
}

// unescapeMount decodes the octal escapes (\040 for a space) of
// mountinfo's paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+string(filepath.Separator)) {
			points = append(points, m.point)
		}
	}
	// Later mounts may stack on earlier ones: undo them in reverse order,
	// and children before parents.
	slices.Reverse(points)
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	return points, nil
}

// unmountUnder detaches every mount at or below dir.
func unmountUnder(dir string) error {
	for range 5 {
		points, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	points, _ := mountsUnder(dir)
	if len(points) > 0 {
		return fmt.Errorf("still mounted after unmounting: %s", strings.Join(points, ", "))
	}
	return nil
}

// killMentioning sends SIGKILL to every process whose command line
// contains s, and waits briefly for them to go. Real nodes use it for
// containerd's shims, which leave containerd's process group.
func killMentioning(s string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = append(killed, pid)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for pidAlive(pid) && !isZombie(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// containerdRunDir is where containerd 1.6 keeps its shims' sockets,
// whatever its state directory.
const containerdRunDir = "/run/containerd"

// removeStaleShimSockets removes the sockets in /run/containerd/s that no
// process listens on any more, then the directories left empty. A socket
// something still listens on (another containerd's shim) stays. A shim
// binds its socket a moment before it listens, and another cluster's
// containerd may be starting one: a socket counts as stale only when
// nothing listened on it at two looks a moment apart.
func removeStaleShimSockets() {
	dir := filepath.Join(containerdRunDir, "s")
	entries, err := os.ReadDir(dir)
	if err == nil {
		listening := listeningUnixSockets()
		var stale []string
		for _, e := range entries {
			if path := filepath.Join(dir, e.Name()); !listening[path] {
				stale = append(stale, path)
			}
		}
		if len(stale) > 0 {
			time.Sleep(200 * time.Millisecond)
			listening = listeningUnixSockets()
		}
		for _, path := range stale {
			if !listening[path] {
				_ = os.Remove(path)
			}
		}
	}
	// Only when empty.
	_ = os.Remove(dir)
	_ = os.Remove(filepath.Join(containerdRunDir, "runc"))
	_ = os.Remove(containerdRunDir)
}

// listeningUnixSockets returns the paths of the Unix sockets some process
// of this network namespace or of a named one listens on. Sockets are
// listed per network namespace: a shim's socket lives in its containerd's
// namespace.
func listeningUnixSockets() map[string]bool {
	found := listeningUnixSocketsIn("*")
	for path := range readUnixSockets("/proc/net/unix") {
		found[path] = true
	}
	return found
}

// listeningUnixSocketsIn returns the paths of the Unix sockets some
// process listens on in the named network namespaces matching glob.
func listeningUnixSocketsIn(glob string) map[string]bool {
	found := map[string]bool{}
	names, _ := filepath.Glob(filepath.Join(netnsDir, glob))
	for _, ns := range names {
		_ = inNetns(ns, func() error {
			for path := range readUnixSockets("/proc/thread-self/net/unix") {
				found[path] = true
			}
			return nil
		})
	}
	return found
}

// readUnixSockets returns the bound paths of listening sockets in a
// /proc/net/unix table.
func readUnixSockets(table string) map[string]bool {
	data, err := os.ReadFile(table)
	if err != nil {
		return nil
	}
	const listening = "00010000" // __SO_ACCEPTCON
	found := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) >= 8 && fields[3] == listening {
			found[fields[7]] = true
		}
	}
	return found
}

// The host-wide sysctls the kubelet sets at start. The first real node of
// any cluster on the host records their values, and the last one to stop
// puts them back.
var kubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// hostStateDir holds what real nodes share across clusters on this host:
// the recorded sysctls, and the lock that serialises changes to them.
const hostStateDir = "/run/steward-localcluster"

// withHostLock runs fn holding an exclusive lock on hostStateDir.
func withHostLock(fn func() error) error {
	if err := os.MkdirAll(hostStateDir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(hostStateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }()
	return fn()
}

// sysctlRecord is the file with the sysctls' values from before any
// kubelet ran.
func sysctlRecord() string { return filepath.Join(hostStateDir, "sysctls") }

// recordSysctls saves the kubelet's sysctls unless they are saved already
// (another cluster's kubelet may have changed them since).
func recordSysctls() error {
	return withHostLock(func() error {
		if _, err := os.Stat(sysctlRecord()); err == nil {
			return nil
		}
		var b strings.Builder
		for _, name := range kubeletSysctls {
			value, err := os.ReadFile(filepath.Join("/proc/sys", name))
			if err != nil {
				continue // not in this kernel
			}
			fmt.Fprintf(&b, "%s %s\n", name, strings.TrimSpace(string(value)))
		}
		return os.WriteFile(sysctlRecord(), []byte(b.String()), 0o600)
	})
}

// restoreSysctls puts the recorded sysctls back unless a real cluster
// other than the one with ID except still runs, and then forgets them.
func restoreSysctls(except string) error {
	return withHostLock(func() error {
		for id, dir := range realClusters() {
			if id != except && clusterAlive(dir) {
				return nil
			}
		}
		data, err := os.ReadFile(sysctlRecord())
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		var errs []error
		for line := range strings.Lines(string(data)) {
			name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
			if !ok || !slices.Contains(kubeletSysctls, name) {
				continue
			}
			if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restoring sysctl %s: %w", name, err))
			}
		}
		if len(errs) == 0 {
			errs = append(errs, os.Remove(sysctlRecord()))
		}
		return errors.Join(errs...)
	})
}

// realMarker, in a cluster's directory, says the cluster has real nodes
// and holds its ID.
const realMarker = "real-nodes"

// registryDir has a file per cluster with real nodes, named by its ID and
// holding its directory, so that what real nodes leave on the host is
// found whatever temporary directory their cluster used.
func registryDir() string { return filepath.Join(hostStateDir, "clusters") }

// registerRealCluster records a cluster with real nodes on the host.
func registerRealCluster(id, dir string) error {
	if err := os.MkdirAll(registryDir(), 0o700); err != nil {
		return err
	}
	// Whole, or a sweep reading it mid-write would take the cluster for
	// an unregistered one and undo its network.
	return writeWhole(filepath.Join(registryDir(), id), []byte(dir))
}

// unregisterRealCluster forgets a cluster once nothing of it is left.
func unregisterRealCluster(id string) {
	_ = os.Remove(filepath.Join(registryDir(), id))
}

// realClusters maps the ID of every registered cluster with real nodes to
// its directory.
func realClusters() map[string]string {
	clusters := map[string]string{}
	entries, _ := os.ReadDir(registryDir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // being written
		}
		if data, err := os.ReadFile(filepath.Join(registryDir(), e.Name())); err == nil {
			clusters[e.Name()] = string(data)
		}
	}
	return clusters
}

// clusterAlive reports whether a cluster's directory exists and its owner
// may still be using it.
func clusterAlive(dir string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	return ownerAlive(dir)
}

// sweepRealNodes undoes what the real nodes of a crashed cluster left on
// the host: processes, the pods' processes and cgroups, mounts, network
// namespaces, CNI cache entries, containerd's sockets and the sysctls. dir
// may be gone already.
func sweepRealNodes(dir, id string) {
	if dir != "" {
		killRecorded(dir)
		killMentioning(dir + string(filepath.Separator))
	}
	prefix := cgroupPrefix(id)
	for _, name := range strayCgroups(prefix) {
		_ = killCgroup(name)
	}
	if dir != "" {
		_ = unmountUnder(dir)
	}
	for _, name := range strayCgroups(prefix) {
		_ = removeCgroup(name)
	}
	deleteNetnsWithPrefix("steward-" + id)
	removeCNICache(prefix)
	removeStaleShimSockets()
	_ = restoreSysctls(id)
	unregisterRealCluster(id)
}

// sweepRealClusters sweeps every cluster with real nodes whose owner is
// gone, wherever its directory is, and the cgroups and network namespaces
// of clusters nobody registered any more (a crash in the middle of a
// Stop).
func sweepRealClusters() {
	clusters := realClusters()
	ids := map[string]bool{}
	for id := range clusters {
		ids[id] = true
	}
	idOf := func(name string) string {
		rest, _ := strings.CutPrefix(name, "steward-")
		id, _, _ := strings.Cut(rest, "-")
		return id
	}
	for _, name := range strayCgroups("steward-") {
		ids[idOf(name)] = true
	}
	names, _ := filepath.Glob(filepath.Join(netnsDir, "steward-*"))
	for _, path := range names {
		ids[idOf(filepath.Base(path))] = true
	}
	for id := range ids {
		if id == "" {
			continue
		}
		dir, registered := clusters[id]
		if registered && clusterAlive(dir) {
			continue
		}
		if _, err := os.Stat(dir); !registered || err != nil {
			dir = ""
		}
		sweepRealNodes(dir, id)
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// deleteNetnsWithPrefix deletes the network namespaces netnsWithPrefix
// finds.
func deleteNetnsWithPrefix(prefix string) {
	for _, name := range netnsWithPrefix(prefix) {
		_ = deleteNetns(name)
	}
}

// netnsWithPrefix lists the network namespaces whose name is prefix or
// starts with prefix + "-": those of one cluster, and not those of a
// cluster whose id merely starts with the same characters.
func netnsWithPrefix(prefix string) []string {
	paths, _ := filepath.Glob(filepath.Join(netnsDir, prefix+"*"))
	var names []string
	for _, path := range paths {
		name := filepath.Base(path)
		if name == prefix || strings.HasPrefix(name, prefix+"-") {
			names = append(names, name)
		}
	}
	return names
}

// cniCacheDir is where the CNI library caches each attachment's result.
const cniCacheDir = "/var/lib/cni"

// removeCNICache removes the CNI library's cached results of networks
// whose names start with prefix: each node's network is named after its
// cluster.
func removeCNICache(prefix string) {
	for _, sub := range []string{"results", "resources"} {
		matches, _ := filepath.Glob(filepath.Join(cniCacheDir, sub, prefix+"*"))
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
}
