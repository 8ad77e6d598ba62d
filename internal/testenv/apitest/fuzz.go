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

package apitest

import "flag"

// FuzzOnly reports whether the test binary runs fuzz inputs and no test:
// a fuzz worker, or a coordinator started with -fuzz and -run '^$' (as
// hack/fuzz.sh starts it). TestMain then needs no API server: the fuzz
// targets are pure, and a fuzz worker, which runs TestMain too, is killed
// at the end of the run before it could stop one. It parses the flags, as
// TestMain may.
func FuzzOnly() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || (value("test.fuzz") != "" && value("test.run") == "^$")
}
