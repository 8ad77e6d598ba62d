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
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// SetPodLink sets the node's end of the network link of the pod whose UID
// is uid "down" or "up". Down cuts the pod off, as a failed link would: its
// processes run on, nothing reaches it and it reaches nothing. The pod's
// own interface stays up, so its addresses and routes are the same once
// the link is up again.
func (n *Node) SetPodLink(ctx context.Context, uid, state string) error {
	pid, err := n.podProcess(uid)
	if err != nil {
		return err
	}
	// "3: eth0@if12: <...>": the pod's end, and the index of the node's.
	out, err := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net",
		"ip", "-o", "link", "show", "eth0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("the link of pod %s: %w: %s", uid, err, strings.TrimSpace(string(out)))
	}
	_, rest, ok := strings.Cut(string(out), "@if")
	peer, _, _ := strings.Cut(rest, ":")
	if !ok || peer == "" {
		return fmt.Errorf("the link of pod %s: no peer in %q", uid, strings.TrimSpace(string(out)))
	}
	out, err = exec.CommandContext(ctx, "ip", "-n", n.netns, "-o", "link", "show").CombinedOutput()
	if err != nil {
		return fmt.Errorf("the links of node %s: %w: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	for line := range strings.Lines(string(out)) {
		index, rest, _ := strings.Cut(line, ": ")
		if index != peer {
			continue
		}
		name, _, _ := strings.Cut(rest, "@")
		name, _, _ = strings.Cut(name, ":")
		return run(ctx, "ip", "-n", n.netns, "link", "set", name, state)
	}
	return fmt.Errorf("node %s has no link %s, the peer of pod %s's", n.Name, peer, uid)
}

// podProcess is a process of the pod whose UID is uid on the node, found
// through the pod's cgroup (the kubelet's cgroupfs driver names it
// pod<uid>).
func (n *Node) podProcess(uid string) (int, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return 0, err
	}
	var dir string
	_ = filepath.WalkDir(filepath.Join(mounts[0], n.cgroupName()), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "pod"+uid {
			dir = path
			return fs.SkipAll
		}
		return nil
	})
	if dir == "" {
		return 0, fmt.Errorf("node %s has no cgroup of pod %s", n.Name, uid)
	}
	pids := cgroupPIDs(dir)
	if len(pids) == 0 {
		return 0, errors.New("pod " + uid + " has no process")
	}
	return pids[0], nil
}
