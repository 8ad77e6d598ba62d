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
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

func TestParseSimulation(t *testing.T) {
	out := `NOTE: This is only a simulation!
Reading package lists...
Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64]) []
Inst libgmp10 (2:6.2.1+dfsg1-1.1 Debian:12.15/oldstable [amd64])
Inst tzdata (2026f-0+deb12u1 Debian-Security:12/oldstable-security [all])
Inst libtasn1-6 (4.19.0-2+deb12u1 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [amd64])
Conf libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])
`
	got, err := parseSimulation([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Package{
		{"libc6", "2.36-9+deb12u14", "amd64"},
		{"libgmp10", "2:6.2.1+dfsg1-1.1", "amd64"},
		{"libtasn1-6", "4.19.0-2+deb12u1", "amd64"},
		{"tzdata", "2026f-0+deb12u1", "all"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if f := want[1].DebFile(); f != "libgmp10_2%3a6.2.1+dfsg1-1.1_amd64.deb" {
		t.Errorf("DebFile = %s", f)
	}
	if _, err := parseSimulation([]byte("Reading package lists...\n")); err == nil {
		t.Error("no error for a simulation that installs nothing")
	}
}

func TestMergedPath(t *testing.T) {
	for in, want := range map[string]string{
		"bin/dash":                             "usr/bin/dash",
		"bin":                                  "usr/bin",
		"sbin/ldconfig":                        "usr/sbin/ldconfig",
		"lib/x86_64-linux-gnu/libc.so.6":       "usr/lib/x86_64-linux-gnu/libc.so.6",
		"lib64/ld-linux-x86-64.so.2":           "usr/lib64/ld-linux-x86-64.so.2",
		"var/run/postgresql":                   "run/postgresql",
		"var/run":                              "run",
		"var/lock/x":                           "run/lock/x",
		"var/runner":                           "var/runner",
		"binaries/x":                           "binaries/x",
		"usr/lib/postgresql/15/bin/postgres":   "usr/lib/postgresql/15/bin/postgres",
		"etc/mysql/mariadb.conf.d/50-server.c": "etc/mysql/mariadb.conf.d/50-server.c",
	} {
		if got := mergedPath(in); got != want {
			t.Errorf("mergedPath(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestMovedLinkTarget(t *testing.T) {
	for _, c := range []struct{ orig, target, want string }{
		{"bin/sh", "dash", "dash"},
		{"bin/x", "../usr/lib/x", "../lib/x"},
		{"bin/y", "../lib/y", "../lib/y"},
		{"lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"},
		{"sbin/z", "../usr/sbin/z.real", "z.real"},
		{"usr/bin/a", "../../bin/b", "../../bin/b"},
	} {
		if got := movedLinkTarget(c.orig, mergedPath(c.orig), c.target); got != c.want {
			t.Errorf("%s -> %s moved: %s, want %s", c.orig, c.target, got, c.want)
		}
	}
}

func TestDropped(t *testing.T) {
	for p, want := range map[string]bool{
		"usr/share/doc/bash/copyright":           false,
		"usr/share/doc/bash/changelog.Debian.gz": true,
		"usr/share/man/man1/bash.1.gz":           true,
		"usr/share/locale/de/LC_MESSAGES/x.mo":   true,
		"usr/share/zoneinfo/UTC":                 false,
		"usr/share/mysql/english/errmsg.sys":     false,
		"usr/share/postgresql/15/timezonesets/x": false,
		"usr/share/manual":                       false,
	} {
		if got := dropped(p, ociimage.File); got != want {
			t.Errorf("dropped(%s) = %v", p, got)
		}
	}
	if dropped("usr/share/doc/libfoo", ociimage.Symlink) || dropped("usr/share/doc/bash", ociimage.Dir) {
		t.Error("the links and directories leading to copyright files are dropped")
	}
}

func TestTreeResolve(t *testing.T) {
	tr := newTree()
	tr.dir("usr", 0o755, 0, 0)
	tr.dir("usr/bin", 0o755, 0, 0)
	tr.dir("usr/share/postgresql-common", 0o755, 0, 0)
	tr.file("usr/share/postgresql-common/pg_wrapper", 0o755, []byte("#!/usr/bin/perl"))
	tr.symlink("usr/bin/pg_dump", "../share/postgresql-common/pg_wrapper")
	tr.symlink("bin", "usr/bin")
	tr.symlink("usr/bin/loop", "loop")
	tr.symlink("usr/bin/abs", "/bin/pg_dump")
	for p, want := range map[string]string{
		"usr/bin/pg_dump": "usr/share/postgresql-common/pg_wrapper",
		"bin/pg_dump":     "usr/share/postgresql-common/pg_wrapper",
		"usr/bin/abs":     "usr/share/postgresql-common/pg_wrapper",
		"usr/bin/loop":    "",
		"usr/bin/missing": "",
	} {
		if got := tr.resolve(p); got != want {
			t.Errorf("resolve(%s) = %q, want %q", p, got, want)
		}
	}
}

func TestCABundle(t *testing.T) {
	cert := func(p, s string) ociimage.Entry {
		return ociimage.Entry{Path: p, Type: ociimage.File, Size: int64(len(s)), Open: ociimage.Bytes([]byte(s))}
	}
	got, err := caBundle([]ociimage.Entry{
		cert("usr/share/ca-certificates/mozilla/B.crt", "b"),
		cert("usr/share/ca-certificates/mozilla/A.crt", "a\n"),
		cert("usr/share/doc/ca-certificates/x.crt", "no"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a\nb\n" {
		t.Errorf("bundle %q", got)
	}
}

func TestDefinitions(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Definitions("0.1.0") {
		if seen[d.Short] {
			t.Errorf("%s twice", d.Short)
		}
		seen[d.Short] = true
		if len(d.Names) == 0 && d.VersionTag == nil {
			t.Errorf("%s: no name", d.Short)
		}
		for _, n := range withVersionTag(d, []Package{{Name: "postgresql-15", Version: "15.20-0+deb12u1"}, {Name: "mariadb-server", Version: "1:10.11.19-0+deb12u1"}}).Names {
			domain, _, _ := strings.Cut(n, "/")
			if !strings.Contains(domain, ".") || !strings.Contains(n[strings.LastIndex(n, "/"):], ":") {
				t.Errorf("%s: %s is not a fully qualified name with a tag", d.Short, n)
			}
		}
		if (len(d.Packages) > 0) == (len(d.Programs) > 0) {
			t.Errorf("%s: an image is made of packages or of a program", d.Short)
		}
		if len(d.Packages) > 0 && d.User == nil {
			t.Errorf("%s: no service user", d.Short)
		}
		for _, p := range d.Require {
			if strings.HasPrefix(p, "/") {
				t.Errorf("%s: %s is not relative to the root", d.Short, p)
			}
		}
	}
	if st := Definitions("1.2.3")[len(Definitions("1.2.3"))-1]; st.Names[0] != "ghcr.io/steward-dev/steward:1.2.3" || st.Config.Cmd != nil {
		t.Errorf("steward: %v, Cmd %v", st.Names, st.Config.Cmd)
	}
}

// TestVersionTag names the engines' images by their servers' versions, the
// previous point release's only by it.
func TestVersionTag(t *testing.T) {
	for v, want := range map[string]string{
		"15.20-0+deb12u1": "15.20", "1:10.11.19-0+deb12u1": "10.11.19", "5:7.0.15-1~deb12u10": "7.0.15",
		"1.6.18-1+deb12u1": "1.6.18", "248+deb12u1": "248+deb12u1", "2:1.2-3-4": "1.2-3",
	} {
		if got := (Package{Name: "x", Version: v}).Upstream(); got != want {
			t.Errorf("Upstream(%s) = %s, want %s", v, got, want)
		}
	}
	pkgs := []Package{{Name: "postgresql-15", Version: "15.18-0+deb12u1"}, {Name: "mariadb-server", Version: "1:10.11.18-0+deb12u1"}}
	names := map[string][]string{}
	for _, d := range Definitions("0.1.0") {
		names[d.Short] = withVersionTag(d, pkgs).Names
	}
	for short, want := range map[string][]string{
		"postgres":          {"docker.io/library/postgres:15", "docker.io/library/postgres:15.18"},
		"postgres-previous": {"docker.io/library/postgres:15.18"},
		"mariadb":           {"docker.io/library/mariadb:10.11", "docker.io/library/mariadb:10.11.18"},
		"mariadb-previous":  {"docker.io/library/mariadb:10.11.18"},
		"redis":             {"docker.io/library/redis:7.0"},
	} {
		if !slices.Equal(names[short], want) {
			t.Errorf("%s: names %v, want %v", short, names[short], want)
		}
	}
}

// TestVersion reads an image's server version from its key file.
func TestVersion(t *testing.T) {
	dir := t.TempDir()
	if err := writeKey(filepath.Join(dir, "mariadb-previous.key"), key{Packages: []Package{
		{Name: "mariadb-client", Version: "1:10.11.18-0+deb12u1"}, {Name: "mariadb-server", Version: "1:10.11.18-0+deb12u1"},
	}}); err != nil {
		t.Fatal(err)
	}
	if v, err := Version(dir, "mariadb-previous"); err != nil || v != "10.11.18" {
		t.Errorf("Version = %q, %v; want 10.11.18", v, err)
	}
	if _, err := Version(dir, "postgres"); err == nil {
		t.Error("Version of an image not built: no error")
	}
	if _, err := Version(dir, "redis"); err == nil {
		t.Error("Version of an image not named by a version: no error")
	}
}

// TestSpoolDeb reads a package built here with dpkg-deb: paths in the
// merged-/usr layout, documentation left out, content read back.
func TestSpoolDeb(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "pkg")
	for p, content := range map[string]string{
		"DEBIAN/control":               "Package: demo\nVersion: 1:1.0-1\nArchitecture: amd64\nMaintainer: x <x@example.com>\nDescription: demo\n",
		"bin/demo":                     "#!/bin/sh\necho demo\n",
		"lib/x86_64-linux-gnu/demo.a":  "lib",
		"usr/share/doc/demo/README":    "docs",
		"usr/share/doc/demo/copyright": "license",
		"usr/share/man/man1/demo.1.gz": "man",
		"var/run/demo/.keep":           "",
	} {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(p, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(f, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("demo", filepath.Join(root, "bin/demo2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../usr/share/demo", filepath.Join(root, "bin/share")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "bin/demo"), filepath.Join(root, "bin/demo-hard")); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(dir, "demo.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v: %s", err, out)
	}

	s, err := newSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	es, err := s.entries(context.Background(), deb)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ociimage.Entry{}
	for _, e := range es {
		got[e.Path] = e
	}
	for _, p := range []string{"usr/bin/demo", "usr/lib/x86_64-linux-gnu/demo.a", "usr/share/doc/demo/copyright", "run/demo/.keep"} {
		if e, ok := got[p]; !ok || e.Type != ociimage.File {
			t.Errorf("%s: missing or not a file", p)
		}
	}
	for _, p := range []string{"bin/demo", "usr/share/doc/demo/README", "usr/share/man/man1/demo.1.gz", "var/run/demo/.keep"} {
		if _, ok := got[p]; ok {
			t.Errorf("%s is in the image", p)
		}
	}
	if e := got["usr/bin/demo"]; e.Mode != 0o755 || e.UID != 0 {
		t.Errorf("usr/bin/demo: mode %v uid %d", e.Mode, e.UID)
	}
	if e := got["usr/bin/demo2"]; e.Type != ociimage.Symlink || e.Target != "demo" {
		t.Errorf("usr/bin/demo2: %+v", e)
	}
	if e := got["usr/bin/share"]; e.Type != ociimage.Symlink || e.Target != "../share/demo" {
		t.Errorf("usr/bin/share: %+v", e)
	}
	// dpkg-deb may store either name of the pair as the file.
	a, b := got["usr/bin/demo"], got["usr/bin/demo-hard"]
	bLinksA := a.Type == ociimage.File && b.Type == ociimage.Hardlink && b.Target == "usr/bin/demo"
	aLinksB := b.Type == ociimage.File && a.Type == ociimage.Hardlink && a.Target == "usr/bin/demo-hard"
	if !bLinksA && !aLinksB {
		t.Errorf("hard link pair: %+v %+v", a, b)
	}
	for _, p := range []string{"usr/bin/demo", "usr/share/doc/demo/copyright"} {
		e := got[p]
		if e.Type != ociimage.File {
			continue
		}
		r, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		_ = r.Close()
		if want := map[string]string{"usr/bin/demo": "#!/bin/sh\necho demo\n", "usr/share/doc/demo/copyright": "license"}[p]; string(b) != want {
			t.Errorf("%s holds %q", p, b)
		}
	}
	ctl, err := s.control(context.Background(), deb)
	if err != nil {
		t.Fatal(err)
	}
	if string(ctl) != "Package: demo\nVersion: 1:1.0-1\nArchitecture: amd64\n" {
		t.Errorf("control %q", ctl)
	}
}
