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
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Typed lets Applier.Apply apply a typed object of a kind that has no
// generated apply configuration, such as Steward's own kinds. The object
// must carry its apiVersion and kind. Only what its JSON encoding holds is
// sent, without status: fields left empty with omitempty stay unowned.
type Typed struct {
	Object client.Object
}

// IsApplyConfiguration marks Typed as an apply configuration.
func (Typed) IsApplyConfiguration() {}

// GetName is the object's name.
func (t Typed) GetName() *string {
	name := t.Object.GetName()
	return &name
}

// MarshalJSON encodes the object without its status and without the empty
// creationTimestamp a typed object always encodes.
func (t Typed) MarshalJSON() ([]byte, error) {
	m, err := toMap(t.Object)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	return json.Marshal(m)
}
