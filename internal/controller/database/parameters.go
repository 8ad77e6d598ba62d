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

package database

import (
	"strings"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/engine"
)

// invalidParameters refuses the values of spec.parameters the engine would
// refuse, with engine.CheckParameters as the admission webhook does: the
// defence for a Database the webhook did not see (the webhooks off with
// --webhook-port=0, failurePolicy Ignore, or stored before the check). The
// message lists every one, e.g.
//
//	spec.parameters.max_connections: -5 is out of range: between 1 and 262143; spec.parameters.shared_buffers: "not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)
//
// Nothing is rendered or applied meanwhile: the pods keep running the
// configuration they have.
func invalidParameters(db *v1alpha1.Database, eng engine.Engine) *conditions.Problem {
	bad := engine.CheckParameters(eng, db.Spec.Parameters)
	if len(bad) == 0 {
		return nil
	}
	msgs := make([]string, len(bad))
	for i, p := range bad {
		msgs[i] = "spec.parameters." + p.Key + ": " + p.Err.Error()
	}
	return &conditions.Problem{Reason: v1alpha1.ReasonInvalidParameters, Message: strings.Join(msgs, "; ")}
}
