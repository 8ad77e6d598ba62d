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

package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Cache is what the metrics read Steward's objects from: the manager's
// informer cache (cache.Cache is one).
type Cache interface {
	client.Reader
	GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// follower keeps, for each object of one kind in the cache, the summary
// the metrics need (a phase, the problem conditions), updated by the
// informer's events. A scrape then reads a map of small entries instead of
// listing every object: a list from the cache copies each object into the
// list's items (tens of megabytes at 10,000 WebApps, at every scrape).
//
// Only the leader reports figures: a sum over every replica would count
// its objects once per replica should a replica waiting for the leadership
// ever cache a kind. Until elected closes, each reports errNoFigures.
//
// The follower attaches to the informer the operator's controllers start,
// never starting one itself: until that informer exists and has delivered
// its objects, each scrape lists, as before. While the leader watches no
// such kind yet (its controllers not started) the list fails, and each
// reports errNoFigures too: the collectors then report no series for the
// kind instead of failing the scrape.
type follower[E any] struct {
	cache   Cache
	elected <-chan struct{}
	newList func() client.ObjectList
	// summary is an object's entry; false leaves the object out.
	summary func(client.Object) (E, bool)

	mu      sync.RWMutex
	handle  toolscache.ResourceEventHandlerRegistration
	entries map[types.NamespacedName]E
}

func newFollower[E any](c Cache, elected <-chan struct{}, newList func() client.ObjectList, summary func(client.Object) (E, bool)) *follower[E] {
	return &follower[E]{cache: c, elected: elected, newList: newList, summary: summary, entries: map[types.NamespacedName]E{}}
}

// errNoFigures: this process is not the leader, or does not watch the kind
// yet (or its cache has not started). It reports none of the kind's
// figures, neither counts nor problems.
var errNoFigures = errors.New("not the leader, or the kind is not watched yet")

// notWatched reports whether err is the cache saying it holds no informer
// for a kind, or has not started.
func notWatched(err error) bool {
	var notCached *cache.ErrResourceNotCached
	var notStarted *cache.ErrCacheNotStarted
	return errors.As(err, &notCached) || errors.As(err, &notStarted)
}

// each calls fn with every entry, or returns errNoFigures while the process
// is not the leader or watches no such kind. fn must not call the follower.
func (f *follower[E]) each(ctx context.Context, fn func(E)) error {
	select {
	case <-f.elected:
	default:
		return errNoFigures
	}
	if f.following(ctx) {
		f.mu.RLock()
		defer f.mu.RUnlock()
		for _, e := range f.entries {
			fn(e)
		}
		return nil
	}
	list := f.newList()
	// Read-only: the cache's objects are not copied.
	if err := f.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		if notWatched(err) {
			return errNoFigures
		}
		return err
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		if e, ok := f.summary(o.(client.Object)); ok {
			fn(e)
		}
		return nil
	})
}

// following reports whether the entries are complete, attaching to the
// kind's informer first when it exists.
func (f *follower[E]) following(ctx context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handle == nil {
		f.attach(ctx)
	}
	return f.handle != nil && f.handle.HasSynced()
}

// attach adds the event handler to the kind's informer if the cache has
// one. A read of one object asks without starting an informer: with the
// cache's ReaderFailOnMissingInformer it fails while none exists.
func (f *follower[E]) attach(ctx context.Context) {
	if err := f.cache.List(ctx, f.newList(), client.Limit(1), client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	gvk, err := kindOfList(f.newList())
	if err != nil {
		return
	}
	informer, err := f.cache.GetInformerForKind(ctx, gvk, cache.BlockUntilSynced(false))
	if err != nil {
		return
	}
	if handle, err := informer.AddEventHandler(f.handler()); err == nil {
		f.handle = handle
	}
}

// handler keeps the entries as the informer's events say.
func (f *follower[E]) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.set(o) },
		UpdateFunc: func(_, o any) { f.set(o) },
		DeleteFunc: func(o any) {
			if gone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = gone.Obj
			}
			if obj, ok := o.(client.Object); ok {
				f.mu.Lock()
				delete(f.entries, client.ObjectKeyFromObject(obj))
				f.mu.Unlock()
			}
		},
	}
}

func (f *follower[E]) set(o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	e, keep := f.summary(obj)
	key := client.ObjectKeyFromObject(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	if keep {
		f.entries[key] = e
	} else {
		delete(f.entries, key)
	}
}

// steward is the scheme of Steward's kinds, to name a list's kind.
var steward = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err) // static registration
	}
	return s
}()

// kindOfList is the kind of the objects of a list of Steward's.
func kindOfList(list client.ObjectList) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(list, steward)
	if err != nil {
		return gvk, fmt.Errorf("the kind of %T: %w", list, err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, nil
}
