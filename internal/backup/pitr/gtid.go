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

package pitr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GTID is one MariaDB global transaction id: domain-server-sequence.
type GTID struct {
	Domain, Server uint32
	Seq            uint64
}

func (g GTID) String() string { return fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq) }

// ParseGTID reads "domain-server-sequence".
func ParseGTID(s string) (GTID, error) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if len(parts) != 3 {
		return GTID{}, fmt.Errorf("%q is not a GTID (domain-server-sequence)", s)
	}
	d, err1 := strconv.ParseUint(parts[0], 10, 32)
	sv, err2 := strconv.ParseUint(parts[1], 10, 32)
	q, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return GTID{}, fmt.Errorf("%q is not a GTID (domain-server-sequence)", s)
	}
	return GTID{Domain: uint32(d), Server: uint32(sv), Seq: q}, nil
}

// GTIDState is a MariaDB GTID position: the newest transaction of each
// replication domain. Within a domain sequence numbers only grow, whatever
// server wrote them, so a state covers every transaction of a domain up to
// its sequence number.
type GTIDState map[uint32]GTID

// ParseGTIDState reads a comma-separated GTID list, as @@gtid_binlog_pos
// prints it; "" is the empty state.
func ParseGTIDState(s string) (GTIDState, error) {
	st := GTIDState{}
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		g, err := ParseGTID(part)
		if err != nil {
			return nil, err
		}
		st.Add(g)
	}
	return st, nil
}

// String is the state as a GTID list, domains in order.
func (s GTIDState) String() string {
	domains := make([]uint32, 0, len(s))
	for d := range s {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	parts := make([]string, len(domains))
	for i, d := range domains {
		parts[i] = s[d].String()
	}
	return strings.Join(parts, ",")
}

// Has reports whether the state covers g.
func (s GTIDState) Has(g GTID) bool {
	cur, ok := s[g.Domain]
	return ok && cur.Seq >= g.Seq
}

// Covers reports whether s covers every transaction o covers.
func (s GTIDState) Covers(o GTIDState) bool {
	for _, g := range o {
		if !s.Has(g) {
			return false
		}
	}
	return true
}

// Add moves the state past g.
func (s GTIDState) Add(g GTID) {
	if !s.Has(g) {
		s[g.Domain] = g
	}
}

// Clone copies the state.
func (s GTIDState) Clone() GTIDState {
	c := make(GTIDState, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}
