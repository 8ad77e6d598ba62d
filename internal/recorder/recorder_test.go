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

package recorder

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steward-dev/steward/internal/metrics"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

var clientset *kubernetes.Clientset

func TestMain(m *testing.M) {
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clientset = kubernetes.NewForConfigOrDie(env.Config)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// clock is a settable time for a Recorder.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// started is a Recorder sending to the test's API server, with its clock.
func started(t *testing.T) (*Recorder, *clock) {
	t.Helper()
	c := &clock{t: time.Now()}
	r := New(clientgoscheme.Scheme, clientset.EventsV1(), "steward", logr.Discard())
	r.now = c.now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r, c
}

// namespace creates a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns, err := clientset.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "recorder-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventsOf waits until the namespace holds want events, and returns them.
func eventsOf(t *testing.T, ns string, want int, check func([]eventsv1.Event) error) []eventsv1.Event {
	t.Helper()
	var got []eventsv1.Event
	apitest.Eventually(t, time.Minute, func() error {
		list, err := clientset.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		got = list.Items
		if len(got) != want {
			return fmt.Errorf("%d events, want %d: %+v", len(got), want, got)
		}
		if check != nil {
			return check(got)
		}
		return nil
	})
	return got
}

func pod(ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "1234"}}
}

// TestRecordsAnEvent sends an event with what client-go's recorder puts in
// one: the object, type, reason, action, note, and who reported it.
func TestRecordsAnEvent(t *testing.T) {
	r, _ := started(t)
	ns := namespace(t)
	r.Eventf(pod(ns), nil, corev1.EventTypeWarning, "ImagePullFailing", "Deploy", "cannot pull %q", "web:1")
	ev := eventsOf(t, ns, 1, nil)[0]
	if ev.Regarding.Kind != "Pod" || ev.Regarding.Name != "web" || ev.Regarding.UID != "1234" || ev.Regarding.APIVersion != "v1" ||
		ev.Type != corev1.EventTypeWarning || ev.Reason != "ImagePullFailing" || ev.Action != "Deploy" || ev.Note != `cannot pull "web:1"` ||
		ev.ReportingController != "steward" || ev.ReportingInstance == "" || ev.EventTime.IsZero() || ev.Series != nil {
		t.Errorf("event %+v", ev)
	}
}

// TestRepeatsCountInASeries folds a repeat into the first event's series,
// whose count is written by the next sweep; a different note is another
// event, and so is a repeat after SeriesIdle.
func TestRepeatsCountInASeries(t *testing.T) {
	r, c := started(t)
	ns := namespace(t)
	warn := func(note string) {
		r.Eventf(pod(ns), nil, corev1.EventTypeWarning, "CrashLooping", "Deploy", "%s", note)
	}
	warn("exit code 1")
	first := eventsOf(t, ns, 1, nil)[0]
	apitest.Eventually(t, time.Minute, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.series {
			if !s.created {
				return fmt.Errorf("the event is not marked created")
			}
		}
		return nil
	})

	c.add(10 * time.Second)
	warn("exit code 1")
	c.add(10 * time.Second)
	warn("exit code 1")
	r.sweep()
	eventsOf(t, ns, 1, func(evs []eventsv1.Event) error {
		s := evs[0].Series
		if s == nil || s.Count != 3 || !s.LastObservedTime.Time.Equal(first.EventTime.Add(20*time.Second)) {
			return fmt.Errorf("series %+v, want 3 times, the last 20s after %v", s, first.EventTime)
		}
		return nil
	})

	warn("exit code 2")
	eventsOf(t, ns, 2, nil)
	c.add(SeriesIdle)
	warn("exit code 1")
	eventsOf(t, ns, 3, nil)
}

// TestASeriesWhoseEventIsGoneEnds starts a new event when the first one of
// a series was deleted before its count could be written.
func TestASeriesWhoseEventIsGoneEnds(t *testing.T) {
	r, c := started(t)
	ns := namespace(t)
	r.Eventf(pod(ns), nil, corev1.EventTypeNormal, "Available", "Deploy", "ready")
	ev := eventsOf(t, ns, 1, nil)[0]
	apitest.Eventually(t, time.Minute, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.series {
			if s.name == ev.Name && s.created {
				return nil
			}
		}
		return fmt.Errorf("the event %s is not marked created: %+v", ev.Name, r.series)
	})
	if err := clientset.EventsV1().Events(ns).Delete(context.Background(), ev.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.add(time.Second)
	r.Eventf(pod(ns), nil, corev1.EventTypeNormal, "Available", "Deploy", "ready")
	r.sweep()
	apitest.Eventually(t, time.Minute, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.series) != 0 {
			return fmt.Errorf("the series of a deleted event is remembered: %+v", r.series)
		}
		return nil
	})
	r.Eventf(pod(ns), nil, corev1.EventTypeNormal, "Available", "Deploy", "ready")
	eventsOf(t, ns, 1, func(evs []eventsv1.Event) error {
		if evs[0].Name == ev.Name {
			return fmt.Errorf("still the deleted event %s", ev.Name)
		}
		return nil
	})
}

