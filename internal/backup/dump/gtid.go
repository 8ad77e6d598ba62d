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

package dump

import (
	"bytes"
	"regexp"
)

// gtidLine is the line mariadb-dump --master-data=2 --gtid writes with
// the position of its snapshot.
var gtidLine = regexp.MustCompile(`^-- SET GLOBAL gtid_slave_pos='([0-9,-]*)';`)

// gtidSniffer watches a dump stream for gtidLine. It keeps only the start
// of each line, so rows of any length pass through at no cost.
type gtidSniffer struct {
	line []byte
	// full is set once the kept start of the line is long enough to tell.
	full bool
	// pos is the position, once found; it is empty for a server that
	// never logged a transaction.
	pos   string
	found bool
}

const sniffPrefix = 128

func (g *gtidSniffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !g.full {
			take := min(len(chunk), sniffPrefix-len(g.line))
			g.line = append(g.line, chunk[:take]...)
			g.full = len(g.line) >= sniffPrefix
		}
		if i < 0 {
			break
		}
		if m := gtidLine.FindSubmatch(g.line); m != nil {
			g.pos, g.found = string(m[1]), true
		}
		g.line, g.full = g.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}
