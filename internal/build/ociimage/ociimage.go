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

// Package ociimage writes a container image as one tar file that holds an
// OCI image layout (oci-layout, index.json, blobs/sha256/...) and a
// Docker-style manifest.json beside it, so that containerd's
// `ctr images import`, `docker load` and `kind load image-archive` all
// accept it.
//
// The image has one uncompressed layer (application/vnd.oci.image.layer.v1.tar):
// importing it needs no decompression, and its digest is its diff_id.
//
// The archive is deterministic: the same image gives the same bytes. The
// layer's entries are sorted by path, every parent directory is present
// (missing ones are added as root's, 0755), no user or group names are
// written, and every time stamp is one the caller chose.
//
// Names: containerd 1.6 (images/archive and the client's Import) names an
// imported image after the io.containerd.image.name annotation of each
// manifest descriptor in index.json, taken verbatim, and falls back to
// org.opencontainers.image.ref.name only when that is missing. Kubernetes
// looks images up by their normalised full name, so each descriptor
// carries the full name ("docker.io/library/postgres:15") in the first and
// the tag ("15") in the second, as the OCI layout specification asks.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Media types and annotations of the archive.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"

	// AnnotationImageName is containerd's name for an imported image.
	AnnotationImageName = "io.containerd.image.name"
	// AnnotationRefName is the OCI layout's reference (the tag).
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// Type is the kind of a file-system entry.
type Type int

// The kinds of entries.
const (
	Dir Type = iota
	File
	Symlink
	Hardlink
)

// String names the type for error messages.
func (t Type) String() string {
	switch t {
	case Dir:
		return "directory"
	case File:
		return "file"
	case Symlink:
		return "symlink"
	case Hardlink:
		return "hard link"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Entry is one file-system entry of the image.
type Entry struct {
	// Path is slash-separated and relative to the image's root; a leading
	// "/" or "./" is ignored.
	Path string
	Type Type
	// Mode holds the permission bits and the setuid, setgid and sticky
	// bits, as fs.ModeSetuid, fs.ModeSetgid and fs.ModeSticky or as Unix's
	// 0o4000, 0o2000 and 0o1000; the type bits are ignored.
	Mode     fs.FileMode
	UID, GID int
	ModTime  time.Time
	// Target is a symlink's target as written, or the path of the file a
	// hard link shares its content with.
	Target string
	// Size is a file's length. Open returns its content; it may be called
	// twice (the layer is written once to find its digest, then into the
	// archive) and must return the same bytes each time. A nil Open is an
	// empty file.
	Size int64
	Open func() (io.ReadCloser, error)
}

// Bytes returns an Open function for content held in memory.
func Bytes(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// Config is the part of the image configuration a container runs with.
type Config struct {
	User         string
	Entrypoint   []string
	Cmd          []string
	Env          []string
	WorkingDir   string
	Labels       map[string]string
	ExposedPorts []string // "8080/tcp"
	StopSignal   string
}

// Image is what Write puts into an archive.
type Image struct {
	// Names are fully qualified references with a tag, such as
	// "docker.io/library/postgres:15".
	Names []string
	// Architecture defaults to amd64; the OS is linux.
	Architecture string
	// Created is the configuration's creation time and the time stamp of
	// the archive's own entries and of added parent directories; the zero
	// value means the Unix epoch.
	Created time.Time
	Config  Config
	Entries []Entry
}

// WriteFile writes the archive to name through a temporary file in the same
// directory, so that name is either the old archive or the complete new one.
func WriteFile(name string, img Image) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	err = Write(tmp, img)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Write writes the archive to w.
func Write(w io.Writer, img Image) error {
	if len(img.Names) == 0 {
		return errors.New("an image needs at least one name")
	}
	tags := make([]string, len(img.Names))
	for i, n := range img.Names {
		t, err := tag(n)
		if err != nil {
			return err
		}
		tags[i] = t
	}
	created := img.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC().Truncate(time.Second)
	arch := img.Architecture
	if arch == "" {
		arch = "amd64"
	}
	entries, err := prepare(img.Entries, created)
	if err != nil {
		return err
	}

	// The layer's digest names its blob, which comes before its bytes: the
	// first pass only measures it.
	m := &measure{h: sha256.New()}
	if err := writeLayer(m, entries); err != nil {
		return err
	}
	layer := descriptor{MediaType: MediaTypeLayer, Digest: m.digest(), Size: m.n}

	cfg, err := json.Marshal(imageConfig(img.Config, arch, created, layer.Digest))
	if err != nil {
		return err
	}
	config := descriptor{MediaType: MediaTypeConfig, Digest: digestOf(cfg), Size: int64(len(cfg))}
	man, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, Config: config, Layers: []descriptor{layer}})
	if err != nil {
		return err
	}
	manDesc := descriptor{MediaType: MediaTypeManifest, Digest: digestOf(man), Size: int64(len(man)),
		Platform: &platform{Architecture: arch, OS: "linux"}}
	idx := index{SchemaVersion: 2, MediaType: MediaTypeIndex}
	for i, n := range img.Names {
		d := manDesc
		d.Annotations = map[string]string{AnnotationImageName: n, AnnotationRefName: tags[i]}
		idx.Manifests = append(idx.Manifests, d)
	}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	dockerJSON, err := json.Marshal([]dockerManifest{{
		Config:   blobPath(config.Digest),
		RepoTags: img.Names,
		Layers:   []string{blobPath(layer.Digest)},
	}})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	header := func(name string, typ byte, size int64) error {
		mode := int64(0o644)
		if typ == tar.TypeDir {
			mode = 0o755
		}
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: created, Format: tar.FormatPAX})
	}
	small := func(name string, b []byte) error {
		if err := header(name, tar.TypeReg, int64(len(b))); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := small("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := header(d, tar.TypeDir, 0); err != nil {
			return err
		}
	}
	if err := small(blobPath(config.Digest), cfg); err != nil {
		return err
	}
	if err := header(blobPath(layer.Digest), tar.TypeReg, layer.Size); err != nil {
		return err
	}
	again := &measure{w: tw, h: sha256.New()}
	if err := writeLayer(again, entries); err != nil {
		return err
	}
	if again.n != layer.Size || again.digest() != layer.Digest {
		return errors.New("the layer changed while it was written: a file's content is not stable")
	}
	if err := small(blobPath(manDesc.Digest), man); err != nil {
		return err
	}
	if err := small("index.json", idxJSON); err != nil {
		return err
	}
	if err := small("manifest.json", dockerJSON); err != nil {
		return err
	}
	return tw.Close()
}

