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
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

// spool holds the content of the packages' files for one build: dpkg-deb
// streams each package's file tree once, the kept files' bytes are
// appended here, and the image's entries read them back from their
// offsets. Nothing is extracted as files, so no owner or mode is applied
// on this machine and no maintainer script runs.
type spool struct {
	f *os.File

	mu    sync.Mutex
	end   int64
	cache map[string][]ociimage.Entry // by .deb path
	ctl   map[string][]byte
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".spool-")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the space is freed when the build ends, however
	// it ends.
	_ = os.Remove(f.Name())
	return &spool{f: f, cache: map[string][]ociimage.Entry{}, ctl: map[string][]byte{}}, nil
}

func (s *spool) Close() error { return s.f.Close() }

// entries reads a package's file tree: paths mapped to the merged-/usr
// layout, documentation dropped, contents spooled.
func (s *spool) entries(ctx context.Context, deb string) ([]ociimage.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if es, ok := s.cache[deb]; ok {
		return es, nil
	}
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	es, rerr := s.read(out)
	if rerr != nil {
		// Let dpkg-deb end on a closed pipe rather than block.
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if rerr != nil {
		return nil, fmt.Errorf("%s: %w", deb, rerr)
	}
	if werr != nil {
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w: %s", deb, werr, strings.TrimSpace(stderr.String()))
	}
	s.cache[deb] = es
	return es, nil
}

// control is the part of a package's control file that says what it is,
// for /var/lib/dpkg/status.d.
func (s *spool) control(ctx context.Context, deb string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.ctl[deb]; ok {
		return c, nil
	}
	out, err := exec.CommandContext(ctx, "dpkg-deb", "--field", deb, "Package", "Source", "Version", "Architecture").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --field %s: %w", deb, err)
	}
	s.ctl[deb] = out
	return out, nil
}

func (s *spool) read(r io.Reader) ([]ociimage.Entry, error) {
	var es []ociimage.Entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return es, nil
		}
		if err != nil {
			return nil, err
		}
		orig := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if orig == "" {
			continue // the package's "./"
		}
		p := mergedPath(orig)
		e := ociimage.Entry{
			Path:    p,
			Mode:    fs.FileMode(h.Mode).Perm(),
			UID:     h.Uid,
			GID:     h.Gid,
			ModTime: h.ModTime,
		}
		if h.Mode&0o4000 != 0 {
			e.Mode |= fs.ModeSetuid
		}
		if h.Mode&0o2000 != 0 {
			e.Mode |= fs.ModeSetgid
		}
		if h.Mode&0o1000 != 0 {
			e.Mode |= fs.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type = ociimage.Dir
		case tar.TypeReg:
			e.Type = ociimage.File
		case tar.TypeSymlink:
			e.Type = ociimage.Symlink
			e.Target = movedLinkTarget(orig, p, h.Linkname)
		case tar.TypeLink:
			e.Type = ociimage.Hardlink
			e.Target = mergedPath(strings.TrimPrefix(path.Clean("/"+h.Linkname), "/"))
		default:
			return nil, fmt.Errorf("%s: unsupported tar entry type %q", h.Name, h.Typeflag)
		}
		if dropped(p, e.Type) {
			continue
		}
		if e.Type == ociimage.File {
			off := s.end
			n, err := io.Copy(io.NewOffsetWriter(s.f, off), tr)
			if err != nil {
				return nil, err
			}
			if n != h.Size {
				return nil, fmt.Errorf("%s: %d bytes, header says %d", h.Name, n, h.Size)
			}
			s.end += n
			f := s.f
			e.Size = n
			e.Open = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, off, n)), nil }
		}
		es = append(es, e)
	}
}

// mergedPath maps a path of a package to Debian 12's merged-/usr layout,
// where /bin, /sbin, /lib and /lib64 are symlinks into /usr, and to
// base-files' /var/run -> /run and /var/lock -> /run/lock.
func mergedPath(p string) string {
	first, _, _ := strings.Cut(p, "/")
	switch first {
	case "bin", "sbin", "lib", "lib64":
		return "usr/" + p
	}
	for _, m := range [][2]string{{"var/run", "run"}, {"var/lock", "run/lock"}} {
		if p == m[0] || strings.HasPrefix(p, m[0]+"/") {
			return m[1] + p[len(m[0]):]
		}
	}
	return p
}

// movedLinkTarget keeps a relative symlink pointing where it pointed when
// mapping moved it to another directory.
func movedLinkTarget(orig, moved, target string) string {
	if strings.HasPrefix(target, "/") || path.Dir(orig) == path.Dir(moved) {
		return target
	}
	abs := path.Join("/", path.Dir(orig), target)
	dest := "/" + mergedPath(strings.TrimPrefix(abs, "/"))
	rel, err := relPath("/"+path.Dir(moved), dest)
	if err != nil {
		return dest
	}
	return rel
}

// relPath is a slash path from dir to dest, both absolute and clean.
func relPath(dir, dest string) (string, error) {
	if !strings.HasPrefix(dir, "/") || !strings.HasPrefix(dest, "/") {
		return "", errors.New("not absolute")
	}
	ds := strings.Split(strings.Trim(dir, "/"), "/")
	ts := strings.Split(strings.Trim(dest, "/"), "/")
	if dir == "/" {
		ds = nil
	}
	i := 0
	for i < len(ds) && i < len(ts) && ds[i] == ts[i] {
		i++
	}
	var parts []string
	for range ds[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, ts[i:]...)
	if len(parts) == 0 {
		return ".", nil
	}
	return strings.Join(parts, "/"), nil
}

// droppedTrees are never needed to run a server: documentation, manual
// pages, translations of messages, locale sources (only localedef reads
// them; the images use C.UTF-8), packaging metadata.
var droppedTrees = []string{
	"usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/i18n",
	"usr/share/lintian", "usr/share/linda", "usr/share/bug", "usr/share/doc-base",
	"usr/share/menu", "usr/share/gtk-doc", "usr/share/bash-completion",
	"usr/share/zsh", "usr/share/fish",
}

// dropped reports whether a package's entry stays out of the images.
// Under /usr/share/doc only the copyright files (and the directories and
// links that lead to them) are kept.
func dropped(p string, t ociimage.Type) bool {
	if under(p, "usr/share/doc") {
		return t == ociimage.File && path.Base(p) != "copyright" || t == ociimage.Hardlink
	}
	for _, d := range droppedTrees {
		if under(p, d) {
			return true
		}
	}
	return false
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
