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

import "strings"

// segment is a piece of a parsed value: literal text, or a reference when ref
// is set.
type segment struct {
	lit string
	ref string
	// col is the 1-based byte position of the '$' that starts the reference.
	col int
}

// syntaxError is a malformed reference in a value.
type syntaxError struct {
	col int
	msg string
}

// parse splits a value into literal text and references. It reports every
// malformed reference; text after an unterminated "${" is kept as literal.
func parse(s string) ([]segment, []syntaxError) {
	var segs []segment
	var errs []syntaxError
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, segment{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				errs = append(errs, syntaxError{col: i + 1, msg: "unterminated ${: no closing }"})
				lit.WriteString(s[i:])
				i = len(s)
				continue
			}
			name := s[i+2 : i+2+end]
			switch {
			case name == "":
				errs = append(errs, syntaxError{col: i + 1, msg: "empty reference ${}"})
			case badNameByte(name) >= 0:
				errs = append(errs, syntaxError{col: i + 1, msg: "invalid reference ${" + name + "}: a name must match " + namePattern})
			default:
				flush()
				segs = append(segs, segment{ref: name, col: i + 1})
			}
			i += 2 + end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return segs, errs
}

// namePattern is the pattern of key names and reference names.
const namePattern = "^[A-Za-z_][A-Za-z0-9_]*$"

// badNameByte returns the index of the first byte of name that does not fit
// namePattern, or -1 when name fits. An empty name returns 0.
func badNameByte(name string) int {
	if name == "" {
		return 0
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return i
		}
	}
	return -1
}
