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

// Package ctrtest runs a private containerd for tests: its own
// configuration, root, state and sockets in a temporary directory, the CRI
// plugin disabled, driven with ctr in the k8s.io namespace as the kubelet's
// containerd would be.
//
// Tests that use it skip unless they run as root with containerd and ctr
// installed, and fail instead when STEWARD_REQUIRE_REAL_NODE=1.
package ctrtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Namespace is the kubelet's containerd namespace.
const Namespace = "k8s.io"

// Daemon is a running private containerd.
type Daemon struct {
	Dir    string
	Socket string
	cmd    *exec.Cmd
	log    string
	runs   int
}

// Available reports whether a private containerd can run here, and why not.
func Available() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "containerd needs root"
	}
	for _, p := range []string{"containerd", "ctr"} {
		if _, err := exec.LookPath(p); err != nil {
			return false, p + " is not installed"
		}
	}
	return true, ""
}

// Require skips the test when no private containerd can run, or fails it
// when STEWARD_REQUIRE_REAL_NODE=1.
func Require(t testing.TB) {
	t.Helper()
	if ok, why := Available(); !ok {
		if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
			t.Fatalf("STEWARD_REQUIRE_REAL_NODE=1 but %s", why)
		}
		t.Skip(why)
	}
}

// Start starts a private containerd that the test's cleanup stops, with
// everything it mounted under its directory unmounted.
func Start(t testing.TB) *Daemon {
	t.Helper()
	Require(t)
	// A short directory: the sockets' paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ctrtest-")
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), log: filepath.Join(dir, "containerd.log")}
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), d.Socket, d.Socket+".ttrpc", filepath.Join(dir, "opt"))
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command("containerd", "--config", cfgPath)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatal(err)
	}
	_ = logf.Close()
	t.Cleanup(func() { d.stop(t) })

	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := d.Ctr(context.Background(), "version"); err == nil {
			return d
		} else if time.Now().After(deadline) {
			t.Fatalf("containerd did not answer within a minute: %v\n%s", err, d.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Ctr runs ctr against the daemon in the k8s.io namespace and returns its
// combined output.
func (d *Daemon) Ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"-n", Namespace, "-a", d.Socket}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Import imports an image archive as the kubelet's node would.
func (d *Daemon) Import(ctx context.Context, archive string) error {
	_, err := d.Ctr(ctx, "images", "import", archive)
	return err
}

// Images lists the names of the images in the namespace.
func (d *Daemon) Images(ctx context.Context) ([]string, error) {
	out, err := d.Ctr(ctx, "images", "ls", "-q")
	if err != nil {
		return nil, err
	}
	names := strings.Fields(out)
	slices.Sort(names)
	return names, nil
}

// Run runs cmd in a new container of image, as the image's user with its
// environment, and removes the container; it returns the command's output.
func (d *Daemon) Run(ctx context.Context, image string, cmd ...string) (string, error) {
	return d.Ctr(ctx, append([]string{"run", "--rm", image, d.containerID()}, cmd...)...)
}

// containerID is unique on the machine: runc's state of every
// containerd 1.6 is in /run/containerd/runc/<namespace>.
func (d *Daemon) containerID() string {
	d.runs++
	return fmt.Sprintf("ctrtest-%d-%d", os.Getpid(), d.runs)
}

// RunAs runs cmd as uid:gid with the environment env in a container of
// image, as a pod with runAsUser would: ctr 1.6 has no --user, so the
// image is mounted and the container made from a spec of its own. Unlike
// ctr's default spec, and like a pod, the container has no tmpfs on /run.
func (d *Daemon) RunAs(ctx context.Context, image string, uid, gid int, env []string, cmd ...string) (string, error) {
	id := d.containerID()
	root := filepath.Join(d.Dir, "mnt", id)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if _, err := d.Ctr(ctx, "images", "mount", "--rw", image, root); err != nil {
		return "", err
	}
	defer func() { _, _ = d.Ctr(context.WithoutCancel(ctx), "images", "unmount", "--rm", root) }()

	out, err := d.Ctr(ctx, "oci", "spec")
	if err != nil {
		return "", err
	}
	var spec map[string]any
	if err := json.Unmarshal([]byte(out), &spec); err != nil {
		return "", fmt.Errorf("ctr oci spec: %w", err)
	}
	spec["root"] = map[string]any{"path": root, "readonly": false}
	process, _ := spec["process"].(map[string]any)
	if process == nil {
		return "", errors.New("ctr oci spec has no process")
	}
	process["user"] = map[string]any{"uid": uid, "gid": gid}
	process["args"] = cmd
	process["env"] = env
	if mounts, ok := spec["mounts"].([]any); ok {
		var kept []any
		for _, m := range mounts {
			if mm, ok := m.(map[string]any); ok && mm["destination"] == "/run" {
				continue
			}
			kept = append(kept, m)
		}
		spec["mounts"] = kept
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	specFile := filepath.Join(d.Dir, id+".json")
	if err := os.WriteFile(specFile, b, 0o600); err != nil {
		return "", err
	}
	return d.Ctr(ctx, "run", "--rm", "--config", specFile, id)
}

// LogTail is the end of the daemon's log.
func (d *Daemon) LogTail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (d *Daemon) stop(t testing.TB) {
	if d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	for _, m := range mountsUnder(d.Dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", m, err)
		}
	}
	if err := os.RemoveAll(d.Dir); err != nil {
		t.Errorf("removing %s: %v", d.Dir, err)
	}
	// containerd 1.6 keeps the shims' sockets and runc's state under
	// /run/containerd whatever its state directory, and ctr its FIFOs;
	// remove what is empty, and leave what another containerd may be using.
	// A shim may still be removing its socket.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := os.Remove("/run/containerd/s"); err == nil || os.IsNotExist(err) {
			break
		}
	}
	for _, p := range []string{"/run/containerd/runc/" + Namespace, "/run/containerd/runc", "/run/containerd/fifo", "/run/containerd"} {
		_ = os.Remove(p)
	}
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var ms []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		// Octal escapes (\040 for a space) do not occur in our paths.
		if m := fields[4]; m == dir || strings.HasPrefix(m, dir+"/") {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return len(b) - len(a) })
	return ms
}
