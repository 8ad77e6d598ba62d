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

// Package fieldindex registers a field index of the manager's cache when a
// lookup first needs it, rather than when a controller is set up. An index
// needs an informer of its kind, and an informer asked for before the cache
// starts runs on every replica: a replica waiting for the leadership, which
// reconciles nothing and looks nothing up, would hold every object of the
// kind. Registered on first use, the index lives only where lookups happen,
// on the leader, whose controllers watch the kind anyway. Informers take
// indexes after they started (client-go 1.30 on), indexing what they hold.
package fieldindex

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is one field index of one kind, registered on its first lookup.
type Index struct {
	indexer client.FieldIndexer
	obj     client.Object
	field   string
	extract client.IndexerFunc

	registered atomic.Bool
	mu         sync.Mutex
}

// New returns the index of obj's kind by field, whose values extract gives,
// to be registered with indexer on its first lookup. The field name must be
// unique among indexer's indexes of that kind.
func New(indexer client.FieldIndexer, obj client.Object, field string, extract client.IndexerFunc) *Index {
	return &Index{indexer: indexer, obj: obj, field: field, extract: extract}
}

// Field is the index's name.
func (x *Index) Field() string { return x.field }

// List lists into list, from reader (the cache indexer belongs to, or a
// client reading from it), the objects of namespace that extract maps to
// value. It registers the index first if no lookup did; that waits for the
// kind's informer to sync.
func (x *Index) List(ctx context.Context, reader client.Reader, list client.ObjectList, namespace, value string) error {
	if err := x.register(ctx); err != nil {
		return err
	}
	return reader.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{x.field: value})
}

// register adds the index to the cache once; a failure is tried again on
// the next lookup.
func (x *Index) register(ctx context.Context) error {
	if x.registered.Load() {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.registered.Load() {
		return nil
	}
	if err := x.indexer.IndexField(ctx, x.obj, x.field, x.extract); err != nil {
		return fmt.Errorf("indexing %T by %s: %w", x.obj, x.field, err)
	}
	x.registered.Store(true)
	return nil
}
