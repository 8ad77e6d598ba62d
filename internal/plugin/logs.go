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

package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
	"github.com/steward-dev/steward/internal/labels"
)

// logOptions are the flags of logs.
type logOptions struct {
	follow     bool
	tail       int64
	container  string
	timestamps bool
}

// logOpener opens the log of one container.
type logOpener func(ctx context.Context, pod *corev1.Pod, container string, o logOptions) (io.ReadCloser, error)

func (c *cli) logsCommand() *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "logs KIND/NAME",
		Short: "Print the logs of an object's pods, merged, each line after its pod's name",
		Long: `Prints the logs of the pods Steward runs for an object, found by Steward's
labels: a WebApp's, a Cache's and a Database's pods, a Backup's run, check
and delete Jobs' pods, a Restore's Job's pod, and the pods of every component
of an AppStack. Each line starts with its pod (and container, for pods of
several). Without --follow the lines of all pods are merged in time order;
with it they are printed as they come.`,
		Example: `  kubectl steward logs database/orders --tail 50
  kubectl steward logs webapp/shop-frontend -f
  kubectl steward logs appstack/shop -c app`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeRefs(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.setUp(); err != nil {
				return err
			}
			r, err := parseRef(args[0], nil)
			if err != nil {
				return err
			}
			ctx := commandContext(cmd)
			pods, err := c.podsOf(ctx, r)
			if err != nil {
				return err
			}
			if len(pods) == 0 {
				return fmt.Errorf("%s has no pods", r)
			}
			return c.printLogs(ctx, pods, o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.follow, "follow", "f", false, "Keep printing new lines")
	fs.Int64Var(&o.tail, "tail", -1, "Lines of each container's log to start with (default: all, or 10 with --follow)")
	fs.StringVarP(&o.container, "container", "c", "", "Only this container of each pod")
	fs.BoolVar(&o.timestamps, "timestamps", false, "Start each line with its time")
	return cmd
}

// podsOf are the pods Steward runs for the object, by its labels, sorted
// by name.
func (c *cli) podsOf(ctx context.Context, r ref) ([]corev1.Pod, error) {
	var selectors []client.MatchingLabels
	switch r.kind {
	case kindWebApp:
		selectors = []client.MatchingLabels{{labels.WebApp: r.name}}
	case kindDatabase:
		selectors = []client.MatchingLabels{{v1alpha1.LabelDatabase: r.name}}
	case kindCache:
		selectors = []client.MatchingLabels{{labels.Cache: r.name}}
	case kindBackup:
		selectors = []client.MatchingLabels{{v1alpha1.LabelBackup: r.name}, {v1alpha1.LabelBackupCheck: r.name}, {v1alpha1.LabelBackupDelete: r.name}}
	case kindRestore:
		selectors = []client.MatchingLabels{{v1alpha1.LabelRestore: r.name}}
	case kindAppStack:
		return c.stackPods(ctx, r.name)
	default:
		return nil, fmt.Errorf("%s runs no pods of its own: see the logs of the workloads that use it", r)
	}
	// The object must exist: a typo finds no pods, and says so.
	if _, err := c.getUnstructured(ctx, r); err != nil {
		return nil, err
	}
	return c.podsMatching(ctx, selectors)
}