// TestAFullQueueDropsAndCounts never blocks the caller: with the queue full
// (no sender running), an event is dropped and counted.
func TestAFullQueueDropsAndCounts(t *testing.T) {
	r := New(clientgoscheme.Scheme, clientset.EventsV1(), "steward", logr.Discard())
	before := testutil.ToFloat64(metrics.EventsDropped.WithLabelValues("QueueFull"))
	for i := range QueueSize + 3 {
		r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", i)
	}
	if got := testutil.ToFloat64(metrics.EventsDropped.WithLabelValues("QueueFull")) - before; got != 3 {
		t.Errorf("%v events counted as dropped, want 3", got)
	}
	if len(r.queue) != QueueSize {
		t.Errorf("%d queued, want %d", len(r.queue), QueueSize)
	}
}

// TestRemembersAtMostMaxTracked bounds what is kept of sent events: past
// MaxTracked, over series are forgotten and new events not remembered.
func TestRemembersAtMostMaxTracked(t *testing.T) {
	r := New(clientgoscheme.Scheme, clientset.EventsV1(), "steward", logr.Discard())
	c := &clock{t: time.Now()}
	r.now = c.now
	for i := range MaxTracked + 10 {
		<-drain(r)
		r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", i)
	}
	if len(r.series) != MaxTracked {
		t.Fatalf("%d remembered, want %d", len(r.series), MaxTracked)
	}
	// Series written and idle for SeriesIdle are over and forgotten.
	c.add(SeriesIdle)
	r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to zero")
	if len(r.series) != 1 {
		t.Errorf("%d remembered after the others went idle, want 1", len(r.series))
	}
}

// TestAStormDoesNotScanEverySeries: with MaxTracked series remembered and
// none over, a new event looks for series to forget once, not each time,
// until the oldest can be over; then it is tracked again.
func TestAStormDoesNotScanEverySeries(t *testing.T) {
	r := New(clientgoscheme.Scheme, clientset.EventsV1(), "steward", logr.Discard())
	c := &clock{t: time.Now()}
	r.now = c.now
	for i := range MaxTracked {
		<-drain(r)
		r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", i)
	}
	c.add(time.Minute)
	for i := range 1000 {
		<-drain(r)
		r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "again to %d", i)
		if i%100 == 99 {
			c.add(time.Second)
		}
	}
	if r.scans != 1 {
		t.Errorf("%d scans for 1,000 new events while no series could be over, want 1", r.scans)
	}
	if len(r.series) != MaxTracked {
		t.Fatalf("%d remembered, want %d", len(r.series), MaxTracked)
	}
	// The first series are over SeriesIdle after they were seen.
	c.add(SeriesIdle - time.Minute - 10*time.Second)
	<-drain(r)
	r.Eventf(pod("default"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to zero")
	if r.scans != 2 {
		t.Errorf("%d scans once the oldest series were over, want 2", r.scans)
	}
	if len(r.series) != 1 {
		t.Errorf("%d remembered after the others went idle, want 1", len(r.series))
	}
}

// drain empties r's queue without sending.
func drain(r *Recorder) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-r.queue:
			default:
				return
			}
		}
	}()
	return done
}

// TestPendingCountsWhatIsNotRecordedYet: Pending (steward_events_pending)
// counts an event until the API server has it, and a repeat's count until
// it is written, which the next sweep does; then it is 0 again.
func TestPendingCountsWhatIsNotRecordedYet(t *testing.T) {
	// Not started: the events wait in the queue.
	idle := New(clientgoscheme.Scheme, clientset.EventsV1(), "steward", logr.Discard())
	for _, reason := range []string{"A", "B"} {
		idle.Eventf(pod("default"), nil, corev1.EventTypeNormal, reason, "Deploy", "queued")
	}
	if got := idle.Pending(); got != 2 {
		t.Errorf("Pending() = %d with two events queued, want 2", got)
	}

	r, c := started(t)
	ns := namespace(t)
	warn := func() { r.Eventf(pod(ns), nil, corev1.EventTypeWarning, "CrashLooping", "Deploy", "exit code 1") }
	pending := func(want int) {
		t.Helper()
		apitest.Eventually(t, time.Minute, func() error {
			if got := r.Pending(); got != want {
				return fmt.Errorf("Pending() = %d, want %d", got, want)
			}
			if got := gathered(t, "steward_events_pending"); got != float64(want) {
				return fmt.Errorf("steward_events_pending = %v, want %d", got, want)
			}
			return nil
		})
	}
	warn()
	eventsOf(t, ns, 1, nil)
	pending(0)

	c.add(10 * time.Second)
	warn()
	pending(1) // the repeat's count waits for the sweep
	r.sweep()
	eventsOf(t, ns, 1, func(evs []eventsv1.Event) error {
		if s := evs[0].Series; s == nil || s.Count != 2 {
			return fmt.Errorf("series %+v, want a count of 2", s)
		}
		return nil
	})
	pending(0)
}

// gathered is the value of the registered gauge name.
func gathered(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not registered", name)
	return 0
}
