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

package manager

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

// TestShortNotes keeps every event note within the API server's 1,024
// bytes, whole runes only: a longer one is refused and the event lost.
func TestShortNotes(t *testing.T) {
	fake := events.NewFakeRecorder(1)
	r := shortNotes{fake}
	long := strings.Repeat("é", 600) // 1,200 bytes
	r.Eventf(&corev1.Pod{}, nil, corev1.EventTypeWarning, "CloneFailed", "Clone", "cloning failed: %s", long)
	got := <-fake.Events
	_, note, ok := strings.Cut(got, "CloneFailed ")
	if !ok {
		t.Fatalf("event %q", got)
	}
	if len(note) > maxEventNote || !utf8.ValidString(note) || !strings.HasSuffix(note, "…") {
		t.Errorf("note of %d bytes, valid UTF-8 %v: %q", len(note), utf8.ValidString(note), note[len(note)-10:])
	}
	r.Eventf(&corev1.Pod{}, nil, corev1.EventTypeNormal, "Ready", "Ready", "%d of %d ready", 3, 3)
	if got := <-fake.Events; !strings.HasSuffix(got, "3 of 3 ready") {
		t.Errorf("a short note became %q", got)
	}
}
