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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLastSeen checks which time an event is shown at: the latest its
// reporter gave, even when the Event object was created later (a reporter
// whose clock is behind the API server's, an event recorded after the
// fact), and the creation only for an event that gives no time.
func TestLastSeen(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	early := metav1.NewTime(created.Add(-time.Hour))
	later := metav1.NewTime(created.Add(time.Minute))
	for _, c := range []struct {
		name  string
		event corev1.Event
		want  metav1.Time
	}{
		{"no time given", corev1.Event{}, created},
		{"reported before its creation", corev1.Event{FirstTimestamp: early, LastTimestamp: early}, early},
		{"events.k8s.io", corev1.Event{EventTime: metav1.NewMicroTime(early.Time)}, early},
		{"a series", corev1.Event{EventTime: metav1.NewMicroTime(early.Time),
			Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(later.Time)}}, later},
	} {
		c.event.CreationTimestamp = created
		if got := lastSeen(&c.event); !got.Equal(&c.want) {
			t.Errorf("%s: last seen %v, want %v", c.name, got, c.want)
		}
	}
}
