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

package realnode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// unreadyPods says, for each pod of namespace that is not Ready, where it
// stands and why, as far as the cluster and its node can tell: its phase,
// address and containers' states, its events, and the last lines of its
// node's kubelet and containerd logs that name it. A pod that never gets
// an address, for one, shows there whether its sandbox, its volumes or its
// network are what it waits for. Empty when every pod is Ready. An empty
// namespace means every namespace.
func unreadyPods(ctx context.Context, namespace string) string {
	where := []string{"--namespace", namespace}
	if namespace == "" {
		where = []string{"--all-namespaces"}
	}
	out, err := devenv.Kubectl(ctx, cluster, nil, append([]string{"get", "pods", "-o", "json"}, where...)...)
	if err != nil {
		return "listing the pods: " + err.Error()
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		return "reading the pods: " + err.Error()
	}
	var b strings.Builder
	for i := range pods.Items {
		pod := &pods.Items[i]
		if podReady(pod) {
			continue
		}
		fmt.Fprintf(&b, "pod %s/%s: phase %s, node %q, address %q", pod.Namespace, pod.Name, pod.Status.Phase, pod.Spec.NodeName, pod.Status.PodIP)
		if pod.DeletionTimestamp != nil {
			fmt.Fprintf(&b, ", being deleted since %s", pod.DeletionTimestamp.UTC().Format("15:04:05"))
		}
		b.WriteString("\n")
		for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  container %s: %s\n", s.Name, containerState(s.State))
		}
		events, err := devenv.Kubectl(ctx, cluster, nil, "get", "events", "--namespace", pod.Namespace,
			"--field-selector", "involvedObject.kind=Pod,involvedObject.name="+pod.Name, "--sort-by=.lastTimestamp")
		if err != nil {
			events += err.Error()
		}
		fmt.Fprintf(&b, "  events:\n%s\n", indent(strings.TrimSpace(events), "    "))
		for _, n := range cluster.Nodes() {
			if n.Name != pod.Spec.NodeName {
				continue
			}
			for _, component := range []string{"kubelet", "containerd"} {
				lines := lastLinesNaming(n.LogPath(component), pod.Name, 20)
				fmt.Fprintf(&b, "  %s's %s log, last %d lines naming it:\n%s\n", n.Name, component, len(lines),
					indent(strings.Join(lines, "\n"), "    "))
			}
		}
	}
	return b.String()
}

// podReady says whether the pod's Ready condition is true.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerState is a container's state in a few words.
func containerState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return fmt.Sprintf("waiting (%s: %s)", s.Waiting.Reason, s.Waiting.Message)
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format("15:04:05")
	case s.Terminated != nil:
		return fmt.Sprintf("terminated (%s, exit %d: %s)", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	}
	return "no state yet"
}

// lastLinesNaming returns the last n lines of the file at path that
// contain name, or the error that kept it from being read.
func lastLinesNaming(path, name string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer func() { _ = f.Close() }()
	var last []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, name) {
			continue
		}
		if len(line) > 600 {
			line = line[:600] + "…"
		}
		last = append(last, line)
		if len(last) > n {
			last = last[1:]
		}
	}
	if err := scanner.Err(); err != nil {
		last = append(last, "reading "+path+": "+err.Error())
	}
	return last
}

// indent prefixes every line of s with prefix.
func indent(s, prefix string) string {
	if s == "" {
		return prefix + "(none)"
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
