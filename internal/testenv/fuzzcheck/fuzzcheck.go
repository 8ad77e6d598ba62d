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

// Package fuzzcheck holds what the fuzz tests of several packages share:
// turning fuzz input into choices, and checks of built objects.
package fuzzcheck

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Knobs hands out the bytes of a fuzz input one at a time, 0 once spent,
// to choose the optional settings of a spec.
type Knobs []byte

// Next is the next byte, or 0 once all are spent.
func (k *Knobs) Next() byte {
	if len(*k) == 0 {
		return 0
	}
	b := (*k)[0]
	*k = (*k)[1:]
	return b
}

// Labels reports the first invalid label key or value, or that there are
// no labels at all.
func Labels(labels map[string]string) error {
	if len(labels) == 0 {
		return errors.New("no labels")
	}
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	return nil
}
