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

package appconfig

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/fieldindex"
)

// WebAppUses is the field index of WebApps by the AppConfigs their
// spec.config names, registered on its first lookup. Each controller that
// needs it names it on its own, as registering one name twice is an error.
func WebAppUses(indexer client.FieldIndexer, name string) *fieldindex.Index {
	return fieldindex.New(indexer, &v1alpha1.WebApp{}, name, func(o client.Object) []string {
		return o.(*v1alpha1.WebApp).AppConfigNames()
	})
}
