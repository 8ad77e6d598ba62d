#!/usr/bin/env bash
# Copyright 2026 The Steward Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs every fuzz test of the repository (every `func Fuzz...` in a
# _test.go file) for FUZZTIME each (10s by default), one target per `go
# test` as Go requires, and prints the executions each reached. A failing
# input is written to the package's testdata/fuzz/<target>/; the script
# goes on with the other targets and exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime="${FUZZTIME:-10s}"
# "<package dir> <target>" per line, e.g. "./internal/appstack FuzzGraph".
mapfile -t targets < <(grep -rEo --include='*_test.go' --exclude-dir=.git --exclude-dir=bin --exclude-dir=testdata \
  '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
  sed -E 's|^(.*)/[^/]+:func (Fuzz[A-Za-z0-9_]*)\(.*$|\1 \2|' | sort -u)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz tests found" >&2
  exit 1
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
failed=()
began=$SECONDS
echo "fuzz: ${#targets[@]} targets, ${fuzztime} each"
# deadlineOnly tells Go's own fuzzing flake from a finding: the coordinator
# can report "context deadline exceeded" when -fuzztime ends while a worker
# is mid-input (go.dev/issue/75804, not fixed in Go 1.26), with no failing
# input. A finding always says "Failing input written to".
deadlineOnly() {
  grep -q 'context deadline exceeded' "$1" && ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

fuzzOne() {
  go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" "$1" >"$log" 2>&1
}

for t in "${targets[@]}"; do
  pkg="${t% *}" name="${t#* }"
  start=$SECONDS
  ok=0
  if fuzzOne "$pkg" "$name"; then
    ok=1
  elif deadlineOnly "$log"; then
    # Once more: the flake, not the target, ended that run.
    echo "fuzz: $name ended on the fuzzing engine's deadline flake with no failing input; running it again"
    if fuzzOne "$pkg" "$name"; then ok=1; fi
  fi
  if [ $ok = 1 ]; then
    # The last progress line has the total, e.g. "fuzz: elapsed: 10s,
    # execs: 52181 (5213/sec), ..."; a run that spent its time replaying
    # the corpus ("gathering baseline coverage: 113/124 completed") has none.
    result="$(awk '/execs: [0-9]+/ { sub(/.*execs: /, ""); sub(/ .*/, ""); n = $0 " execs" }
      /gathering baseline coverage/ && n == "" { sub(/.*coverage: /, ""); sub(/ .*/, ""); b = "corpus " $0 }
      END { print (n != "" ? n : (b != "" ? b : "? execs")) }' "$log")"
    printf 'ok    %-24s %-36s %16s  %3ds\n' "$name" "$pkg" "$result" $((SECONDS - start))
  else
    printf 'FAIL  %-24s %-36s %3ds\n' "$name" "$pkg" $((SECONDS - start))
    cat "$log"
    failed+=("$name ($pkg)")
  fi
done
echo "fuzz: done in $((SECONDS - began))s"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
