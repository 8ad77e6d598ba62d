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

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dirPattern names every cluster's temporary directory, for os.MkdirTemp and
// for finding the directories of crashed runs.
const dirPattern = "steward-cluster-*"

// Marker files in a cluster's directory that let a later Start clean up after
// a process that died without calling Stop.
const (
	// ownerFile holds "<pid> <start time>" of the Go process that made the
	// directory; the start time tells a live owner from a reused PID.
	ownerFile = "owner"
	// pidsFile holds one "<pid> <component>" line per started process.
	pidsFile = "pids"
)

// staleAge is how old a directory without an owner marker must be before it
// counts as abandoned rather than still being set up.
const staleAge = time.Minute

// writeOwner records the current process as the owner of dir. The marker
// appears whole, by a rename: a sweep running at the same time, in this
// process or another, must never read it empty.
func writeOwner(dir string) error {
	pid := os.Getpid()
	data := fmt.Sprintf("%d %s\n", pid, processStartTime(pid))
	if err := writeWhole(filepath.Join(dir, ownerFile), []byte(data)); err != nil {
		return fmt.Errorf("writing the owner marker: %w", err)
	}
	return nil
}

// writeWhole writes a file that a reader sees either absent or complete:
// the data goes to a hidden file beside it, renamed into place.
func writeWhole(path string, data []byte) error {
	part := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".part")
	if err := os.WriteFile(part, data, 0o600); err != nil {
		return err
	}
	return os.Rename(part, path)
}

// recordPID appends a started process to dir's pid list.
func recordPID(dir string, pid int, name string) error {
	f, err := os.OpenFile(filepath.Join(dir, pidsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening the pid list: %w", err)
	}
	_, err = fmt.Fprintf(f, "%d %s\n", pid, name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording pid %d: %w", pid, err)
	}
	return nil
}

// sweepStale removes the directories of clusters whose owning process is
// gone, first killing any of their recorded processes still running, and
// undoing what their real nodes did to the host. Errors are ignored: the
// sweep is best effort and directories of other users may be out of reach.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern))
	for _, dir := range dirs {
		if ownerAlive(dir) {
			continue
		}
		killRecorded(dir)
		if _, err := os.Stat(filepath.Join(dir, realMarker)); err == nil {
			sweepRealNodes(dir, clusterID(dir))
		}
		_ = os.RemoveAll(dir)
	}
	if os.Geteuid() == 0 {
		sweepRealClusters()
	}
}

// ownerAlive reports whether the process that made dir may still be using it.
func ownerAlive(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	fields := strings.Fields(string(data))
	if err != nil || len(fields) == 0 {
		// No marker yet, or one an older version was still writing: the
		// directory may be one a Start is creating.
		info, statErr := os.Stat(dir)
		return statErr != nil || time.Since(info.ModTime()) < staleAge
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || !pidAlive(pid) {
		return false
	}
	if len(fields) > 1 && fields[1] != processStartTime(pid) {
		return false // the PID now belongs to another process
	}
	return true
}

// killRecorded sends SIGKILL to the processes recorded in dir that are still
// running, and to their process groups, then waits briefly for them to go.
// A process counts as recorded only if its command line mentions a path in
// dir, so a reused PID is left alone.
func killRecorded(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, pidsFile))
	if err != nil {
		return
	}
	var killed []int
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 1 || !pidAlive(pid) {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), dir+string(filepath.Separator)) {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = append(killed, pid)
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range killed {
		for pidAlive(pid) && !isZombie(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// pidAlive reports whether a process with this ID exists.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// procStat returns the fields of /proc/<pid>/stat after the command name,
// so that index 0 is field 3 (state) of proc(5).
func procStat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// processStartTime returns the start time of a process in clock ticks since
// boot (field 22 of /proc/<pid>/stat), or "" when unknown.
func processStartTime(pid int) string {
	fields := procStat(pid)
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// isZombie reports whether a process has exited but not yet been reaped.
func isZombie(pid int) bool {
	fields := procStat(pid)
	return len(fields) > 0 && fields[0] == "Z"
}
