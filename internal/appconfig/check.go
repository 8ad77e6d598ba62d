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
	"fmt"
	"sort"
	"strings"
)

// checkValues reports malformed and unknown references, reference cycles and
// rendered data over MaxRenderedBytes. fields tells which field each key's
// value comes from.
func checkValues(values, fields, vars map[string]string) []FieldError {
	keys := sortedKeys(values)
	var errs []FieldError
	parsed := make(map[string][]segment, len(values))
	edges := make(map[string][]string, len(values))
	for _, key := range keys {
		segs, serrs := parse(values[key])
		parsed[key] = segs
		for _, se := range serrs {
			errs = append(errs, FieldError{Field: fields[key], Key: key, Position: se.col, Message: se.msg})
		}
		for _, s := range segs {
			if s.ref == "" {
				continue
			}
			if _, ok := vars[s.ref]; ok {
				continue
			}
			if _, ok := values[s.ref]; ok {
				edges[key] = append(edges[key], s.ref)
				continue
			}
			msg := fmt.Sprintf("unknown reference ${%s}", s.ref)
			if near := suggest(s.ref, values, vars); near != "" {
				msg += fmt.Sprintf(" (did you mean ${%s}?)", near)
			}
			errs = append(errs, FieldError{Field: fields[key], Key: key, Position: s.col, Message: msg})
		}
	}
	for _, cycle := range cycles(keys, edges) {
		first, next := cycle[0], cycle[1]
		pos := 0
		for _, s := range parsed[first] {
			if s.ref == next {
				pos = s.col
				break
			}
		}
		errs = append(errs, FieldError{Field: fields[first], Key: first, Position: pos, Message: "reference cycle " + strings.Join(cycle, " -> ")})
	}
	if len(errs) > 0 {
		return errs
	}
	if total, largest, size := renderedSize(keys, parsed, vars); total > MaxRenderedBytes {
		errs = append(errs, FieldError{Message: fmt.Sprintf("rendered data is larger than %d bytes (keys and values; the largest value is key %q, %s)", MaxRenderedBytes, largest, sizeString(size))})
	}
	return errs
}

func sizeString(n int) string {
	if n > MaxRenderedBytes {
		return fmt.Sprintf("over %d bytes", MaxRenderedBytes)
	}
	return fmt.Sprintf("%d bytes", n)
}

// renderedSize returns the size of the rendered data, keys included, and the
// key with the largest rendered value and its size. Sizes saturate just over
// MaxRenderedBytes. The references must form no cycle.
func renderedSize(keys []string, parsed map[string][]segment, vars map[string]string) (total int, largest string, largestSize int) {
	sat := func(a, b int) int { return min(a+b, MaxRenderedBytes+1) }
	sizes := make(map[string]int, len(keys))
	var size func(key string) int
	size = func(key string) int {
		if n, ok := sizes[key]; ok {
			return n
		}
		n := 0
		for _, s := range parsed[key] {
			switch v, isVar := vars[s.ref]; {
			case s.ref == "":
				n = sat(n, len(s.lit))
			case isVar:
				n = sat(n, len(v))
			default:
				n = sat(n, size(s.ref))
			}
		}
		sizes[key] = n
		return n
	}
	for _, key := range keys {
		n := size(key)
		if largest == "" || n > largestSize {
			largest, largestSize = key, n
		}
		total = sat(total, sat(len(key), n))
	}
	return total, largest, largestSize
}

// cycles returns one cycle for every strongly connected component of the
// reference graph that has one: the shortest path from the component's first
// key in sort order back to itself, written with that key at both ends.
func cycles(keys []string, edges map[string][]string) [][]string {
	for _, k := range keys {
		out := edges[k]
		sort.Strings(out)
		edges[k] = compact(out)
	}
	// Tarjan's algorithm.
	index := make(map[string]int, len(keys))
	low := make(map[string]int, len(keys))
	onStack := make(map[string]bool, len(keys))
	var stack []string
	var comps [][]string
	next := 0
	var connect func(v string)
	connect = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				connect(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		comps = append(comps, comp)
	}
	for _, k := range keys {
		if _, seen := index[k]; !seen {
			connect(k)
		}
	}
	var out [][]string
	for _, comp := range comps {
		sort.Strings(comp)
		start := comp[0]
		if len(comp) == 1 && !contains(edges[start], start) {
			continue
		}
		out = append(out, shortestCycle(start, comp, edges))
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// shortestCycle finds the shortest path from start back to start that stays in
// comp, taking edges in sort order so that the result is deterministic.
func shortestCycle(start string, comp []string, edges map[string][]string) []string {
	in := make(map[string]bool, len(comp))
	for _, k := range comp {
		in[k] = true
	}
	parent := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range edges[v] {
			if w == start {
				path := []string{start}
				for u := v; u != start; u = parent[u] {
					path = append(path, u)
				}
				path = append(path, start)
				// path is start, v, ..., start reversed in the middle.
				mid := path[1 : len(path)-1]
				for i, j := 0, len(mid)-1; i < j; i, j = i+1, j-1 {
					mid[i], mid[j] = mid[j], mid[i]
				}
				return path
			}
			if _, seen := parent[w]; seen || !in[w] {
				continue
			}
			parent[w] = v
			queue = append(queue, w)
		}
	}
	return []string{start, start} // unreachable for a component with a cycle
}

// suggest returns the alphabetically first valid key name or variable one
// edit (an insertion, deletion, substitution or swap of neighbours) away from
// name, or "" when there is none.
func suggest(name string, values, vars map[string]string) string {
	best := ""
	try := func(c string) {
		if badNameByte(c) < 0 && oneEdit(name, c) && (best == "" || c < best) {
			best = c
		}
	}
	for k := range values {
		try(k)
	}
	for k := range vars {
		try(k)
	}
	return best
}

func oneEdit(a, b string) bool {
	if a == b {
		return false
	}
	switch len(a) - len(b) {
	case 0:
		var diff []int
		for i := 0; i < len(a); i++ {
			if a[i] != b[i] {
				diff = append(diff, i)
				if len(diff) > 2 {
					return false
				}
			}
		}
		if len(diff) == 1 {
			return true
		}
		i, j := diff[0], diff[1]
		return j == i+1 && a[i] == b[j] && a[j] == b[i]
	case 1:
		return deletesTo(a, b)
	case -1:
		return deletesTo(b, a)
	}
	return false
}

// deletesTo tells whether deleting one byte of long gives short.
func deletesTo(long, short string) bool {
	i := 0
	for i < len(short) && long[i] == short[i] {
		i++
	}
	return long[i+1:] == short[i:]
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
