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

// Package metrics holds Steward's own Prometheus metrics. They are served on
// the manager's /metrics endpoint beside controller-runtime's.
package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TimeToFirstReady observes, per kind, the seconds from an object's creation
// to the first time it is Ready.
var TimeToFirstReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "steward_time_to_first_ready_seconds",
	Help:    "Seconds from an object's creation until it first became Ready, per kind.",
	Buckets: prometheus.ExponentialBuckets(0.25, 2, 15), // 0.25 s to about 68 min
}, []string{"kind"})

func init() {
	mustRegister(TimeToFirstReady)
}

// ObserveFirstReady records that an object of kind created at created just
// became Ready for the first time.
func ObserveFirstReady(kind string, created time.Time) {
	TimeToFirstReady.WithLabelValues(kind).Observe(time.Since(created).Seconds())
}

// PhaseCounter counts the objects of one kind in each phase. It is called at
// scrape time and reads from the informer cache, so the figures are exact
// after restarts and fail-overs.
type PhaseCounter func(ctx context.Context) (map[string]int, error)

// phaseCollector exports a gauge per phase.
type phaseCollector struct {
	desc   *prometheus.Desc
	phases []string
	count  PhaseCounter
}

// RegisterPhases exports steward_<plural>{phase} with the number of objects in
// each of phases, which are always all reported, zero or not.
func RegisterPhases(plural, kind string, phases []string, count PhaseCounter) error {
	return ctrlmetrics.Registry.Register(newPhaseCollector(plural, kind, phases, count))
}

func newPhaseCollector(plural, kind string, phases []string, count PhaseCounter) *phaseCollector {
	return &phaseCollector{
		desc: prometheus.NewDesc("steward_"+plural,
			"Number of "+kind+" objects in each phase.", []string{"phase"}, nil),
		phases: phases,
		count:  count,
	}
}

// RegisterListPhases exports steward_<plural>{phase}, counting the objects
// newList lists from c by phaseOf: from the events of the kind's informer
// once the controllers have started it (a follower), by a list until then.
// An object whose phaseOf is empty, one whose first status Steward has not
// written yet (or holds back), counts in phases[0], each kind's Pending: the
// phases of a kind always add up to its number of objects.
// Only the leader exports it, once elected closes (the manager's Elected):
// a replica waiting for the leadership exports no series of it.
// Registering the same metric again, as a second manager in one process
// does, replaces the first.
func RegisterListPhases(c Cache, elected <-chan struct{}, newList func() client.ObjectList, plural, kind string, phases []string, phaseOf func(client.Object) string) error {
	if err := registerReplacing(newListPhaseCollector(c, elected, newList, plural, kind, phases, phaseOf)); err != nil {
		return fmt.Errorf("registering %s metrics: %w", kind, err)
	}
	return nil
}

func newListPhaseCollector(c Cache, elected <-chan struct{}, newList func() client.ObjectList, plural, kind string, phases []string, phaseOf func(client.Object) string) *phaseCollector {
	objects := newFollower(c, elected, newList, func(o client.Object) (string, bool) {
		return cmp.Or(phaseOf(o), phases[0]), true
	})
	return newPhaseCollector(plural, kind, phases, func(ctx context.Context) (map[string]int, error) {
		counts := map[string]int{}
		err := objects.each(ctx, func(phase string) { counts[phase]++ })
		return counts, err
	})
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.count(ctx)
	if errors.Is(err, errNoFigures) {
		return // no figures rather than zeros the process does not know
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, p := range c.phases {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[p]), p)
	}
}
