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

package appconfig

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
)

// hashVersion starts every hashed encoding, so that a future change of the
// encoding changes every hash on purpose rather than by accident.
const hashVersion = "steward.appconfig.hash/v1\n"

// Hash returns a stable content hash (hex SHA-256) of the rendered values of
// keys, for the pod template annotation of a consumer that uses those keys. An
// empty or nil keys means every key of values. Duplicate keys count once and
// their order does not matter.
//
// Each key is encoded with its length before it, then whether it is present,
// then the length of its value before the value, so that no two different
// selections encode the same: {"a": "bc"} and {"ab": "c"} differ. A key the
// consumer lists that values lacks hashes differently from the same key with
// an empty value, so that adding or removing a used key rolls the consumer
// out.
func Hash(values map[string]string, keys []string) string {
	h := sha256.New()
	h.Write([]byte(hashVersion))
	var n [binary.MaxVarintLen64]byte
	writeString := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	for _, k := range selection(values, keys) {
		writeString(k)
		v, ok := values[k]
		if !ok {
			h.Write([]byte{0})
			continue
		}
		h.Write([]byte{1})
		writeString(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Changed tells whether a consumer that uses keys (every key when keys is
// empty) sees different values in before and after: exactly when their Hash
// values differ, without hashing.
func Changed(before, after map[string]string, keys []string) bool {
	if len(keys) == 0 {
		if len(before) != len(after) {
			return true
		}
		for k, v := range before {
			if w, ok := after[k]; !ok || w != v {
				return true
			}
		}
		return false
	}
	for _, k := range keys {
		v, okBefore := before[k]
		w, okAfter := after[k]
		if okBefore != okAfter || v != w {
			return true
		}
	}
	return false
}

// selection returns keys sorted and without duplicates, or every key of
// values sorted when keys is empty.
func selection(values map[string]string, keys []string) []string {
	if len(keys) == 0 {
		return sortedKeys(values)
	}
	out := append([]string(nil), keys...)
	sort.Strings(out)
	return compact(out)
}
