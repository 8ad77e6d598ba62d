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

// Package webhook holds Steward's admission webhooks. They are thin: the
// rules live in pure packages (internal/appconfig, internal/appstack, the
// engines' parameter checks in internal/engine) that the reconcilers share,
// and a webhook only turns their findings into an admission answer.
//
// The kubebuilder markers here generate config/webhook/manifests.yaml
// (make manifests). The Helm chart carries its own copy of that
// configuration, named after the release.
//
// +kubebuilder:webhookconfiguration:mutating=false,name=steward-validating-webhook-configuration
package webhook
