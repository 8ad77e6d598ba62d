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

// Package recorder records the operator's Kubernetes events
// (events.k8s.io/v1) in bounded memory.
//
// An event is queued and sent by a few senders; when the API server is
// slow or unreachable the queue fills, and events beyond it are dropped and
// counted (steward_events_dropped_total) instead of piling up in memory.
// An event that repeats one sent less than SeriesIdle ago (same object,
// type, reason, action and note) is not sent again: it counts in the first
// one's series, whose count and last time are written at most once per
// SeriesFlush. What is remembered of a sent event for this is a digest of
// its identity, its name and its count, not the event, and for at most
// MaxTracked events.
//
// client-go's events/v1 broadcaster folds repeats too (a different note
// included), but holds a full copy of every event it sent for 6 to 12
// minutes and runs a goroutine per event until the API server accepts it:
// with 10,000 objects becoming Ready within minutes, megabytes of events
// and thousands of goroutines.
package recorder

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/reference"

	"github.com/steward-dev/steward/internal/metrics"
)

// Limits of the recorder.
const (
	// QueueSize is how many events may wait to be sent.
	QueueSize = 4096
	// Senders is how many events are sent at once. 4 were too few for a
	// saturated API server: when 10,000 WebApps had become Ready in 21
	// minutes, 5 % of their events were not recorded yet.
	Senders = 16
	// SeriesIdle is how long after an event was last seen a repeat of it
	// counts in its series rather than being a new event.
	SeriesIdle = 6 * time.Minute
	// SeriesFlush is how often at most a series' count is written.
	SeriesFlush = time.Minute
	// MaxTracked is how many sent events are remembered for their series.
	MaxTracked = 8192
	// tries is how many times an event is sent before it is given up,
	// retryDelay the wait between tries.
	tries      = 4
	retryDelay = 2 * time.Second
)

// Recorder sends events for one reporting controller. It implements
// k8s.io/client-go/tools/events.EventRecorder and, as a manager.Runnable,
// runs its senders on every replica (Start).
type Recorder struct {
	scheme     *runtime.Scheme
	events     eventsclient.EventsGetter
	controller string
	instance   string
	log        logr.Logger
	now        func() time.Time

	queue chan job
	// sending counts the jobs the senders hold.
	sending atomic.Int64

	mu     sync.Mutex
	series map[eventKey]*series
	// nextForget is when a new event may next look for series to forget
	// while MaxTracked are remembered: after a look that freed none, not
	// before the oldest series can be over, nor within a second, so that a
	// storm of new events does not scan every series for each. scans
	// counts the looks.
	nextForget time.Time
	scans      int
}

// job is a new event to create, or, without one, a series whose count to
// write. key is the event's series.
type job struct {
	event *eventsv1.Event
	key   eventKey
}

// series is what the recorder remembers of an event it sent.
type series struct {
	namespace, name string
	// count is how many times the event was seen, written the count
	// the API server has; last is when it was last seen.
	count, written int32
	last           time.Time
	// created is set once the API server has the event; queued while a
	// write of the count waits in the queue; flushed is when the count was
	// last written.
	created, queued bool
	flushed         time.Time
}

// New returns a Recorder that reports as controller, from this host.
func New(scheme *runtime.Scheme, events eventsclient.EventsGetter, controller string, log logr.Logger) *Recorder {
	host, _ := os.Hostname()
	r := &Recorder{
		scheme:     scheme,
		events:     events,
		controller: controller,
		instance:   controller + "-" + host,
		log:        log,
		now:        time.Now,
		queue:      make(chan job, QueueSize),
		series:     map[eventKey]*series{},
	}
	metrics.EventsPendingFrom(r.Pending)
	return r
}

// Eventf records an event about regarding. It never blocks: an event that
// finds the queue full is dropped and counted.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	note = fmt.Sprintf(note, args...)
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log.Error(err, "Cannot refer to the object of an event; the event is not recorded", "reason", reason)
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(r.scheme, related); err != nil {
			r.log.V(1).Info("Cannot refer to the related object of an event; recording it without", "reason", reason, "error", err.Error())
		}
	}
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		r.log.Error(nil, "Unsupported event type; the event is not recorded", "type", eventtype, "reason", reason)
		return
	}
	r.log.V(1).Info("Event", "object", ref.Namespace+"/"+ref.Name, "kind", ref.Kind, "type", eventtype, "reason", reason, "note", note)

	now := r.now()
	key := seriesKey(ref, rel, eventtype, reason, action, note)
	r.mu.Lock()
	if s, ok := r.series[key]; ok && now.Sub(s.last) < SeriesIdle {
		s.count++
		s.last = now
		flush := s.created && !s.queued && now.Sub(s.flushed) >= SeriesFlush
		s.queued = s.queued || flush
		r.mu.Unlock()
		if flush && !r.enqueue(job{key: key}) {
			r.unqueue(key)
		}
		return
	}
	ev := r.event(ref, rel, eventtype, reason, action, note, now)
	r.track(key, ev, now)
	r.mu.Unlock()
	if !r.enqueue(job{event: ev, key: key}) {
		r.untrack(key, ev)
	}
}

// untrack forgets the series of ev, an event that was not recorded, so
// that a repeat of it is sent as a new event rather than counted in a
// series the API server does not have.
func (r *Recorder) untrack(key eventKey, ev *eventsv1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[key]; ok && s.name == ev.Name {
		delete(r.series, key)
	}
}

// event builds the Event, named after its object and the time as
// client-go's recorder names it.
func (r *Recorder) event(ref, rel *corev1.ObjectReference, eventtype, reason, action, note string, now time.Time) *eventsv1.Event {
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             rel,
		Note:                note,
		Type:                eventtype,
	}
}

