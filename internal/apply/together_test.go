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

package apply

import (
	"errors"
	"sync"
	"testing"
)

// TestTogether runs every function, at the same time, and reports the
// first failure in their order, not in the order they finished.
func TestTogether(t *testing.T) {
	var started sync.WaitGroup
	started.Add(3)
	first, second := errors.New("first"), errors.New("second")
	ran := make([]bool, 3)
	wait := func(i int, err error) func() error {
		return func() error {
			started.Done()
			started.Wait() // returns only once all three run at once
			ran[i] = true
			return err
		}
	}
	if err := Together(wait(0, nil), wait(1, first), wait(2, second)); !errors.Is(err, first) {
		t.Errorf("Together = %v, want %v", err, first)
	}
	for i, r := range ran {
		if !r {
			t.Errorf("function %d did not run", i)
		}
	}
	if err := Together(); err != nil {
		t.Errorf("Together() = %v, want nil", err)
	}
}
