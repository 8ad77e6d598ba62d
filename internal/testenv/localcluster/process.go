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
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawner starts processes from one OS thread that lives as long as the
// cluster. Children get SIGKILL as their parent-death signal, and Linux sends
// it when the thread that forked them exits, not the process: starting them
// from a thread the Go runtime may retire (one locked by a goroutine that
// exits) would kill them early. The spawner's goroutine keeps its thread
// locked until close, after every child has been stopped.
type spawner struct {
	requests chan spawnRequest
}

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan<- error
}

func newSpawner() *spawner {
	s := &spawner{requests: make(chan spawnRequest)}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	// Never unlocked: the thread exits with the goroutine, so no other
	// goroutine ever runs on a thread whose exit signals children.
	runtime.LockOSThread()
	for req := range s.requests {
		req.result <- req.cmd.Start()
	}
}

// start starts cmd on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	result := make(chan error, 1)
	s.requests <- spawnRequest{cmd: cmd, result: result}
	return <-result
}

// close ends the spawner's goroutine and thread. Call it only once every
// process it started has exited.
func (s *spawner) close() {
	close(s.requests)
}

// process is one running component.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	// done is closed once the process has exited and been reaped; waitErr
	// then holds what Wait returned.
	done    chan struct{}
	waitErr error
}

// pid returns the process ID, which is also its process group ID.
func (p *process) pid() int {
	return p.cmd.Process.Pid
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an unexpected exit, with the end of the process's log.
func (p *process) exitError() error {
	err := errors.New("exited")
	if p.waitErr != nil {
		err = fmt.Errorf("exited: %w", p.waitErr)
	}
	return &componentError{
		component: p.name,
		err:       err,
		logTail:   tailFile(p.logPath),
	}
}

// signalGroup sends sig to the process's group; it does nothing once the
// process has been reaped, when its ID may belong to someone else.
func (p *process) signalGroup(sig syscall.Signal) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), sig)
}

// stopProcesses sends SIGTERM to every process group, waits up to grace for
// them to exit, then sends SIGKILL to the rest and waits for them to be reaped.
func stopProcesses(procs []*process, grace time.Duration) error {
	for _, p := range procs {
		p.signalGroup(syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
waiting:
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline.C:
			break waiting
		}
	}
	var errs []error
	for _, p := range procs {
		p.signalGroup(syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid()))
		}
	}
	return errors.Join(errs...)
}

// componentError is a component failing to start or stay up, with the end
// of its log (the log itself goes with the cluster's directory).
type componentError struct {
	component string
	err       error
	logTail   string
}

func (e *componentError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.component, e.err)
	if e.logTail != "" {
		msg += fmt.Sprintf("\n--- end of the %s log ---\n%s", e.component, e.logTail)
	}
	return msg
}

func (e *componentError) Unwrap() error { return e.err }

// portInUse reports whether the component failed because a port it was
// given was taken in the meantime.
func (e *componentError) portInUse() bool {
	return strings.Contains(e.logTail, "address already in use")
}

// tailFile returns the last lines of a log file, at most a few kilobytes.
func tailFile(path string) string {
	const maxBytes, maxLines = 8 << 10, 40
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	offset := max(info.Size()-maxBytes, 0)
	data := make([]byte, info.Size()-offset)
	n, _ := f.ReadAt(data, offset)
	data = data[:n]
	if offset > 0 {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// prefixWriter writes whole lines to a shared writer, each prefixed with the
// component's name. Partial lines wait for their end.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

func (pw *prefixWriter) Write(p []byte) (int, error) {
	pw.buf = append(pw.buf, p...)
	end := bytes.LastIndexByte(pw.buf, '\n')
	if end < 0 {
		return len(p), nil
	}
	var out bytes.Buffer
	for line := range bytes.Lines(pw.buf[:end+1]) {
		out.Write(pw.prefix)
		out.Write(line)
	}
	pw.buf = append(pw.buf[:0], pw.buf[end+1:]...)
	pw.mu.Lock()
	defer pw.mu.Unlock()
	// A failing shared log must not stop the component: the log file
	// still gets everything.
	_, _ = pw.w.Write(out.Bytes())
	return len(p), nil
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. Another process may take one before it is used; Start retries then.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Keep each listener open until all are chosen, so they differ.
		defer func() { _ = l.Close() }()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// LoadAverage describes the machine's load, for errors about slowness.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(fields[:3], " ")
}
