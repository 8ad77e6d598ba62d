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

package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/steward-dev/steward/api/v1alpha1"
)

func TestGrowDecision(t *testing.T) {
	const mi = 1 << 20
	q := resource.MustParse
	auto := func(threshold, increment int32, maximum string) v1alpha1.DatabaseStorage {
		return v1alpha1.DatabaseStorage{AutoGrow: &v1alpha1.DatabaseAutoGrow{
			ThresholdPercent: threshold, IncrementPercent: increment, Maximum: q(maximum)}}
	}
	use := func(used, capacity int64) []v1alpha1.VolumeUsage {
		return []v1alpha1.VolumeUsage{{Instance: "db-0", UsedBytes: used, CapacityBytes: capacity}}
	}
	cases := []struct {
		name       string
		storage    v1alpha1.DatabaseStorage
		current    string
		volumes    []v1alpha1.VolumeUsage
		expandable bool
		grow       bool
		next       string
		blocked    bool
		reason     string
	}{
		{name: "no autoGrow", storage: v1alpha1.DatabaseStorage{}, current: "1Gi", volumes: use(99, 100),
			expandable: true, next: "1Gi"},
		{name: "no usage yet", storage: auto(80, 20, "2Gi"), current: "1Gi", expandable: true,
			next: "1Gi", reason: v1alpha1.ReasonNoUsageReported},
		{name: "a volume without capacity is no usage", storage: auto(80, 20, "2Gi"), current: "1Gi",
			volumes: use(10, 0), expandable: true, next: "1Gi", reason: v1alpha1.ReasonNoUsageReported},
		{name: "below the threshold", storage: auto(80, 20, "2Gi"), current: "1Gi", volumes: use(79, 100),
			expandable: true, next: "1Gi", reason: v1alpha1.ReasonBelowThreshold},
		{name: "at the threshold grows by the increment", storage: auto(80, 20, "2Gi"), current: "1Gi",
			volumes: use(80, 100), expandable: true, grow: true, next: "1229Mi", reason: v1alpha1.ReasonGrowing},
		{name: "rounded up to a MiB", storage: auto(80, 20, "1Gi"), current: "64Mi",
			volumes: use(60*mi, 64*mi), expandable: true, grow: true, next: "77Mi", reason: v1alpha1.ReasonGrowing},
		{name: "defaults when unset", storage: auto(0, 0, "1Gi"), current: "100Mi",
			volumes: use(80, 100), expandable: true, grow: true, next: "120Mi", reason: v1alpha1.ReasonGrowing},
		{name: "the fullest instance decides", storage: auto(90, 50, "1Gi"), current: "100Mi",
			volumes:    []v1alpha1.VolumeUsage{{Instance: "db-0", UsedBytes: 10, CapacityBytes: 100}, {Instance: "db-1", UsedBytes: 95, CapacityBytes: 100}},
			expandable: true, grow: true, next: "150Mi", reason: v1alpha1.ReasonGrowing},
		{name: "capped at the maximum", storage: auto(80, 100, "150Mi"), current: "100Mi",
			volumes: use(99, 100), expandable: true, grow: true, next: "150Mi", reason: v1alpha1.ReasonGrowing},
		{name: "maximum reached", storage: auto(80, 20, "1Gi"), current: "1Gi", volumes: use(99, 100),
			expandable: true, next: "1Gi", blocked: true, reason: v1alpha1.ReasonMaximumReached},
		{name: "never shrinks to a lower maximum", storage: auto(80, 20, "1Gi"), current: "2Gi", volumes: use(99, 100),
			expandable: true, next: "2Gi", blocked: true, reason: v1alpha1.ReasonMaximumReached},
		{name: "the class cannot expand", storage: auto(80, 20, "2Gi"), current: "1Gi", volumes: use(99, 100),
			next: "1Gi", blocked: true, reason: v1alpha1.ReasonStorageClassCannotExpand},
		{name: "below the threshold on a class that cannot expand is fine", storage: auto(80, 20, "2Gi"), current: "1Gi",
			volumes: use(50, 100), next: "1Gi", reason: v1alpha1.ReasonBelowThreshold},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.storage.GrowDecision(q(c.current), c.volumes, c.expandable)
			if d.Grow != c.grow || d.Blocked != c.blocked || d.Reason != c.reason {
				t.Errorf("grow %v, blocked %v, reason %q; want %v, %v, %q (%s)", d.Grow, d.Blocked, d.Reason, c.grow, c.blocked, c.reason, d.Message)
			}
			if want := q(c.next); d.Next.Cmp(want) != 0 {
				t.Errorf("next = %s, want %s", d.Next.String(), want.String())
			}
			if d.Next.Cmp(q(c.current)) < 0 {
				t.Errorf("next %s is smaller than current %s", d.Next.String(), c.current)
			}
			if c.reason != "" && d.Message == "" {
				t.Error("no message")
			}
		})
	}
}

func TestReportPredatesGrowth(t *testing.T) {
	cases := []struct {
		reported  int64
		grownFrom string
		want      bool
	}{
		{reported: 1000, grownFrom: "", want: false},     // never grown
		{reported: 1000, grownFrom: "1000", want: true},  // the report the growth was decided on
		{reported: 900, grownFrom: "1000", want: true},   // older still
		{reported: 1500, grownFrom: "1000", want: false}, // the grown file system
		{reported: 1000, grownFrom: "0", want: false},    // grown before any report
		{reported: 1000, grownFrom: "x", want: false},    // not Steward's value: ignored
	}
	for _, c := range cases {
		if got := v1alpha1.ReportPredatesGrowth(c.reported, c.grownFrom); got != c.want {
			t.Errorf("ReportPredatesGrowth(%d, %q) = %v, want %v", c.reported, c.grownFrom, got, c.want)
		}
	}
}
