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

package ociimage

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Contents is an archive as Read finds it.
type Contents struct {
	// Names are the io.containerd.image.name annotations of index.json.
	Names []string
	// Tags are the org.opencontainers.image.ref.name annotations.
	Tags []string
	// RepoTags are manifest.json's names.
	RepoTags []string
	Config   ConfigFile
	// Layer holds the headers of the layer's entries in their order.
	Layer []*tar.Header
	// Files holds the content of the layer's regular files that Read was
	// asked to keep.
	Files map[string][]byte
}

// Entry returns the header of the layer entry at p (slash-separated,
// without a leading slash; a directory without its trailing slash), or nil.
func (c *Contents) Entry(p string) *tar.Header {
	for _, h := range c.Layer {
		if strings.TrimSuffix(h.Name, "/") == p {
			return h
		}
	}
	return nil
}

// Read reads an archive that Write made and checks it: the layout version,
// every blob's digest and size against its descriptor, the manifest's and
// the config's media types, the config's diff_id against the layer, and
// manifest.json against index.json. Regular files of the layer whose path
// keep accepts are returned in Files.
func Read(name string, keep func(path string) bool) (*Contents, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()

	// First pass: every blob's digest and size, the JSON documents.
	type blob struct {
		size   int64
		digest string
		offset int64 // of the content in the archive
	}
	blobs := map[string]blob{}
	docs := map[string][]byte{}
	counter := &countingReader{r: f}
	tr := tar.NewReader(counter)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		switch {
		case h.Name == "oci-layout" || h.Name == "index.json" || h.Name == "manifest.json":
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			docs[h.Name] = b
		case strings.HasPrefix(h.Name, "blobs/sha256/"):
			off := counter.n
			hs := sha256.New()
			var keepJSON []byte
			var w io.Writer = hs
			if h.Size < 1<<20 {
				w = io.MultiWriter(hs, writerFunc(func(p []byte) { keepJSON = append(keepJSON, p...) }))
			}
			n, err := io.Copy(w, tr)
			if err != nil {
				return nil, err
			}
			d := "sha256:" + hex.EncodeToString(hs.Sum(nil))
			if "sha256:"+path.Base(h.Name) != d {
				return nil, fmt.Errorf("%s holds content with digest %s", h.Name, d)
			}
			blobs[d] = blob{size: n, digest: d, offset: off}
			if keepJSON != nil {
				docs[d] = keepJSON
			}
		default:
			return nil, fmt.Errorf("unexpected file %s in the archive", h.Name)
		}
	}

	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(docs["oci-layout"], &layout); err != nil {
		return nil, fmt.Errorf("oci-layout: %w", err)
	}
	if layout.Version != "1.0.0" {
		return nil, fmt.Errorf("oci-layout: imageLayoutVersion %q, want 1.0.0", layout.Version)
	}
	var idx index
	if err := json.Unmarshal(docs["index.json"], &idx); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if idx.SchemaVersion != 2 || idx.MediaType != MediaTypeIndex || len(idx.Manifests) == 0 {
		return nil, errors.New("index.json: want schemaVersion 2, the index media type and at least one manifest")
	}
	check := func(d descriptor, mediaType string) ([]byte, error) {
		if d.MediaType != mediaType {
			return nil, fmt.Errorf("%s: media type %s, want %s", d.Digest, d.MediaType, mediaType)
		}
		b, ok := blobs[d.Digest]
		if !ok {
			return nil, fmt.Errorf("%s: no such blob", d.Digest)
		}
		if b.size != d.Size {
			return nil, fmt.Errorf("%s: size %d, descriptor says %d", d.Digest, b.size, d.Size)
		}
		return docs[d.Digest], nil
	}
	c := &Contents{Files: map[string][]byte{}}
	manDigest := idx.Manifests[0].Digest
	for _, d := range idx.Manifests {
		if d.Digest != manDigest {
			return nil, errors.New("index.json: the names point at different manifests")
		}
		c.Names = append(c.Names, d.Annotations[AnnotationImageName])
		c.Tags = append(c.Tags, d.Annotations[AnnotationRefName])
	}
	manJSON, err := check(idx.Manifests[0], MediaTypeManifest)
	if err != nil {
		return nil, err
	}
	var man manifest
	if err := json.Unmarshal(manJSON, &man); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if man.SchemaVersion != 2 || man.MediaType != MediaTypeManifest || len(man.Layers) != 1 {
		return nil, errors.New("manifest: want schemaVersion 2, the manifest media type and one layer")
	}
	cfgJSON, err := check(man.Config, MediaTypeConfig)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cfgJSON, &c.Config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, err := check(man.Layers[0], MediaTypeLayer); err != nil {
		return nil, err
	}
	if !slices.Equal(c.Config.RootFS.DiffIDs, []string{man.Layers[0].Digest}) {
		return nil, fmt.Errorf("config: diff_ids %v, want the layer %s", c.Config.RootFS.DiffIDs, man.Layers[0].Digest)
	}

	var dm []dockerManifest
	if err := json.Unmarshal(docs["manifest.json"], &dm); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(dm) != 1 || dm[0].Config != blobPath(man.Config.Digest) ||
		!slices.Equal(dm[0].Layers, []string{blobPath(man.Layers[0].Digest)}) {
		return nil, errors.New("manifest.json does not match the OCI manifest")
	}
	c.RepoTags = dm[0].RepoTags

	// Second pass: the layer's entries.
	lb := blobs[man.Layers[0].Digest]
	lr := tar.NewReader(io.NewSectionReader(f, lb.offset, lb.size))
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
		c.Layer = append(c.Layer, h)
		if h.Typeflag == tar.TypeReg && keep != nil && keep(h.Name) {
			b, err := io.ReadAll(lr)
			if err != nil {
				return nil, fmt.Errorf("layer: %s: %w", h.Name, err)
			}
			c.Files[h.Name] = b
		}
	}
	return c, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type writerFunc func(p []byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }
