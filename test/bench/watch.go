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

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tracker records, from an informer, when each object first met a condition.
type tracker struct {
	mu   sync.Mutex
	cond func(client.Object) bool
	seen map[client.ObjectKey]time.Time
	// onUpdate, when set, sees every added or updated object.
	onUpdate func(client.Object)
}

// track starts an informer for obj's kind that records when objects meet cond.
func track(ctx context.Context, c cache.Cache, obj client.Object, cond func(client.Object) bool) (*tracker, error) {
	t := &tracker{cond: cond, seen: map[client.ObjectKey]time.Time{}}
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("watching %T: %w", obj, err)
	}
	handle := func(o any) {
		co, ok := o.(client.Object)
		if !ok {
			return
		}
		t.mu.Lock()
		f := t.onUpdate
		if _, done := t.seen[client.ObjectKeyFromObject(co)]; !done && t.cond(co) {
			t.seen[client.ObjectKeyFromObject(co)] = time.Now()
		}
		t.mu.Unlock()
		if f != nil {
			f(co)
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, o any) { handle(o) },
	})
	return t, err
}

// at returns when key first met the condition.
// chainOnUpdate makes f see every added or updated object after the
// current onUpdate, until restore is called.
func (t *tracker) chainOnUpdate(f func(client.Object)) (restore func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.onUpdate
	t.onUpdate = func(o client.Object) {
		if prev != nil {
			prev(o)
		}
		f(o)
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.onUpdate = prev
	}
}

func (t *tracker) at(key client.ObjectKey) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.seen[key]
	return at, ok
}

// waitAll waits until every key met the condition and returns the latest time.
func (t *tracker) waitAll(ctx context.Context, keys []client.ObjectKey, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var last time.Time
		missing := 0
		t.mu.Lock()
		for _, k := range keys {
			at, ok := t.seen[k]
			if !ok {
				missing++
			} else if at.After(last) {
				last = at
			}
		}
		t.mu.Unlock()
		if missing == 0 {
			return last, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d of %d objects not converged after %s", missing, len(keys), timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
