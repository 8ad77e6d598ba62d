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
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
)

// configIndex indexes WebApps by the AppConfigs their spec.config names.
const configIndex = "appconfig:spec.config.appConfig"

// consumer is one workload found using the AppConfig.
type consumer struct {
	kind, name string
	keys       []string
	// hash is the annotation its pod template carries now.
	hash string
	// healthy: its rollout is complete and its pods are available.
	healthy bool
	// failed says why its rollout failed, when it did.
	failed string
	// plain is a Deployment or StatefulSet opted in by annotation.
	plain client.Object
	// absent: a WebApp without a Deployment yet, which has nothing to roll.
	absent bool
}

// rollOut finds the consumers, works out where each is, starts the rollouts
// of waiting consumers while fewer than maxConcurrent are under way, and
// records it all in st.Consumers. It reports whether a plain consumer is
// rolling out, which no watch reports on.
func (r *Reconciler) rollOut(ctx context.Context, ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, target string, now time.Time) (bool, error) {
	found, err := r.consumers(ctx, ac)
	if err != nil {
		return false, err
	}
	revs := map[string]appconfig.Revision{}
	revision := func(name string) (appconfig.Revision, bool, error) {
		if rev, ok := revs[name]; ok {
			return rev, true, nil
		}
		cm := &corev1.ConfigMap{}
		err := r.get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.RevisionName(name)}, cm)
		switch {
		case apierrors.IsNotFound(err):
			return appconfig.Revision{}, false, nil
		case err != nil:
			return appconfig.Revision{}, false, err
		}
		revs[name] = appconfig.ReadRevision(cm)
		return revs[name], true, nil
	}
	targetRev, ok, err := revision(target)
	if err != nil || !ok {
		return false, fmt.Errorf("reading revision %s: %w", target, err)
	}

	prev := map[string]v1alpha1.ConfigConsumer{}
	for _, c := range st.Consumers {
		prev[c.Kind+"/"+c.Name] = c
	}
	next := make([]v1alpha1.ConfigConsumer, 0, len(found))
	var waiting []int
	inFlight := 0
	poll := false
	for _, c := range found {
		p := prev[c.kind+"/"+c.name]
		entry := v1alpha1.ConfigConsumer{Kind: c.kind, Name: c.name, Keys: c.keys, Revision: p.Revision, State: p.State, Since: p.Since}
		if entry.Revision == "" {
			entry.Revision = target
		}
		runs, ok, err := revision(entry.Revision)
		if err != nil {
			return false, err
		}
		if !ok {
			// Its revision is gone (it cannot be, while it is in use, unless
			// someone deleted it): move it to the target.
			entry.Revision, runs = target, targetRev
		}
		missing := missingKeys(targetRev, c.keys)
		switch {
		case len(missing) > 0:
			// It waits, on whatever it runs, until the keys exist.
			if entry.State != v1alpha1.ConsumerBlocked {
				r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, v1alpha1.ReasonConsumerBlocked, "RollOut",
					"%s %s uses %s, which revision %s does not have", c.kind, c.name, strings.Join(missing, ", "), target)
			}
			setState(&entry, v1alpha1.ConsumerBlocked, fmt.Sprintf("uses %s, which revision %s does not have", strings.Join(missing, ", "), target), now)
		case entry.Revision != target && len(runs.Changed(targetRev, c.keys)) == 0:
			// Equal in the keys it uses: it keeps running what it runs.
			setState(&entry, v1alpha1.ConsumerUpToDate, "", now)
		case entry.Revision != target:
			setState(&entry, v1alpha1.ConsumerPending, "", now)
			waiting = append(waiting, len(next))
		case c.plain != nil && c.hash != targetRev.Hash(c.keys):
			// A plain workload that just opted in, or changed the keys it
			// uses, rolls out once, so that its pods are known to run the
			// current values of its keys.
			setState(&entry, v1alpha1.ConsumerPending, "", now)
			waiting = append(waiting, len(next))
		case c.hash == targetRev.Hash(c.keys) && c.healthy:
			if entry.State == v1alpha1.ConsumerRollingOut {
				r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRolledOut, "RollOut",
					"%s %s runs revision %s", c.kind, c.name, target)
			}
			setState(&entry, v1alpha1.ConsumerUpToDate, "", now)
		case c.failed != "":
			if entry.State != v1alpha1.ConsumerFailed {
				r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, v1alpha1.ReasonRolloutFailed, "RollOut",
					"Rollout of revision %s to %s %s failed: %s", target, c.kind, c.name, c.failed)
			}
			setState(&entry, v1alpha1.ConsumerFailed, c.failed, now)
			inFlight++
		default:
			setState(&entry, v1alpha1.ConsumerRollingOut, "", now)
			if !c.absent {
				inFlight++
			}
			poll = poll || c.plain != nil
		}
		next = append(next, entry)
	}

	for _, i := range waiting {
		if inFlight >= maxConcurrent(ac) {
			break
		}
		entry := &next[i]
		c := found[i]
		runs, _, err := revision(entry.Revision)
		if err != nil {
			return false, err
		}
		changed := runs.Changed(targetRev, c.keys)
		why := "keys " + strings.Join(changed, ", ") + " changed"
		if entry.Revision == target {
			why = "it opted in or changed the keys it uses"
		}
		if c.plain != nil {
			if err := r.restartPlain(ctx, ac, c, targetRev.Hash(c.keys)); err != nil {
				return false, err
			}
			poll = true
		}
		r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRollingOut, "RollOut",
			"Rolling out revision %s to %s %s: %s", target, c.kind, c.name, why)
		entry.Revision = target
		setState(entry, v1alpha1.ConsumerRollingOut, "", now)
		inFlight++
	}
	st.Consumers = next
	return poll, nil
}

