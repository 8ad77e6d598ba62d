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
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// conditionsCollector exports, for every Steward object with a problem
// condition (v1alpha1.ProblemConditions) that is True, the time it turned
// True. Only objects with a problem have series, so the count stays small;
// the alerts compare the value with time(). Each kind's objects are
// followed from its informer's events (see follower), keeping only the
// objects with a problem.
type conditionsCollector struct {
	kinds []conditionedKind
	desc  *prometheus.Desc
}

// conditionedKind is one kind's objects with a problem.
type conditionedKind struct {
	name    string
	objects *follower[troubled]
}

// troubled is an object with a True problem condition.
type troubled struct {
	namespace, name string
	problems        []metav1.Condition
}

var conditionsDesc = prometheus.NewDesc("steward_condition_true_since_timestamp_seconds",
	"Unix time since which a problem condition (Degraded, Stalled, BackupStale, VerificationStale) of a Steward object has been True; only objects with such a condition have series.",
	[]string{"kind", "namespace", "name", "condition", "reason"}, nil)

// RegisterConditions exports steward_condition_true_since_timestamp_seconds
// from c (the informer cache, at scrape time) once elected closes (the
// manager's Elected). Registering it again, as a second manager in one
// process does, replaces the first: the metric reads the newest manager's
// cache.
func RegisterConditions(c Cache, elected <-chan struct{}) error {
	if err := registerReplacing(newConditionsCollector(c, elected, conditionsDesc)); err != nil {
		return fmt.Errorf("registering the condition metric: %w", err)
	}
	return nil
}

func newConditionsCollector(c Cache, elected <-chan struct{}, desc *prometheus.Desc) *conditionsCollector {
	kinds := v1alpha1.ConditionedKinds()
	names := slices.Sorted(maps.Keys(kinds))
	collector := &conditionsCollector{desc: desc}
	for _, name := range names {
		collector.kinds = append(collector.kinds, conditionedKind{name: name, objects: newFollower(c, elected, kinds[name], problemsOf)})
	}
	return collector
}

// problemsOf is an object's True problem conditions; false without any.
func problemsOf(o client.Object) (troubled, bool) {
	obj, ok := o.(v1alpha1.Conditioned)
	if !ok {
		return troubled{}, false
	}
	t := troubled{namespace: o.GetNamespace(), name: o.GetName()}
	for _, cond := range obj.GetConditions() {
		if cond.Status == metav1.ConditionTrue && slices.Contains(v1alpha1.ProblemConditions, cond.Type) {
			// Only what the series carries: not the message.
			t.problems = append(t.problems, metav1.Condition{Type: cond.Type, Reason: cond.Reason, LastTransitionTime: cond.LastTransitionTime})
		}
	}
	return t, len(t.problems) > 0
}

// registerReplacing registers c, replacing an equal collector registered
// before: the operator builds a new manager, with a new cache, after it
// loses the leadership, and the metrics must read the live one.
func registerReplacing(c prometheus.Collector) error {
	err := ctrlmetrics.Registry.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		ctrlmetrics.Registry.Unregister(dup.ExistingCollector)
		err = ctrlmetrics.Registry.Register(c)
	}
	return err
}

func (c *conditionsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *conditionsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, kind := range c.kinds {
		err := kind.objects.each(ctx, func(t troubled) {
			for _, cond := range t.problems {
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue,
					float64(cond.LastTransitionTime.Unix()),
					kind.name, t.namespace, t.name, cond.Type, cond.Reason)
			}
		})
		if err != nil && !errors.Is(err, errNoFigures) {
			ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("listing %ss: %w", kind.name, err))
		}
	}
}
