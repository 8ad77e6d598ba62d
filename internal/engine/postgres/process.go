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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// start runs postgres with args as a child process and waits until it
// accepts connections on its socket.
func (e *Engine) start(ctx context.Context, cfg engine.Config, args []string) (*server, error) {
	cmd, err := e.command(cfg, nil, "postgres", args...)
	if err != nil {
		return nil, err
	}
	fatal := &serverLog{w: e.output()}
	cmd.Stdout = fatal
	cmd.Stderr = fatal
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	s := &server{cfg: cfg, cmd: cmd, done: make(chan struct{}), log: fatal}
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("postgres exited: %w", err)
		}
		s.mu.Unlock()
		close(s.done)
	}()
	var last error
	for {
		select {
		case <-s.done:
			// The server's own reason, not the connection attempts
			// that found it gone: it ends the error, which ends the
			// instance's log and so the pod's termination message.
			if why := fatal.last(); why != "" {
				return nil, fmt.Errorf("%w: %s", s.exitErr(), why)
			}
			return nil, s.exitErr()
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = s.Stop(sctx)
			cancel()
			if last == nil {
				return nil, fmt.Errorf("waiting for postgres to accept connections: %w", ctx.Err())
			}
			return nil, fmt.Errorf("waiting for postgres to accept connections: %w (last attempt: %w)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
		c, err := s.connect(ctx, 2*time.Second)
		if err == nil {
			_ = c.Close(context.Background())
			return s, nil
		}
		last = err
	}
}

// serverLog passes a server's output on and keeps what Steward reports of
// it: the last FATAL or PANIC message, the reason a server that exits at
// start gives; and the postmaster's reason for each setting of the
// configuration files it refused at its last reload.
type serverLog struct {
	w io.Writer

	mu      sync.Mutex
	partial []byte
	fatal   string
	// refusals are the postmaster's messages about settings since the
	// last forgetRefusals, by the setting's name in lower case; detailOf
	// names the setting whose message a DETAIL line may follow.
	refusals map[string]string
	detailOf string
}

// maxLogLine bounds the part of a line serverLog holds while it waits for
// the line's end.
const maxLogLine = 4096

func (f *serverLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		f.keep(string(f.partial[:i]))
		f.partial = f.partial[i+1:]
	}
	if len(f.partial) > maxLogLine {
		f.partial = f.partial[len(f.partial)-maxLogLine:]
	}
	f.mu.Unlock()
	return f.w.Write(p)
}

// keep records line when it is a FATAL or PANIC message, except the
// refusals of connections that come while the server starts or stops
// ("the database system is starting up"): Start's own attempts cause
// them, and they are no reason for an exit.
func (f *serverLog) keep(line string) {
	f.keepRefusal(line)
	for _, level := range []string{"FATAL:", "PANIC:"} {
		if i := strings.Index(line, level); i >= 0 {
			msg := strings.Join(strings.Fields(line[i:]), " ")
			if !strings.HasPrefix(msg, level+" the database system is ") {
				f.fatal = msg
			}
			return
		}
	}
}

// keepRefusal records a LOG message that names a setting (`invalid value
// for parameter "log_timezone": "Mars/Olympus"`, `parameter "x" requires a
// Boolean value`), with the DETAIL line that follows it, if any: the
// postmaster's words for a value of the configuration files it refused at a
// reload. The report of a change ("parameter "x" changed to ...") is not
// one.
func (f *serverLog) keepRefusal(line string) {
	if f.detailOf != "" {
		if i := strings.Index(line, "DETAIL:"); i >= 0 {
			f.refusals[f.detailOf] += " (" + strings.Join(strings.Fields(line[i+len("DETAIL:"):]), " ") + ")"
		}
		f.detailOf = ""
	}
	i := strings.Index(line, "LOG:")
	if i < 0 {
		return
	}
	msg := strings.Join(strings.Fields(line[i+len("LOG:"):]), " ")
	_, rest, ok := strings.Cut(msg, `parameter "`)
	if !ok || strings.Contains(msg, `" changed to "`) {
		return
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok || name == "" {
		return
	}
	if f.refusals == nil {
		f.refusals = map[string]string{}
	}
	key := strings.ToLower(name)
	f.refusals[key] = msg
	f.detailOf = key
}

// forgetRefusals drops the refusals recorded so far: a reload starts. A
// nil serverLog has none.
func (f *serverLog) forgetRefusals() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals, f.detailOf = nil, ""
}

// refusal is the postmaster's message about the setting name since the
// last forgetRefusals, or "".
func (f *serverLog) refusal(name string) string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refusals[strings.ToLower(name)]
}

// last is the last FATAL or PANIC message, or "".
func (f *serverLog) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fatal == "" {
		f.keep(string(f.partial))
	}
	return f.fatal
}

// command builds the command for one of the PostgreSQL programs: found in
// BinDir or $PATH, run as RunAsUID/GID when set, with the environment of
// this process minus Steward's variables (which hold passwords) and the
// libpq variables, plus extraEnv.
func (e *Engine) command(cfg engine.Config, extraEnv []string, name string, args ...string) (*exec.Cmd, error) {
	var path string
	if cfg.BinDir != "" {
		path = filepath.Join(cfg.BinDir, name)
	} else {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, err
		}
		path = p
	}
	cmd := exec.Command(path, args...)
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "STEWARD_") || strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, extraEnv...)
	cmd.Env = env
	cmd.Dir = "/"
	if cfg.RunAsUID != 0 && uint32(os.Geteuid()) != cfg.RunAsUID {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: cfg.RunAsUID, Gid: cfg.RunAsGID, NoSetGroups: os.Geteuid() != 0,
		}}
		// Not root's home: the tools need none, and root's is not theirs.
		cmd.Env = append(cmd.Env, "HOME=/")
	}
	return cmd, nil
}

// runTool runs a tool to completion; its output goes to the engine's output
// and, on failure, its tail into the error.
func (e *Engine) runTool(ctx context.Context, cfg engine.Config, extraEnv []string, name string, args ...string) error {
	cmd, err := e.command(cfg, extraEnv, name, args...)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	select {
	case err = <-waitDone:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-waitDone:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err = <-waitDone
		}
		if err == nil {
			err = ctx.Err()
		}
	}
	out := buf.Bytes()
	_, _ = e.output().Write(out)
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if len(tail) > 2000 {
			tail = "..." + tail[len(tail)-2000:]
		}
		return fmt.Errorf("%s: %w: %s", name, err, tail)
	}
	return nil
}

// server is a running postgres.
type server struct {
	cfg  engine.Config
	cmd  *exec.Cmd
	done chan struct{}

	// log is the server's output, on its way to the pod's log.
	log *serverLog

	mu  sync.Mutex
	err error
	// refused is what the last reload refused.
	refused []engine.RefusedSetting
}

var _ engine.Server = (*server)(nil)

func (s *server) Done() <-chan struct{} { return s.done }

// primaryHost is the primary the server replicates from; empty on a
// primary, and once promoted.
func (s *server) primaryHost() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.PrimaryHost
}

func (s *server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *server) exitErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return errors.New("postgres exited")
}

// Stop asks for a fast shutdown (SIGINT) and waits; when ctx ends first it
// kills the server.
func (s *server) Stop(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		return s.Err()
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("postgres did not stop in time and was killed: %w", ctx.Err())
	}
}
