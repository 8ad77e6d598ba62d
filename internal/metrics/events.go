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
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// EventsDropped counts the Kubernetes events Steward did not record, by
// reason: QueueFull (more events waiting for the API server than the
// recorder holds) or WriteFailed (the API server refused the event, or
// did not answer after several tries).
var EventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "steward_events_dropped_total",
	Help: "Kubernetes events Steward did not record, by reason (QueueFull, WriteFailed).",
}, []string{"reason"})

func init() {
	mustRegister(EventsDropped)
	// Both series exist from the start, at 0, for rate() and alerts.
	EventsDropped.WithLabelValues("QueueFull")
	EventsDropped.WithLabelValues("WriteFailed")
}

// eventsPending reads the recorder's Pending; nil until a recorder exists.
var eventsPending atomic.Pointer[func() int]

// EventsPendingFrom makes steward_events_pending read pending, the
// operator's recorder's count of writes it has yet to make.
func EventsPendingFrom(pending func() int) { eventsPending.Store(&pending) }

func init() {
	mustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "steward_events_pending",
		Help: "Writes of Kubernetes events Steward has yet to make: events waiting to be sent or being sent, and repeat counts of event series not written yet (at most a minute after the repeat).",
	}, func() float64 {
		if f := eventsPending.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	}))
}
