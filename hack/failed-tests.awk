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

# Reads `go test` output and prints what failed: each failed test's header
# with the last `keep` lines it logged (a failure's own message comes last),
# packages' FAIL lines, panics and set-up failures. hack/test.sh prints it
# last, so that a log read from its end starts with what failed. A test that
# dumps diagnostics when it fails first logs a line holding `marker`: the
# lines kept are the ones before it, where the failure is, and the dump is
# counted, not repeated.
BEGIN { marker = "the diagnostics of this failure follow" }
function flush() {
  if (head == "") return
  print head
  from = n > keep ? n - keep + 1 : 1
  if (from > 1) print "        ... (" from - 1 " earlier lines)"
  for (i = from; i <= n; i++) print substr(lines[i], 1, 400)
  if (dumped > 0) print "        ... (" dumped " lines of diagnostics, in the log above)"
  head = ""
  n = 0
  dumped = 0
}
/^[ \t]*--- FAIL: / { flush(); head = $0; next }
head != "" && /^[ \t]/ && dumped > 0 { dumped++; next }
head != "" && /^[ \t]/ && index($0, marker) > 0 { dumped = 1; next }
head != "" && /^[ \t]/ { lines[++n] = $0; next }
{ flush() }
/^FAIL\t|^panic: |^realnode set-up: / { print substr($0, 1, 400) }
END { flush() }
