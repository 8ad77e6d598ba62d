#!/usr/bin/env bash
# layout-report.sh prints what the layout of the code looks like: which
# controller package imports which other package of Steward, how many
# imports go from one controller to another (the target is none), and the
# longest and most branching function of each controller package.
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(go list -m)

echo "# imports of Steward's own packages, by controller package"
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./internal/controller/... |
	while read -r pkg imports; do
		own=$(tr ' ' '\n' <<<"$imports" | grep "^$module/" | sed "s#^$module/##" | tr '\n' ' ' || true)
		echo "${pkg#"$module"/}: $own"
	done

echo
echo -n "# controller -> controller imports: "
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./internal/controller/... |
	awk -v m="$module/internal/controller/" '{for (i = 2; i <= NF; i++) if (index($i, m) == 1) n++} END {print n + 0}'

echo
echo "# function sizes (non-test code)"
go run ./hack/funcsize internal/controller/*
