#!/usr/bin/env bash
# Writes config/argocd/argocd-cm-health.yaml, the Argo CD health script of
# the Helm chart (charts/steward/files/argocd/health.lua) as a merge patch
# for argocd-cm.
set -euo pipefail
cd "$(dirname "$0")/.."
go test ./internal/health/argocd -run '^TestSnippet$' -count=1 -update
