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
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// TestAutoGrowAdmission sends Databases with spec.storage.autoGrow to the
// API server with the generated CRD.
func TestAutoGrowAdmission(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name    string
		size    v1alpha1.DatabaseSize
		storage *resource.Quantity
		auto    v1alpha1.DatabaseAutoGrow
		invalid string
	}{
		{name: "maximum above size", storage: new(q("1Gi")), auto: v1alpha1.DatabaseAutoGrow{Maximum: q("10Gi")}},
		{name: "maximum equal to size", storage: new(q("1Gi")), auto: v1alpha1.DatabaseAutoGrow{Maximum: q("1Gi")}},
		{name: "maximum below size", storage: new(q("2Gi")), auto: v1alpha1.DatabaseAutoGrow{Maximum: q("1Gi")},
			invalid: "storage.autoGrow.maximum must not be smaller than the volume size"},
		{name: "maximum below the preset's size", size: v1alpha1.SizeMedium, auto: v1alpha1.DatabaseAutoGrow{Maximum: q("5Gi")},
			invalid: "storage.autoGrow.maximum must not be smaller"},
		{name: "maximum above the small preset's size", auto: v1alpha1.DatabaseAutoGrow{Maximum: q("5Gi")}},
		{name: "threshold too low", auto: v1alpha1.DatabaseAutoGrow{ThresholdPercent: 40, Maximum: q("5Gi")},
			invalid: "thresholdPercent"},
		{name: "threshold too high", auto: v1alpha1.DatabaseAutoGrow{ThresholdPercent: 96, Maximum: q("5Gi")},
			invalid: "thresholdPercent"},
		{name: "increment too high", auto: v1alpha1.DatabaseAutoGrow{IncrementPercent: 101, Maximum: q("5Gi")},
			invalid: "incrementPercent"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			auto := c.auto
			db := &v1alpha1.Database{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("grow%d", i)},
				Spec: v1alpha1.DatabaseSpec{Version: "16", Size: c.size,
					Storage: v1alpha1.DatabaseStorage{Size: c.storage, AutoGrow: &auto}},
			}
			err := k8s.Create(context.Background(), db)
			if c.invalid != "" {
				expectInvalid(t, err, c.invalid)
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			got := db.Spec.Storage.AutoGrow
			if got.ThresholdPercent == 0 || got.IncrementPercent == 0 {
				t.Errorf("not defaulted: %+v", got)
			}
		})
	}
}
