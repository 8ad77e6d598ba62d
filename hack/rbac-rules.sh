#!/usr/bin/env bash
# Copies the rules of each role controller-gen generated into
# config/rbac/role.yaml (from the code's +kubebuilder:rbac markers) into the
# Helm chart, one file per role, for charts/steward/templates/rbac.yaml:
#
#   ClusterRole steward-manager          files/rules.yaml                 namespaced kinds; bound cluster-wide or per watched namespace
#   ClusterRole steward-manager-cluster  files/rules-cluster.yaml         cluster-scoped kinds; bound cluster-wide
#   Role steward-leader-election         files/rules-leader-election.yaml the Lease, in the release namespace
#   Role steward-webhook-cert            files/rules-webhook-cert.yaml    the webhook certificate Secret, in the release namespace
#
# A role it does not know (a marker with a new roleName) is an error, so
# that no rule is left out of the chart unnoticed.
set -euo pipefail
cd "$(dirname "$0")/.."
role=config/rbac/role.yaml
files=${1:-charts/steward/files}

rm -f "$files"/rules*.yaml
awk -v files="$files" '
	function target(name) {
		if (name == "steward-manager") return "rules.yaml"
		if (name == "steward-manager-cluster") return "rules-cluster.yaml"
		if (name == "steward-leader-election") return "rules-leader-election.yaml"
		if (name == "steward-webhook-cert") return "rules-webhook-cert.yaml"
		printf "hack/rbac-rules.sh: role %s of %s has no file in the chart\n", name, FILENAME > "/dev/stderr"
		failed = 1
		exit 1
	}
	/^---/ { out = ""; name = ""; next }
	/^  name: / && name == "" { name = $2 }
	/^rules:/ { out = files "/" target(name) }
	out != "" { print > out }
	END { if (failed) exit 1 }
' "$role"
