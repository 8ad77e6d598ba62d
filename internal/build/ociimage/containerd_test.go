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

package ociimage_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/build/ociimage"
	"github.com/steward-dev/steward/internal/testenv/ctrtest"
)

// TestContainerdImport imports an archive into a real containerd, which
// must name the image after index.json's annotations and unpack its layer.
func TestContainerdImport(t *testing.T) {
	d := ctrtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	names := []string{"docker.io/library/steward-ociimage-test:1.0", "registry.example.test/steward/ociimage-test:v2"}
	archive := filepath.Join(t.TempDir(), "image.tar")
	err := ociimage.WriteFile(archive, ociimage.Image{
		Names:  names,
		Config: ociimage.Config{User: "65532:65532", Entrypoint: []string{"/hello"}},
		Entries: []ociimage.Entry{
			{Path: "hello", Type: ociimage.File, Mode: 0o755, Size: 5, Open: ociimage.Bytes([]byte("hello"))},
			{Path: "etc/passwd", Type: ociimage.File, Mode: 0o644, Size: 0},
			{Path: "tmp", Type: ociimage.Dir, Mode: 0o1777},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Import(ctx, archive); err != nil {
		t.Fatal(err)
	}
	got, err := d.Images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !slices.Contains(got, n) {
			t.Errorf("ctr images ls shows %v, not %s", got, n)
		}
	}
	// Unpacking needs the config's platform and diff_ids to match.
	if out, err := d.Ctr(ctx, "images", "check"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := d.Ctr(ctx, "images", "ls"); err == nil {
		t.Log(out)
	}
	out, err := d.Ctr(ctx, "snapshots", "ls")
	if err != nil || len(out) == 0 {
		t.Fatalf("no snapshot after the import: %v %q", err, out)
	}
}