// track remembers ev for its series, forgetting series idle for
// SeriesIdle whose count is written; with MaxTracked remembered already,
// ev is not (a repeat of it is then a new event). r.mu is held.
func (r *Recorder) track(key eventKey, ev *eventsv1.Event, now time.Time) {
	if len(r.series) >= MaxTracked && !now.Before(r.nextForget) {
		if oldest := r.forget(now); len(r.series) >= MaxTracked {
			r.nextForget = now.Add(time.Second)
			if over := oldest.Add(SeriesIdle); over.After(r.nextForget) {
				r.nextForget = over
			}
		}
	}
	if len(r.series) >= MaxTracked {
		return
	}
	r.series[key] = &series{namespace: ev.Namespace, name: ev.Name, count: 1, written: 1, last: now, flushed: now}
}

// forget drops the series that are over: idle for SeriesIdle, and their
// count written. It returns when the oldest series kept was last seen
// (now when none is kept). r.mu is held.
func (r *Recorder) forget(now time.Time) time.Time {
	r.scans++
	oldest := now
	for key, s := range r.series {
		switch {
		case now.Sub(s.last) >= SeriesIdle && s.written == s.count && !s.queued:
			delete(r.series, key)
		case s.last.Before(oldest):
			oldest = s.last
		}
	}
	return oldest
}

// enqueue queues j, or drops and counts it when the queue is full.
func (r *Recorder) enqueue(j job) bool {
	select {
	case r.queue <- j:
		return true
	default:
		metrics.EventsDropped.WithLabelValues("QueueFull").Inc()
		return false
	}
}

// eventKey identifies an event for its series: a repeat has the same key.
// It is a digest, so that what is remembered of an event has a fixed size
// whatever its note's.
type eventKey [sha256.Size]byte

func seriesKey(ref, rel *corev1.ObjectReference, eventtype, reason, action, note string) eventKey {
	parts := []string{string(ref.UID), ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, ref.FieldPath, eventtype, reason, action, note}
	if rel != nil {
		parts = append(parts, string(rel.UID), rel.Kind, rel.Namespace, rel.Name, rel.FieldPath)
	}
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

// Pending is how many writes the recorder has yet to make for what it was
// given: events and writes of a series' count waiting in the queue or being
// sent, and series whose count is not written yet (SeriesFlush). It is 0
// once everything seen so far is recorded.
func (r *Recorder) Pending() int {
	n := len(r.queue) + int(r.sending.Load())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.series {
		if s.created && s.count != s.written && !s.queued {
			n++
		}
	}
	return n
}

// NeedLeaderElection is false: a standby's webhooks may record events too.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start runs the senders and, every SeriesFlush, writes the counts of series
// not yet written and forgets those that are over, until ctx is done.
func (r *Recorder) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range Senders {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-r.queue:
					r.sending.Add(1)
					r.send(ctx, j)
					r.sending.Add(-1)
				}
			}
		})
	}
	tick := time.NewTicker(SeriesFlush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-tick.C:
			r.sweep()
		}
	}
}

// sweep queues a write of every series whose count is not written, and
// forgets the series that are over.
func (r *Recorder) sweep() {
	now := r.now()
	var flush []eventKey
	r.mu.Lock()
	r.forget(now)
	for key, s := range r.series {
		if s.created && s.count != s.written && !s.queued {
			s.queued = true
			flush = append(flush, key)
		}
	}
	r.mu.Unlock()
	for _, key := range flush {
		if !r.enqueue(job{key: key}) {
			r.unqueue(key)
		}
	}
}

// unqueue notes that no write of the series' count waits in the queue.
func (r *Recorder) unqueue(key eventKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[key]; ok {
		s.queued = false
	}
}

// send writes j, trying again after an error that is not the API server's
// refusal.
func (r *Recorder) send(ctx context.Context, j job) {
	for try := 1; ; try++ {
		err := r.write(ctx, j)
		if err == nil {
			return
		}
		if refused(err) || try == tries || ctx.Err() != nil {
			r.log.Error(err, "Cannot record an event; it is dropped")
			metrics.EventsDropped.WithLabelValues("WriteFailed").Inc()
			if j.event != nil {
				r.untrack(j.key, j.event)
			} else {
				r.unqueue(j.key)
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryDelay):
		}
	}
}

// refused reports whether the API server refused the request for what it
// is, so that sending it again would fail again.
func refused(err error) bool {
	if _, ok := err.(apierrors.APIStatus); !ok {
		return false // no answer
	}
	return !apierrors.IsTooManyRequests(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) &&
		!apierrors.IsInternalError(err) && !apierrors.IsServiceUnavailable(err)
}

// write creates j's event, or patches its series' count and last time.
func (r *Recorder) write(ctx context.Context, j job) error {
	if j.event != nil {
		_, err := r.events.Events(j.event.Namespace).Create(ctx, j.event, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil // a retry of a create that reached the API server
		}
		if err == nil {
			r.mu.Lock()
			if s, ok := r.series[j.key]; ok && s.name == j.event.Name {
				s.created = true
			}
			r.mu.Unlock()
		}
		return err
	}
	r.mu.Lock()
	s, ok := r.series[j.key]
	if !ok {
		r.mu.Unlock()
		return nil
	}
	s.queued = false
	namespace, name, count, last := s.namespace, s.name, s.count, s.last
	r.mu.Unlock()

	patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(last)}})
	if err != nil {
		return err
	}
	_, err = r.events.Events(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		// The first event is gone (expired or deleted): its series ends,
		// and the next repeat is a new event.
		if r.series[j.key] == s {
			delete(r.series, j.key)
		}
		return nil
	case err == nil:
		s.flushed = r.now()
		s.written = max(s.written, count)
	}
	return err
}
