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

package appconfig

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
)

// child pairs the desired state of one rendered object with its live
// object.
type child struct {
	// desired is nil when the live object goes.
	desired runtime.ApplyConfiguration
	// live is the object in the cache, or an empty one of its type.
	live client.Object
}

// carryOut does what the plan says, in order: it creates the hash key,
// applies the latest revision and "<application>-config", rolls out the
// plain consumers that start, and deletes the pruned revisions. An apply
// that only the user can fix stops it with a problem.
func (r *Reconciler) carryOut(ctx context.Context, ac *v1alpha1.AppConfig, obs observed, p plan) (*conditions.Problem, error) {
	if p.hashKey != nil {
		// Not found in the cache nor the API server: a concurrent creation
		// fails here, and the retry reads the key it made.
		if err := r.Client.Create(ctx, p.hashKey); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", p.hashKey.Name, err)
		}
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	for _, c := range p.children(obs) {
		var err error
		if c.desired == nil {
			err = applier.Delete(ctx, c.live, ac.UID)
		} else {
			err = applier.Apply(ctx, c.desired, c.live, ac.UID)
		}
		if reason, ok := apply.UserError(err); ok {
			return &conditions.Problem{Reason: reason, Message: err.Error()}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if err := r.restart(ctx, ac, p.starts); err != nil {
		return nil, err
	}
	for _, obj := range p.deletes {
		if err := applier.Delete(ctx, obj, ac.UID); err != nil {
			return nil, fmt.Errorf("pruning an old revision of AppConfig %s: %w", ac.Name, err)
		}
	}
	return nil, nil
}

// children are the rendered objects the plan applies, in order, with their
// live objects: the latest revision's ConfigMap and Secret, then
// "<application>-config" and its Secret, which goes when the current
// revision has no secret values.
func (p plan) children(obs observed) []child {
	var out []child
	if p.revision != nil {
		out = append(out, child{p.revision, orEmpty(find(obs.configMaps, *p.revision.Name))})
	}
	if p.revisionSecret != nil {
		out = append(out, child{p.revisionSecret, orEmpty(find(obs.secretObjects, *p.revisionSecret.Name))})
	}
	if p.configMap == nil {
		return out
	}
	out = append(out, child{p.configMap, obs.config})
	secret := child{live: obs.configSecret}
	if p.configSecret != nil {
		secret.desired = p.configSecret
	}
	return append(out, secret)
}

// restart rolls out the plain consumers that start: it sets the hash of
// the keys they use on their pod templates. A WebApp rolls out when the
// status assigns it the revision.
func (r *Reconciler) restart(ctx context.Context, ac *v1alpha1.AppConfig, starts []start) error {
	for _, s := range starts {
		if s.plain == nil {
			continue
		}
		if err := r.Client.Patch(ctx, s.plain, client.RawPatch(types.MergePatchType, RestartPatch(ac, s.hash))); err != nil {
			return fmt.Errorf("rolling out %s %s: %w", s.kind, s.name, err)
		}
	}
	return nil
}
