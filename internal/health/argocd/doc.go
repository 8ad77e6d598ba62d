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

// Package argocd tests the Argo CD health script the Helm chart ships,
// charts/steward/files/argocd/health.lua: it runs the script as Argo CD
// does, with gopher-lua, against objects of every kind in testdata; checks
// in a real API server that the CRDs admit those objects and that the
// merge commands of docs/operating.md work; renders the chart; and keeps
// config/argocd/argocd-cm-health.yaml, the same script as a patch for
// argocd-cm, up to date (go test -update, or hack/argocd-snippet.sh).
//
// A fixture's file name says what it is and what health Argo CD must show:
// <kind>-<health>-<case>.yaml, with kind the kind in lower case and health
// one of healthy, progressing, degraded and suspended. Each holds a whole
// object, as kubectl get -o yaml prints it.
package argocd
