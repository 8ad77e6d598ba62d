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
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var mtime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func file(p string, mode fs.FileMode, content string) Entry {
	return Entry{Path: p, Type: File, Mode: mode, ModTime: mtime,
		Size: int64(len(content)), Open: Bytes([]byte(content))}
}

func testImage() Image {
	return Image{
		Names: []string{"docker.io/library/example:1.0", "example.test/tools/example:latest"},
		Config: Config{
			User:         "999:999",
			Entrypoint:   []string{"/usr/bin/example"},
			Cmd:          []string{"serve"},
			Env:          []string{"PATH=/usr/bin:/bin"},
			WorkingDir:   "/data",
			Labels:       map[string]string{"b": "2", "a": "1"},
			ExposedPorts: []string{"8080/tcp"},
		},
		Entries: []Entry{
			file("usr/bin/example", 0o755, "#!/bin/sh\necho hi\n"),
			file("/etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/sh\n"),
			{Path: "./data", Type: Dir, Mode: 0o755 | fs.ModeSticky, UID: 999, GID: 999, ModTime: mtime},
			{Path: "bin", Type: Symlink, Target: "usr/bin", Mode: 0o777, ModTime: mtime},
			{Path: "usr/sbin/tool", Type: Symlink, Target: "../bin/example", Mode: 0o777, ModTime: mtime},
			file("usr/lib/deep/nested/dir/lib.so", 0o644, strings.Repeat("x", 5000)),
			file("usr/share/empty", 0o600, ""),
			file("usr/bin/suid", 0o755|fs.ModeSetuid, "s"),
			{Path: "tmp", Type: Dir, Mode: 0o1777, ModTime: mtime},
			file("usr/bin/sgid", 0o2755, "g"),
			file("var/"+strings.Repeat("long-name/", 15)+"file", 0o644, "long"),
		},
	}
}

func write(t *testing.T, img Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDeterministic(t *testing.T) {
	a := write(t, testImage())
	b := write(t, testImage())
	if !bytes.Equal(a, b) {
		t.Fatal("two writes of the same image differ")
	}
	shuffled := testImage()
	rand.Shuffle(len(shuffled.Entries), func(i, j int) {
		shuffled.Entries[i], shuffled.Entries[j] = shuffled.Entries[j], shuffled.Entries[i]
	})
	if !bytes.Equal(a, write(t, shuffled)) {
		t.Fatal("the order of the entries changes the archive")
	}
	changed := testImage()
	changed.Config.Cmd = []string{"other"}
	if bytes.Equal(a, write(t, changed)) {
		t.Fatal("a different config gives the same archive")
	}
}

func readBack(t *testing.T, img Image) *Contents {
	t.Helper()
	name := filepath.Join(t.TempDir(), "image.tar")
	if err := WriteFile(name, img); err != nil {
		t.Fatal(err)
	}
	c, err := Read(name, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLayout(t *testing.T) {
	img := testImage()
	c := readBack(t, img)
	if !slices.Equal(c.Names, img.Names) || !slices.Equal(c.RepoTags, img.Names) {
		t.Errorf("names %v, repo tags %v, want %v", c.Names, c.RepoTags, img.Names)
	}
	if !slices.Equal(c.Tags, []string{"1.0", "latest"}) {
		t.Errorf("tags %v", c.Tags)
	}
	cfg := c.Config
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || cfg.Created != "1970-01-01T00:00:00Z" {
		t.Errorf("platform %s/%s created %s", cfg.OS, cfg.Architecture, cfg.Created)
	}
	cc := cfg.Config
	if cc.User != "999:999" || !slices.Equal(cc.Entrypoint, []string{"/usr/bin/example"}) ||
		!slices.Equal(cc.Cmd, []string{"serve"}) || cc.WorkingDir != "/data" ||
		cc.Labels["a"] != "1" || len(cc.ExposedPorts) != 1 {
		t.Errorf("config %+v", cc)
	}

	var names []string
	for _, h := range c.Layer {
		names = append(names, strings.TrimSuffix(h.Name, "/"))
		if h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: user name %q group %q", h.Name, h.Uname, h.Gname)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries are not sorted: %v", names)
	}
	for _, n := range names {
		for dir := path.Dir(n); dir != "."; dir = path.Dir(dir) {
			h := c.Entry(dir)
			if h == nil || h.Typeflag != tar.TypeDir {
				t.Errorf("%s: parent %s is missing or not a directory", n, dir)
			}
		}
	}
	if h := c.Entry("usr/lib/deep"); h == nil || h.Mode != 0o755 || h.Uid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("added parent: %+v", h)
	}
	if h := c.Entry("data"); h == nil || h.Mode != 0o1755 || h.Uid != 999 || !h.ModTime.Equal(mtime) {
		t.Errorf("data: %+v", h)
	}
	if h := c.Entry("usr/bin/suid"); h == nil || h.Mode != 0o4755 {
		t.Errorf("suid: %+v", h)
	}
	if h := c.Entry("tmp"); h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp: %+v", h)
	}
	if h := c.Entry("usr/bin/sgid"); h == nil || h.Mode != 0o2755 {
		t.Errorf("sgid: %+v", h)
	}
	if h := c.Entry("bin"); h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/bin" {
		t.Errorf("bin: %+v", h)
	}
	if got := string(c.Files["usr/bin/example"]); got != "#!/bin/sh\necho hi\n" {
		t.Errorf("usr/bin/example holds %q", got)
	}
	long := "var/" + strings.Repeat("long-name/", 15) + "file"
	if got := string(c.Files[long]); got != "long" {
		t.Errorf("%s holds %q", long, got)
	}
}

