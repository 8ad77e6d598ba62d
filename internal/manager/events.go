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
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxEventNote is the longest note the API server accepts in an Event: a
// longer one is refused and the event is lost.
const maxEventNote = 1024

// shortNotes shortens an event's note to maxEventNote bytes, ending it with
// "…", so that an event quoting a long error (a failed clone's output, a
// pod's termination message) is still recorded.
type shortNotes struct{ events.EventRecorder }

func (r shortNotes) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", shorten(fmt.Sprintf(note, args...), maxEventNote))
}

// shorten cuts s to at most limit bytes on a rune boundary, with "…".
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
