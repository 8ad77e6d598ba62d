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
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// IndexWebAppUses registers a field index of WebApps by the AppConfigs
// their spec.config names. Each controller that needs it registers it under
// its own name, as registering one name twice is an error.
func IndexWebAppUses(ctx context.Context, indexer client.FieldIndexer, name string) error {
	err := indexer.IndexField(ctx, &v1alpha1.WebApp{}, name, func(o client.Object) []string {
		return o.(*v1alpha1.WebApp).AppConfigNames()
	})
	if err != nil {
		return fmt.Errorf("indexing WebApps by AppConfig: %w", err)
	}
	return nil
}