func TestHardLinks(t *testing.T) {
	img := testImage()
	img.Entries = append(img.Entries,
		file("usr/bin/perl5.36", 0o755, "perl"),
		Entry{Path: "usr/bin/perl", Type: Hardlink, Target: "/usr/bin/perl5.36", ModTime: mtime},
		Entry{Path: "usr/bin/zperl", Type: Hardlink, Target: "usr/bin/perl", ModTime: mtime},
	)
	c := readBack(t, img)
	first := c.Entry("usr/bin/perl")
	if first == nil || first.Typeflag != tar.TypeReg || first.Mode != 0o755 || string(c.Files["usr/bin/perl"]) != "perl" {
		t.Fatalf("the first path of the group should hold the content: %+v", first)
	}
	for _, p := range []string{"usr/bin/perl5.36", "usr/bin/zperl"} {
		if h := c.Entry(p); h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/perl" {
			t.Errorf("%s: %+v", p, h)
		}
	}
}

func TestErrors(t *testing.T) {
	for name, mutate := range map[string]func(*Image){
		"no names":          func(i *Image) { i.Names = nil },
		"name without tag":  func(i *Image) { i.Names = []string{"docker.io/library/postgres"} },
		"short name":        func(i *Image) { i.Names = []string{"postgres:15"} },
		"duplicate path":    func(i *Image) { i.Entries = append(i.Entries, file("/usr/bin/example", 0o644, "")) },
		"parent is a file":  func(i *Image) { i.Entries = append(i.Entries, file("etc/passwd/x", 0o644, "")) },
		"parent is a link":  func(i *Image) { i.Entries = append(i.Entries, file("bin/x", 0o644, "")) },
		"dangling hardlink": func(i *Image) { i.Entries = append(i.Entries, Entry{Path: "a", Type: Hardlink, Target: "b"}) },
		"short content": func(i *Image) {
			i.Entries = append(i.Entries, Entry{Path: "a", Type: File, Size: 10, Open: Bytes([]byte("abc"))})
		},
		"long content": func(i *Image) {
			i.Entries = append(i.Entries, Entry{Path: "a", Type: File, Size: 1, Open: Bytes([]byte("abc"))})
		},
	} {
		img := testImage()
		mutate(&img)
		var buf bytes.Buffer
		if err := Write(&buf, img); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWriteFileReplaces(t *testing.T) {
	name := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(name, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, testImage()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, write(t, testImage())) {
		t.Error("WriteFile and Write differ")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(name), ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