// podsMatching lists the pods that match any of the selectors, once each,
// by name.
func (c *cli) podsMatching(ctx context.Context, selectors []client.MatchingLabels) ([]corev1.Pod, error) {
	seen := map[string]bool{}
	var out []corev1.Pod
	for _, sel := range selectors {
		list := &corev1.PodList{}
		if err := c.c.List(ctx, list, client.InNamespace(c.ns), sel); err != nil {
			return nil, apiError(err, "list", core("pods"), "pod", c.ns, "")
		}
		for _, p := range list.Items {
			if !seen[p.Name] {
				seen[p.Name] = true
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// stackPods are the pods of an AppStack's components that run pods.
func (c *cli) stackPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	stack := &v1alpha1.AppStack{}
	if err := c.get(ctx, kindAppStack, name, stack); err != nil {
		return nil, err
	}
	var selectors []client.MatchingLabels
	for _, d := range stack.Spec.Databases {
		selectors = append(selectors, client.MatchingLabels{v1alpha1.LabelDatabase: appstack.ObjectName(stack, d.Name)})
	}
	for _, ca := range stack.Spec.Caches {
		selectors = append(selectors, client.MatchingLabels{labels.Cache: appstack.ObjectName(stack, ca.Name)})
	}
	for _, a := range stack.Spec.Apps {
		selectors = append(selectors, client.MatchingLabels{labels.WebApp: appstack.ObjectName(stack, a.Name)})
	}
	return c.podsMatching(ctx, selectors)
}

// logStream is one container's log.
type logStream struct {
	prefix string
	r      io.ReadCloser
}

// printLogs prints the containers' logs, each line after its prefix:
// merged by time, or with --follow as the lines come.
func (c *cli) printLogs(ctx context.Context, pods []corev1.Pod, o logOptions) error {
	if o.follow && o.tail < 0 {
		o.tail = 10
	}
	streams, err := c.openLogs(ctx, pods, o)
	defer func() {
		for _, s := range streams {
			_ = s.r.Close()
		}
	}()
	if err != nil {
		return err
	}
	if o.follow {
		return c.followLogs(streams, o.timestamps)
	}
	return c.mergeLogs(streams, o.timestamps)
}

// openLogs opens the log of every container of the pods (or the one
// --container names).
func (c *cli) openLogs(ctx context.Context, pods []corev1.Pod, o logOptions) ([]logStream, error) {
	var streams []logStream
	for i := range pods {
		p := &pods[i]
		for _, ct := range p.Spec.Containers {
			if o.container != "" && ct.Name != o.container {
				continue
			}
			prefix := p.Name
			if len(p.Spec.Containers) > 1 {
				prefix += "/" + ct.Name
			}
			r, err := c.openLog(ctx, p, ct.Name, o)
			if err != nil {
				return streams, err
			}
			streams = append(streams, logStream{prefix: "[" + prefix + "] ", r: r})
		}
	}
	if len(streams) == 0 && o.container != "" {
		return nil, fmt.Errorf("no pod has a container %q", o.container)
	}
	return streams, nil
}

// apiLog opens a container's log through the API server, with timestamps
// so that the lines of several pods can be merged in order.
func (c *cli) apiLog(ctx context.Context, pod *corev1.Pod, container string, o logOptions) (io.ReadCloser, error) {
	opts := &corev1.PodLogOptions{Container: container, Follow: o.follow, Timestamps: true}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	r, err := c.kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return nil, apiError(err, "get", core("pods/log"), "pod", pod.Namespace, pod.Name)
	}
	return r, nil
}

// logLine is one line of a log: its time, which the API server writes
// first (RFC 3339 with nanoseconds), and the rest.
type logLine struct {
	time string
	at   time.Time
	text string
}

func splitTimestamp(line string) logLine {
	t, text, ok := strings.Cut(line, " ")
	if !ok {
		return logLine{text: line}
	}
	at, err := time.Parse(time.RFC3339Nano, t)
	if err != nil {
		return logLine{text: line}
	}
	return logLine{time: t, at: at, text: text}
}

// mergeLogs reads every log to its end and prints the lines in time
// order; lines of the same time keep their logs' order.
func (c *cli) mergeLogs(streams []logStream, timestamps bool) error {
	type entry struct {
		logLine
		prefix string
	}
	var all []entry
	for _, s := range streams {
		sc := bufio.NewScanner(s.r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			all = append(all, entry{logLine: splitTimestamp(sc.Text()), prefix: s.prefix})
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading the log of %s: %w", strings.Trim(s.prefix, "[] "), err)
		}
	}
	slices.SortStableFunc(all, func(a, b entry) int { return a.at.Compare(b.at) })
	w := bufio.NewWriter(c.streams.Out)
	for _, e := range all {
		writeLogLine(w, e.prefix, e.logLine, timestamps)
	}
	return w.Flush()
}

// followLogs prints the lines of every log as they come, until every log
// ended.
func (c *cli) followLogs(streams []logStream, timestamps bool) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, s := range streams {
		wg.Go(func() {
			sc := bufio.NewScanner(s.r)
			sc.Buffer(make([]byte, 64*1024), 1024*1024)
			for sc.Scan() {
				mu.Lock()
				writeLogLine(c.streams.Out, s.prefix, splitTimestamp(sc.Text()), timestamps)
				mu.Unlock()
			}
			errs[i] = sc.Err()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("reading the log of %s: %w", strings.Trim(streams[i].prefix, "[] "), err)
		}
	}
	return nil
}

func writeLogLine(w io.Writer, prefix string, l logLine, timestamps bool) {
	if timestamps && l.time != "" {
		fmt.Fprintf(w, "%s%s %s\n", prefix, l.time, l.text)
		return
	}
	fmt.Fprintf(w, "%s%s\n", prefix, l.text)
}