// tag is the tag of a fully qualified name.
func tag(name string) (string, error) {
	slash := strings.LastIndex(name, "/")
	colon := strings.LastIndex(name, ":")
	if slash < 0 || colon < slash || colon == len(name)-1 || strings.Contains(name, "@") {
		return "", fmt.Errorf("image name %q: want a fully qualified name with a tag, such as docker.io/library/postgres:15", name)
	}
	return name[colon+1:], nil
}

// cleanPath is p relative to the root, cleaned, or an error for a path
// outside the root.
func cleanPath(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" {
		return "", fmt.Errorf("path %q: the root itself is not an entry", p)
	}
	if strings.Contains(p, "\x00") {
		return "", fmt.Errorf("path %q contains NUL", p)
	}
	return c[1:], nil
}

// prepare cleans, checks and sorts the entries, adds missing parent
// directories, and points the members of each hard-link group at the first
// of them in path order, which carries the content.
func prepare(in []Entry, created time.Time) ([]Entry, error) {
	byPath := make(map[string]int, len(in))
	out := make([]Entry, 0, len(in))
	for _, e := range in {
		p, err := cleanPath(e.Path)
		if err != nil {
			return nil, err
		}
		e.Path = p
		if e.Type < Dir || e.Type > Hardlink {
			return nil, fmt.Errorf("%s: unknown type %d", p, int(e.Type))
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("%s: more than one entry", p)
		}
		if e.UID < 0 || e.GID < 0 {
			return nil, fmt.Errorf("%s: negative owner", p)
		}
		switch e.Type {
		case File:
			if e.Size < 0 {
				return nil, fmt.Errorf("%s: negative size", p)
			}
		case Symlink:
			if e.Target == "" {
				return nil, fmt.Errorf("%s: a symlink needs a target", p)
			}
		case Hardlink:
			t, err := cleanPath(e.Target)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			e.Target = t
		}
		byPath[p] = len(out)
		out = append(out, e)
	}
	// Parents.
	for i := 0; i < len(out); i++ {
		for dir := path.Dir(out[i].Path); dir != "."; dir = path.Dir(dir) {
			if j, ok := byPath[dir]; ok {
				if out[j].Type != Dir {
					return nil, fmt.Errorf("%s: its parent %s is a %s", out[i].Path, dir, out[j].Type)
				}
				break
			}
			byPath[dir] = len(out)
			out = append(out, Entry{Path: dir, Type: Dir, Mode: 0o755, ModTime: created})
		}
	}
	// Hard links: find each group's file, then let the first path in
	// sorted order hold the content.
	holder := map[string]string{} // file path -> path carrying the content
	for i := range out {
		if out[i].Type != Hardlink {
			continue
		}
		file, err := resolveLink(out, byPath, out[i].Path)
		if err != nil {
			return nil, err
		}
		if h, ok := holder[file]; !ok || out[i].Path < h {
			holder[file] = out[i].Path
		}
		out[i].Target = file
	}
	for file, first := range holder {
		if first > file {
			holder[file] = file
			continue
		}
		// The link sorted first becomes the file, the file a link.
		f, l := byPath[file], byPath[first]
		linkEntry := out[l]
		out[l] = out[f]
		out[l].Path = first
		out[f] = linkEntry
		out[f].Path = file
	}
	for i := range out {
		if out[i].Type == Hardlink {
			out[i].Target = holder[out[i].Target]
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// resolveLink follows hard links from p to the regular file they share.
func resolveLink(entries []Entry, byPath map[string]int, p string) (string, error) {
	seen := map[string]bool{}
	for cur := p; ; {
		if seen[cur] {
			return "", fmt.Errorf("%s: hard links form a loop", p)
		}
		seen[cur] = true
		j, ok := byPath[cur]
		if !ok {
			return "", fmt.Errorf("%s: hard link to %s, which is not in the image", p, cur)
		}
		switch entries[j].Type {
		case File:
			return cur, nil
		case Hardlink:
			cur = entries[j].Target
		default:
			return "", fmt.Errorf("%s: hard link to %s, a %s", p, cur, entries[j].Type)
		}
	}
}

// writeLayer writes the layer's tar stream of prepared entries.
func writeLayer(w io.Writer, entries []Entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.Path,
			Mode:    tarMode(e.Mode),
			Uid:     e.UID,
			Gid:     e.GID,
			ModTime: e.ModTime.UTC().Truncate(time.Second),
			Format:  tar.FormatPAX,
		}
		if e.ModTime.IsZero() {
			h.ModTime = time.Unix(0, 0)
		}
		switch e.Type {
		case Dir:
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case File:
			h.Typeflag, h.Size = tar.TypeReg, e.Size
		case Symlink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Target
		case Hardlink:
			h.Typeflag, h.Linkname = tar.TypeLink, e.Target
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		if e.Type == File && e.Size > 0 {
			if err := copyContent(tw, e); err != nil {
				return fmt.Errorf("%s: %w", e.Path, err)
			}
		}
	}
	return tw.Close()
}

func copyContent(w io.Writer, e Entry) error {
	if e.Open == nil {
		return fmt.Errorf("no content for %d bytes", e.Size)
	}
	r, err := e.Open()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	n, err := io.CopyN(w, r, e.Size)
	if err != nil {
		return fmt.Errorf("content has %d bytes, want %d: %w", n, e.Size, err)
	}
	var one [1]byte
	if k, _ := r.Read(one[:]); k > 0 {
		return fmt.Errorf("content is longer than its size %d", e.Size)
	}
	return nil
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m & 0o7777)
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// measure counts and hashes what passes through to w (which may be nil).
type measure struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (m *measure) Write(p []byte) (int, error) {
	if m.w != nil {
		if n, err := m.w.Write(p); err != nil {
			m.h.Write(p[:n])
			m.n += int64(n)
			return n, err
		}
	}
	m.h.Write(p)
	m.n += int64(len(p))
	return len(p), nil
}

func (m *measure) digest() string { return "sha256:" + hex.EncodeToString(m.h.Sum(nil)) }

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func blobPath(digest string) string {
	return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// ConfigFile is the image configuration blob (OCI image-spec config).
type ConfigFile struct {
	Created      string          `json:"created"`
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       ContainerConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// ContainerConfig is the config section of ConfigFile.
type ContainerConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
	StopSignal   string              `json:"StopSignal,omitempty"`
}

func imageConfig(c Config, arch string, created time.Time, layer string) ConfigFile {
	f := ConfigFile{
		Created:      created.Format(time.RFC3339),
		Architecture: arch,
		OS:           "linux",
		Config: ContainerConfig{
			User:       c.User,
			Env:        c.Env,
			Entrypoint: c.Entrypoint,
			Cmd:        c.Cmd,
			WorkingDir: c.WorkingDir,
			Labels:     c.Labels,
			StopSignal: c.StopSignal,
		},
	}
	if len(c.ExposedPorts) > 0 {
		f.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range c.ExposedPorts {
			f.Config.ExposedPorts[p] = struct{}{}
		}
	}
	f.RootFS.Type = "layers"
	f.RootFS.DiffIDs = []string{layer}
	return f
}
