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
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/go-logr/logr"
)

// TestQuietStepDown checks which errors a shutdown logs as information:
// the manager's "leader election lost" after its stop, and a request cut by
// the process' own cancellation (a Lease read in flight at SIGTERM, as
// client-go's leader elector logs it); every other error stays an error.
func TestQuietStepDown(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		msg       string
		wantError bool
	}{
		{"step down", errors.New(leaderLost), stepDownMessage, false},
		{"renewal cut by the stop", &url.Error{Op: "Get", URL: "https://127.0.0.1/apis/coordination.k8s.io/v1/leases/x", Err: context.Canceled}, "Error retrieving lease lock", false},
		{"wrapped cancellation", fmt.Errorf("reading: %w", context.Canceled), "Error retrieving lease lock", false},
		{"renewal timed out", &url.Error{Op: "Get", URL: "https://127.0.0.1/", Err: context.DeadlineExceeded}, "Error retrieving lease lock", true},
		{"leadership lost elsewhere", errors.New(leaderLost), "problem running manager", true},
		{"other error", errors.New("connection refused"), "Error retrieving lease lock", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingSink{}
			quietStepDown(logr.New(rec)).WithName("leaderelection").WithValues("k", "v").Error(c.err, c.msg)
			if rec.errors+rec.infos != 1 || (rec.errors == 1) != c.wantError {
				t.Errorf("logged %d errors and %d infos, want an error: %v", rec.errors, rec.infos, c.wantError)
			}
		})
	}
}

// recordingSink counts the lines logged through it and its descendants.
type recordingSink struct{ errors, infos int }

func (*recordingSink) Init(logr.RuntimeInfo)            {}
func (*recordingSink) Enabled(int) bool                 { return true }
func (r *recordingSink) Info(int, string, ...any)       { r.infos++ }
func (r *recordingSink) Error(error, string, ...any)    { r.errors++ }
func (r *recordingSink) WithValues(...any) logr.LogSink { return r }
func (r *recordingSink) WithName(string) logr.LogSink   { return r }
