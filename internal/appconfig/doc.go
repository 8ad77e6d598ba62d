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

// Package appconfig renders and validates the data of an AppConfig. It is
// pure Go: it reads no cluster state, so that a reconciler and an admission
// webhook can share it.
//
// # Keys
//
// A key is used both as an environment variable name and as a file name, so
// it must match ^[A-Za-z_][A-Za-z0-9_]*$ (at most 253 bytes). Dots and dashes
// are not allowed: they are fine in file names but not in the environment
// variable names most shells and programs accept. The names of the variables
// (namespace, environment, application) are reserved and cannot be keys.
//
// # Environments and overrides
//
// The environment is one of dev, staging and prod. The overrides for the
// environment are applied to the data before rendering: an override wins over
// the data value of the same key, and an override may also add a key that the
// data does not have. Overrides of the other environments are not rendered,
// but their key names and syntax are checked all the same.
//
// # References
//
// A value may contain ${NAME}, where NAME is another key or one of the
// variables:
//
//	${namespace}    the namespace of the AppConfig
//	${environment}  dev, staging or prod
//	${application}  the application name
//
// A reference is replaced with the rendered value of the key it names, so
// references resolve recursively. The replacement text is not scanned again:
// a referenced value that renders to a literal "${X}" stays literal.
//
// # Escape
//
// "$${" renders as a literal "${", so "$${HOME}" renders as "${HOME}". A "$"
// that starts neither "${" nor "$${" is an ordinary character: "pa$$word" and "cost: 5$" render unchanged. Values are scanned
// left to right and the first match wins, which means a literal "$" cannot be
// written directly before a reference ("$${A}" is the escape); put the "$"
// in a key of its own instead: DOLLAR: "$" and PRICE: "${DOLLAR}${AMOUNT}".
//
// # Errors
//
// Validate returns every problem it finds, sorted, each naming the key and,
// where it applies, the 1-based byte position in the value of the "$" that
// starts the reference:
//
//	key "DB_URL", position 12: unknown reference ${DB_HOSTT} (did you mean ${DB_HOST}?)
//	key "A", position 1: reference cycle A -> B -> C -> A
//	key "1ST", position 1: invalid key name: must match ^[A-Za-z_][A-Za-z0-9_]*$
//	key "X", position 5: unterminated ${: no closing }
//	key "X", position 1: empty reference ${}
//
// A cycle is reported once, on its alphabetically first key, however many
// other keys refer to it. An error in an override names the override, as in
// overrides.prod key "LOG_LEVEL". The rendered data, keys included, must fit
// in MaxRenderedBytes, the size limit of a ConfigMap.
//
// # Hashes
//
// Hash computes the per-consumer rollout hash over the rendered values of the
// keys a consumer uses, so that a change to a key nobody uses restarts
// nobody.
package appconfig
