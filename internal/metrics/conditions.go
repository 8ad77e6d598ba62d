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
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// conditionsCollector exports, for every Steward object with a problem
// condition (v1alpha1.ProblemConditions) that is True, the time it turned
// True. Only objects with a problem have series, so the count stays small;
// the alerts compare the value with time().
type conditionsCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

var conditionsDesc = prometheus.NewDesc("steward_condition_true_since_timestamp_seconds",
	"Unix time since which a problem condition (Degraded, Stalled, BackupStale, VerificationStale) of a Steward object has been True; only objects with such a condition have series.",
	[]string{"kind", "namespace", "name", "condition", "reason"}, nil)

// RegisterConditions exports steward_condition_true_since_timestamp_seconds
// from reader (the informer cache, at scrape time). Registering it again, as
// a second manager in one process does, replaces the first: the metric
// reads the newest manager's cache.
func RegisterConditions(reader client.Reader) error {
	if err := registerReplacing(&conditionsCollector{reader: reader, desc: conditionsDesc}); err != nil {
		return fmt.Errorf("registering the condition metric: %w", err)
	}
	return nil
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
	kinds := v1alpha1.ConditionedKinds()
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, kind := range names {
		list := kinds[kind]()
		// Read-only: the cache's objects are not copied at every scrape.
		if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("listing %ss: %w", kind, err))
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(v1alpha1.Conditioned)
			if !ok {
				return nil
			}
			for _, cond := range obj.GetConditions() {
				if cond.Status != "True" || !slices.Contains(v1alpha1.ProblemConditions, cond.Type) {
					continue
				}
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue,
					float64(cond.LastTransitionTime.Unix()),
					kind, obj.GetNamespace(), obj.GetName(), cond.Type, cond.Reason)
			}
			return nil
		})
	}
}
