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

package appstack

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hasKind reports whether the API server serves the kind, asking the
// mapper, which looks the group up again when it does not know it.
func hasKind(mapper meta.RESTMapper, gvk schema.GroupVersionKind) bool {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// cachedFor remembers what check answers for ttl, so that a kind that is
// not installed costs a discovery request at most once per ttl.
func cachedFor(ttl time.Duration, check func() bool) func() bool {
	var mu sync.Mutex
	var at time.Time
	var last bool
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > ttl {
			last, at = check(), time.Now()
		}
		return last
	}
}