func setState(c *v1alpha1.ConfigConsumer, s v1alpha1.ConsumerState, msg string, now time.Time) {
	if c.State != s || c.Since == nil {
		t := metav1.NewTime(now)
		c.Since = &t
	}
	c.State, c.Message = s, msg
}

func missingKeys(rev appconfig.Revision, keys []string) []string {
	var missing []string
	for _, k := range keys {
		if !rev.Has(k) {
			missing = append(missing, k)
		}
	}
	return missing
}

// consumers finds the WebApps whose spec.config names the AppConfig, from
// the cache, and the Deployments and StatefulSets whose steward.dev/appconfig
// annotation does, from the API server, sorted by kind and name.
func (r *Reconciler) consumers(ctx context.Context, ac *v1alpha1.AppConfig) ([]consumer, error) {
	var out []consumer
	apps := &v1alpha1.WebAppList{}
	if err := r.Client.List(ctx, apps, client.InNamespace(ac.Namespace), client.MatchingFields{configIndex: ac.Name}); err != nil {
		return nil, fmt.Errorf("listing WebApps that use AppConfig %s: %w", ac.Name, err)
	}
	for i := range apps.Items {
		app := &apps.Items[i]
		if !app.DeletionTimestamp.IsZero() {
			continue
		}
		c := consumer{kind: v1alpha1.ConsumerKindWebApp, name: app.Name}
		for _, use := range app.Spec.Config {
			if use.AppConfig == ac.Name {
				c.keys = slices.Sorted(slices.Values(use.Keys))
			}
		}
		dep := &appsv1.Deployment{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(app), dep)
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		if err == nil && metav1.IsControlledBy(dep, app) {
			c.hash = dep.Spec.Template.Annotations[v1alpha1.AppConfigAnnotation(ac.Name)]
			c.healthy, c.failed = deploymentHealth(dep)
		} else {
			c.absent = true
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b consumer) int { return strings.Compare(a.name, b.name) })

	// Only the metadata of every Deployment and StatefulSet is listed; the
	// few that opt in are then read whole.
	var plain []consumer
	for _, kind := range []string{v1alpha1.ConsumerKindDeployment, v1alpha1.ConsumerKindStatefulSet} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(kind + "List"))
		if err := r.APIReader.List(ctx, list, client.InNamespace(ac.Namespace)); err != nil {
			return nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		for i := range list.Items {
			keys, ok := optedIn(&list.Items[i], ac.Name)
			if !ok {
				continue
			}
			c := consumer{kind: kind, name: list.Items[i].Name, keys: keys}
			key := client.ObjectKey{Namespace: ac.Namespace, Name: c.name}
			var tmpl *corev1.PodTemplateSpec
			var err error
			switch kind {
			case v1alpha1.ConsumerKindDeployment:
				d := &appsv1.Deployment{}
				err = r.APIReader.Get(ctx, key, d)
				c.plain, tmpl = d, &d.Spec.Template
				c.healthy, c.failed = deploymentHealth(d)
			default:
				s := &appsv1.StatefulSet{}
				err = r.APIReader.Get(ctx, key, s)
				c.plain, tmpl = s, &s.Spec.Template
				c.healthy = statefulSetHealthy(s)
			}
			switch {
			case apierrors.IsNotFound(err):
				continue // deleted since the list
			case err != nil:
				return nil, fmt.Errorf("reading %s %s: %w", kind, c.name, err)
			}
			c.hash = tmpl.Annotations[v1alpha1.AppConfigAnnotation(ac.Name)]
			plain = append(plain, c)
		}
	}
	slices.SortFunc(plain, func(a, b consumer) int {
		return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name)
	})
	return append(out, plain...), nil
}

// optedIn reports whether the workload's steward.dev/appconfig annotation
// names the AppConfig, and the keys it uses.
func optedIn(obj client.Object, appConfig string) ([]string, bool) {
	names, ok := obj.GetAnnotations()[v1alpha1.AnnotationAppConfigConsumer]
	if !ok || !slices.Contains(splitList(names), appConfig) {
		return nil, false
	}
	keys := splitList(obj.GetAnnotations()[v1alpha1.AnnotationAppConfigKeys])
	slices.Sort(keys)
	return slices.Compact(keys), true
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// deploymentHealth reports whether a Deployment's rollout is complete and
// its pods available, or why its rollout failed.
func deploymentHealth(d *appsv1.Deployment) (healthy bool, failed string) {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return false, fmt.Sprintf("Deployment %s: %s", d.Name, c.Message)
		}
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas >= replicas &&
		s.AvailableReplicas >= replicas && s.Replicas == s.UpdatedReplicas, ""
}

func statefulSetHealthy(s *appsv1.StatefulSet) bool {
	replicas := int32(1)
	if s.Spec.Replicas != nil {
		replicas = *s.Spec.Replicas
	}
	st := s.Status
	return st.ObservedGeneration >= s.Generation && st.UpdatedReplicas >= replicas &&
		st.ReadyReplicas >= replicas && (st.UpdateRevision == "" || st.CurrentRevision == st.UpdateRevision)
}

// restartPlain sets the hash annotation on a plain workload's pod template,
// which rolls it out.
func (r *Reconciler) restartPlain(ctx context.Context, ac *v1alpha1.AppConfig, c consumer, hash string) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, v1alpha1.AppConfigAnnotation(ac.Name), hash)
	if err := r.Client.Patch(ctx, c.plain, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("rolling out %s %s: %w", c.kind, c.name, err)
	}
	return nil
}
