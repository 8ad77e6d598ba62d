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

package images

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

// epoch is the time stamp of everything the builder adds itself.
var epoch = time.Unix(0, 0).UTC()

// tree is an image's file system while it is assembled.
type tree struct {
	entries map[string]ociimage.Entry
	// owner names the package each entry came from, for conflicts.
	owner     map[string]string
	conflicts []string
}

func newTree() *tree {
	return &tree{entries: map[string]ociimage.Entry{}, owner: map[string]string{}}
}

// merge adds a package's entry. Directories shipped by several packages
// are one; for any other path the first package in name order wins, as
// the packages in one image are not meant to overlap.
func (t *tree) merge(pkg string, e ociimage.Entry) {
	old, ok := t.entries[e.Path]
	if !ok {
		t.entries[e.Path] = e
		t.owner[e.Path] = pkg
		return
	}
	if old.Type == ociimage.Dir && e.Type == ociimage.Dir {
		return
	}
	if old.Type == ociimage.Symlink && e.Type == ociimage.Symlink && old.Target == e.Target {
		return
	}
	t.conflicts = append(t.conflicts, fmt.Sprintf("/%s: %s's %s kept, %s's %s left out", e.Path, t.owner[e.Path], old.Type, pkg, e.Type))
}

func (t *tree) has(p string) bool {
	_, ok := t.entries[p]
	return ok
}

// set adds or replaces an entry, and removes whatever was below a path
// that is no longer a directory.
func (t *tree) set(e ociimage.Entry) {
	if old, ok := t.entries[e.Path]; ok && old.Type == ociimage.Dir && e.Type != ociimage.Dir {
		for p := range t.entries {
			if strings.HasPrefix(p, e.Path+"/") {
				delete(t.entries, p)
			}
		}
	}
	if e.ModTime.IsZero() {
		e.ModTime = epoch
	}
	t.entries[e.Path] = e
	t.owner[e.Path] = ""
}

func (t *tree) dir(p string, mode fs.FileMode, uid, gid int) {
	t.set(ociimage.Entry{Path: p, Type: ociimage.Dir, Mode: mode, UID: uid, GID: gid})
}

// file adds a file of root's.
func (t *tree) file(p string, mode fs.FileMode, content []byte) {
	t.set(ociimage.Entry{Path: p, Type: ociimage.File, Mode: mode,
		Size: int64(len(content)), Open: ociimage.Bytes(content)})
}

func (t *tree) symlink(p, target string) {
	t.set(ociimage.Entry{Path: p, Type: ociimage.Symlink, Mode: 0o777, Target: target})
}

// resolve follows symlinks from p (relative to the root) to the entry they
// end at, or "" when they lead nowhere in the tree.
func (t *tree) resolve(p string) string {
	for hops := 0; hops <= 40; hops++ {
		parts := strings.Split(p, "/")
		cur, followed := "", false
		for i, part := range parts {
			next := path.Join(cur, part)
			e, ok := t.entries[next]
			if !ok && i == len(parts)-1 {
				return ""
			}
			// A missing directory is one the archive's writer adds.
			if ok && e.Type == ociimage.Symlink {
				target := e.Target
				if !path.IsAbs(target) {
					target = path.Join("/", cur, target)
				}
				p = strings.TrimPrefix(path.Join(target, strings.Join(parts[i+1:], "/")), "/")
				followed = true
				break
			}
			cur = next
		}
		if !followed {
			return cur
		}
		if p == "" {
			return ""
		}
	}
	return ""
}

// content reads a regular file of the tree.
func (t *tree) content(p string) ([]byte, error) {
	e, ok := t.entries[p]
	if !ok || e.Type != ociimage.File {
		return nil, fmt.Errorf("/%s is not a file of the image", p)
	}
	if e.Open == nil {
		return nil, nil
	}
	r, err := e.Open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// dropDanglingHardlinks removes hard links whose file was left out (a
// dropped documentation file, say).
func (t *tree) dropDanglingHardlinks() {
	for p, e := range t.entries {
		if e.Type != ociimage.Hardlink {
			continue
		}
		if target, ok := t.entries[e.Target]; !ok || (target.Type != ociimage.File && target.Type != ociimage.Hardlink) {
			delete(t.entries, p)
		}
	}
}

// list returns the entries sorted by path.
func (t *tree) list() []ociimage.Entry {
	keys := slices.Sorted(maps.Keys(t.entries))
	out := make([]ociimage.Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, t.entries[k])
	}
	return out
}
