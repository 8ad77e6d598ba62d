#!/usr/bin/env bash
# Runs the tests of every package for make test, then, when FUZZTIME is set,
# every fuzz test for that long (hack/fuzz.sh). The real-node suite is the
# longest and mostly waits for pods, so it starts first, beside the other
# packages and the fuzz tests, instead of after them; its output follows
# theirs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
realnode=./test/e2e/realnode
log=$(mktemp)
pkglog=$(mktemp)
times=$(mktemp)
trap 'rm -f "$log" "$pkglog" "$times"' EXIT
# Its tests that run side by side mostly wait for pods: more of them at once
# than the machine's cores (go test's default -parallel).
realparallel=${REALNODE_PARALLEL:-4}
# shellcheck disable=SC2086 # GO_TEST_FLAGS holds several flags.
STEWARD_REALNODE_TIMES=$times go test ${GO_TEST_FLAGS:-} -parallel "$realparallel" "$realnode" >"$log" 2>&1 &
pid=$!
rc=0
# shellcheck disable=SC2046,SC2086
go test ${GO_TEST_FLAGS:-} $(go list ./... | grep -v "/test/e2e/realnode$") 2>&1 | tee "$pkglog" || rc=$?
fuzzrc=0
if [ -n "${FUZZTIME:-}" ]; then
  hack/fuzz.sh 2>&1 | tee -a "$pkglog" || fuzzrc=$?
fi
realrc=0
wait "$pid" || realrc=$?
cat "$log"
if [ -s "$times" ]; then
  echo "$realnode, each test's time:"
  cat "$times"
fi
if [ "$rc" -ne 0 ] || [ "$fuzzrc" -ne 0 ] || [ "$realrc" -ne 0 ]; then
  # The real-node suite's dump of the cluster can be long: what failed is
  # repeated after it.
  echo "make test: what failed" >&2
  awk -v keep=15 -f hack/failed-tests.awk "$pkglog" "$log" >&2
  echo "make test: failed (packages: exit $rc, fuzz tests: exit $fuzzrc, $realnode: exit $realrc)" >&2
  exit 1
fi
