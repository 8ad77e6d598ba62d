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
	"regexp"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// registered are the collectors this package registers at start-up.
var registered []prometheus.Collector

// mustRegister registers cs with controller-runtime's registry, which the
// manager serves at /metrics, and remembers them for Declared.
func mustRegister(cs ...prometheus.Collector) {
	ctrlmetrics.Registry.MustRegister(cs...)
	registered = append(registered, cs...)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Declared returns the names of the metric families Steward's own
// collectors export once they have a series: a vector exports nothing
// before its first observation (no failed Backup yet, no failover yet), so
// a scrape alone does not show every family the operator has. The phase
// gauges, the condition metric and the webhook certificate's expiry are
// registered by the manager and included too.
func Declared() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range registered {
			c.Describe(ch)
		}
		(&conditionsCollector{desc: conditionsDesc}).Describe(ch)
		ch <- certificateDesc
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}
