//go:build windows

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

	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"
)

// sizeQueue reports the terminal's size once: Windows has no SIGWINCH.
type sizeQueue struct {
	sizes chan remotecommand.TerminalSize
}

func newSizeQueue(_ context.Context, fd int) *sizeQueue {
	q := &sizeQueue{sizes: make(chan remotecommand.TerminalSize, 1)}
	if w, h, err := term.GetSize(fd); err == nil {
		q.sizes <- remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
	}
	close(q.sizes)
	return q
}

// Next returns the size, then nil.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q.sizes
	if !ok {
		return nil
	}
	return &s
}

func (q *sizeQueue) stop() {}
