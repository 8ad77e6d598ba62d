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
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// execFunc runs a command in a container with the user's streams.
type execFunc func(ctx context.Context, req execRequest) error

// execURL is the API server's exec URL of the request. The command is in
// its query: nothing secret may be in it.
func (c *cli) execURL(req execRequest, tty bool) *url.URL {
	return c.kube.CoreV1().RESTClient().Post().
		Namespace(req.Namespace).Resource("pods").Name(req.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: req.Container,
			Command:   req.Command,
			Stdin:     req.Stdin,
			Stdout:    true,
			// With a terminal, stderr comes through it.
			Stderr: !tty,
			TTY:    tty,
		}, clientgoscheme.ParameterCodec).URL()
}

// streamExec runs the request through the API server, over WebSocket or,
// from API servers that do not speak it, SPDY, as kubectl exec does; with
// a terminal in raw mode when stdin is one.
func (c *cli) streamExec(ctx context.Context, req execRequest) error {
	stdin, isFile := c.streams.In.(*os.File)
	tty := req.Stdin && isFile && term.IsTerminal(int(stdin.Fd()))
	u := c.execURL(req, tty)
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", u.String())
	if err != nil {
		return fmt.Errorf("exec in pod %s: %w", req.Pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", u)
	if err != nil {
		return fmt.Errorf("exec in pod %s: %w", req.Pod, err)
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("exec in pod %s: %w", req.Pod, err)
	}
	opts := remotecommand.StreamOptions{Stdout: c.streams.Out, Tty: tty}
	if req.Stdin {
		opts.Stdin = c.streams.In
	}
	if !tty {
		opts.Stderr = c.streams.ErrOut
	}
	if tty {
		fd := int(stdin.Fd())
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("setting the terminal to raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, state) }()
		sizes := newSizeQueue(ctx, fd)
		defer sizes.stop()
		opts.TerminalSizeQueue = sizes
	}
	err = executor.StreamWithContext(ctx, opts)
	var exit exec.CodeExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		return fmt.Errorf("%s exited with code %d", req.Command[len(req.Command)-1], exit.Code)
	case isForbidden(err) || apierrors.IsNotFound(err):
		return apiError(err, "create", core("pods/exec"), "pod", req.Namespace, req.Pod)
	}
	return fmt.Errorf("exec in pod %s: %w", req.Pod, err)
}
