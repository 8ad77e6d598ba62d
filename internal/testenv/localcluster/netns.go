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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` makes the bind mounts that keep named
// network namespaces alive.
const netnsDir = "/run/netns"

// netnsPath returns the path of a named network namespace.
func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// addNetns creates a named network namespace with its loopback up and
// nothing else: no interface leads out of it, so no route does either.
func addNetns(ctx context.Context, name string) error {
	if err := run(ctx, "ip", "netns", "add", name); err != nil {
		return fmt.Errorf("creating network namespace %s: %w", name, err)
	}
	if err := run(ctx, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("bringing up the loopback of network namespace %s: %w", name, err)
	}
	return nil
}

// deleteNetns removes a named network namespace, and with it every
// interface in it (a veth pair goes when either end's namespace goes). A
// namespace that does not exist is no error.
func deleteNetns(name string) error {
	if _, err := os.Stat(netnsPath(name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := run(context.Background(), "ip", "netns", "delete", name); err != nil {
		// The mount may be gone while the file stays (a crash between the
		// two): remove what is left.
		_ = unix.Unmount(netnsPath(name), unix.MNT_DETACH)
		if rmErr := os.Remove(netnsPath(name)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			return fmt.Errorf("deleting network namespace %s: %w", name, err)
		}
	}
	return nil
}

// nsCommand returns a command that runs name in the network namespace ns,
// or in the caller's when ns is empty. nsenter switches only the network
// namespace (`ip netns exec` would remount /sys and hide the cgroup
// hierarchies) and then executes name itself, so the command's PID is the
// program's.
func nsCommand(ns, name string, args ...string) *exec.Cmd {
	if ns == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("nsenter", append([]string{"--net=" + netnsPath(ns), "--", name}, args...)...)
}

// run runs a short command and returns an error with its output when it
// fails.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs fn on an OS thread switched into the network namespace at
// path. Sockets fn creates stay in that namespace after the thread switches
// back. When the thread cannot switch back, it is never unlocked and so dies
// with its goroutine, rather than run other goroutines in the wrong
// namespace.
func inNetns(path string, fn func() error) error {
	result := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			result <- fmt.Errorf("opening this thread's network namespace: %w", err)
			return
		}
		defer func() { _ = own.Close() }()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			result <- fmt.Errorf("opening network namespace %s: %w", path, err)
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			result <- fmt.Errorf("entering network namespace %s: %w", path, err)
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			result <- errors.Join(fnErr, fmt.Errorf("leaving network namespace %s: %w", path, err))
			return // still locked: the thread exits with this goroutine
		}
		runtime.UnlockOSThread()
		result <- fnErr
	}()
	return <-result
}

// dialInNetns opens a connection from inside the network namespace at
// path. The address must be an IP address: names would be resolved with
// the caller's resolver configuration.
func dialInNetns(ctx context.Context, path, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(path, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// forwarder accepts connections on a loopback port of the caller's network
// namespace and relays each to an address inside another network
// namespace. It is how processes outside the cluster's namespaces (tests,
// kubectl, a locally run operator) reach the API server, whose address
// exists only inside.
type forwarder struct {
	listener net.Listener
	netns    string
	target   string
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

// newForwarder listens on 127.0.0.1 at a free port and relays to target in
// the network namespace at netnsPath.
func newForwarder(netnsPath, target string) (*forwarder, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the API server forwarder: %w", err)
	}
	f := &forwarder{listener: l, netns: netnsPath, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// addr returns the loopback address the forwarder listens on.
func (f *forwarder) addr() string { return f.listener.Addr().String() }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.relay(conn)
		}()
	}
}

// track records a connection so that close can end it; it reports false
// once the forwarder is closed.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
	}
}

func (f *forwarder) relay(client net.Conn) {
	defer func() { _ = client.Close() }()
	upstream, err := dialInNetns(context.Background(), f.netns, "tcp", f.target)
	if err != nil {
		return
	}
	defer func() { _ = upstream.Close() }()
	if !f.track(client, upstream) {
		return
	}
	defer f.untrack(client, upstream)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
}

// close stops accepting, ends every relayed connection and waits for the
// relays to finish.
func (f *forwarder) close() {
	if f == nil {
		return
	}
	_ = f.listener.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
