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
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

// The archives `make images` leaves in bin/images are checked when they
// are there; with STEWARD_REQUIRE_REAL_NODE=1 a missing one fails the test.

const archiveDir = "../../../bin/images"

func readArchive(t *testing.T, short string) *ociimage.Contents {
	t.Helper()
	name := filepath.Join(archiveDir, short+".tar")
	if _, err := os.Stat(name); err != nil {
		if os.Getenv("STEWARD_REQUIRE_REAL_NODE") == "1" {
			t.Fatalf("STEWARD_REQUIRE_REAL_NODE=1 but %s is missing: run make images", name)
		}
		t.Skipf("%s is missing: make images builds it", name)
	}
	c, err := ociimage.Read(name, func(p string) bool {
		return strings.HasPrefix(p, "etc/") && !strings.HasPrefix(p, "etc/ssl/")
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// layer is an archive's layer by path, with symlinks followed.
type layer map[string]*tar.Header

func layerOf(c *ociimage.Contents) layer {
	l := layer{}
	for _, h := range c.Layer {
		l[strings.TrimSuffix(h.Name, "/")] = h
	}
	return l
}

// resolve follows symlinks to the entry p leads to.
func (l layer) resolve(p string) (*tar.Header, string) {
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(p, "/")
		cur, followed := "", false
		for i, part := range parts {
			next := path.Join(cur, part)
			h, ok := l[next]
			if !ok {
				return nil, ""
			}
			if h.Typeflag == tar.TypeSymlink {
				target := h.Linkname
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
			return l[cur], cur
		}
	}
	return nil, ""
}

// executable checks that p leads to a regular file anyone may run.
func (l layer) executable(t *testing.T, p string) {
	t.Helper()
	h, where := l.resolve(p)
	switch {
	case h == nil:
		t.Errorf("/%s is missing or leads nowhere", p)
	case h.Typeflag == tar.TypeLink:
		if target := l[h.Linkname]; target == nil || target.Mode&0o111 != 0o111 {
			t.Errorf("/%s (%s, a hard link) is not executable", p, where)
		}
	case h.Typeflag != tar.TypeReg || h.Mode&0o111 != 0o111:
		t.Errorf("/%s (%s) is not an executable file: mode %o type %c", p, where, h.Mode, h.Typeflag)
	}
}

func (l layer) owned(t *testing.T, p string, mode int64, uid, gid int) {
	t.Helper()
	h, _ := l.resolve(p)
	if h == nil || h.Typeflag != tar.TypeDir || h.Mode != mode || h.Uid != uid || h.Gid != gid {
		t.Errorf("/%s: want a directory %o owned by %d:%d, got %+v", p, mode, uid, gid, h)
	}
}

func TestStewardArchive(t *testing.T) {
	c := readArchive(t, "steward")
	l := layerOf(c)
	if len(c.Names) != 1 || strings.HasSuffix(c.Names[0], ":latest") || c.Tags[0] == "" {
		t.Errorf("names %v: want one name with a version's tag", c.Names)
	}
	cfg := c.Config.Config
	if cfg.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/steward"}) || cfg.Cmd != nil {
		t.Errorf("Entrypoint %q Cmd %q: database pods pass copy-binary as arguments only", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.WorkingDir != "/" {
		t.Errorf("WorkingDir %q", cfg.WorkingDir)
	}
	l.executable(t, "steward")
	if h := l["steward"]; h == nil || h.Uid != 0 || h.Mode != 0o755 {
		t.Errorf("/steward: %+v", h)
	}
	if h := l["etc/ssl/certs/ca-certificates.crt"]; h == nil || h.Size < 100_000 {
		t.Errorf("CA bundle: %+v", h)
	}
	for _, z := range []string{"usr/share/zoneinfo/UTC", "usr/share/zoneinfo/Europe/Berlin", "usr/share/zoneinfo/America/New_York", "usr/share/zoneinfo/Asia/Tokyo"} {
		if h, _ := l.resolve(z); h == nil || h.Typeflag != tar.TypeReg {
			t.Errorf("/%s is missing", z)
		}
	}
	if !bytes.Contains(c.Files["etc/passwd"], []byte("nonroot:x:65532:65532:nonroot:/home/nonroot:")) ||
		!bytes.Contains(c.Files["etc/group"], []byte("nonroot:x:65532:")) {
		t.Errorf("passwd %q group %q", c.Files["etc/passwd"], c.Files["etc/group"])
	}
	if !bytes.Contains(c.Files["etc/nsswitch.conf"], []byte("hosts:          files dns")) {
		t.Errorf("nsswitch.conf %q", c.Files["etc/nsswitch.conf"])
	}
	l.owned(t, "tmp", 0o1777, 0, 0)
	l.owned(t, "home/nonroot", 0o700, 65532, 65532)
	for _, h := range c.Layer {
		p := strings.TrimSuffix(h.Name, "/")
		if (h.Uid != 0 || h.Gid != 0) && p != "tmp" && !under(p, "home/nonroot") {
			t.Errorf("/%s is owned by %d:%d", p, h.Uid, h.Gid)
		}
	}
}

func TestEngineArchives(t *testing.T) {
	for _, d := range Definitions("") {
		if len(d.Packages) == 0 {
			continue
		}
		t.Run(d.Short, func(t *testing.T) {
			c := readArchive(t, d.Short)
			l := layerOf(c)
			cfg := c.Config.Config
			// The names, with the version tag of the packages the label
			// says the image was made of.
			var pkgs []Package
			for _, p := range strings.Fields(cfg.Labels[LabelPackages]) {
				name, version, _ := strings.Cut(p, "=")
				pkgs = append(pkgs, Package{Name: name, Version: version})
			}
			if want := withVersionTag(d, pkgs).Names; len(want) == 0 || !slices.Equal(c.Names, want) || !slices.Equal(c.RepoTags, want) {
				t.Errorf("names %v, manifest.json %v, want %v", c.Names, c.RepoTags, want)
			}
			for _, e := range d.Config.Env {
				if !slices.Contains(cfg.Env, e) {
					t.Errorf("Env %v lacks %s", cfg.Env, e)
				}
			}
			if cfg.User != d.Config.User || !slices.Equal(cfg.Cmd, d.Config.Cmd) || cfg.WorkingDir != d.Config.WorkingDir {
				t.Errorf("User %q Cmd %q WorkingDir %q", cfg.User, cfg.Cmd, cfg.WorkingDir)
			}
			if cfg.Labels[LabelPackages] == "" {
				t.Errorf("no %s label", LabelPackages)
			}
			u := d.User
			if line := fmt.Sprintf("%s:x:%d:%d:", u.Name, u.UID, u.GID); !bytes.Contains(c.Files["etc/passwd"], []byte("\n"+line)) {
				t.Errorf("/etc/passwd lacks %s: %q", line, c.Files["etc/passwd"])
			}
			if !bytes.Contains(c.Files["etc/group"], fmt.Appendf(nil, "\n%s:x:%d:", u.Name, u.GID)) {
				t.Errorf("/etc/group %q", c.Files["etc/group"])
			}
			if !bytes.Contains(c.Files["etc/nsswitch.conf"], []byte("hosts:          files dns")) {
				t.Errorf("nsswitch.conf %q", c.Files["etc/nsswitch.conf"])
			}
			for _, dir := range []string{"bin", "sbin", "lib", "lib64"} {
				if h := l[dir]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/"+dir {
					t.Errorf("/%s: %+v", dir, h)
				}
			}
			if h := l["usr/bin/sh"]; h == nil || h.Linkname != "dash" {
				t.Errorf("/bin/sh: %+v", h)
			}
			l.owned(t, "tmp", 0o1777, 0, 0)
			for _, dir := range d.Dirs {
				l.owned(t, dir.Path, int64(dir.Mode&0o7777), dir.UID, dir.GID)
			}
			for _, p := range d.Require {
				if h, _ := l.resolve(p); h == nil {
					t.Errorf("/%s is missing", p)
				}
			}
			for _, p := range []string{"usr/bin/bash", "usr/bin/dash", "usr/bin/sed", "usr/bin/grep", "usr/bin/find", "usr/bin/hostname", "usr/bin/ps"} {
				l.executable(t, p)
			}
			var docs, status int
			for _, h := range c.Layer {
				switch {
				case strings.HasPrefix(h.Name, "usr/share/man/"):
					docs++
				case strings.HasPrefix(h.Name, "var/lib/dpkg/status.d/"):
					status++
				}
			}
			if docs > 0 || status < 20 {
				t.Errorf("%d manual pages, %d packages in /var/lib/dpkg/status.d", docs, status)
			}
		})
	}
}

// TestEngineProgramsExecutable checks the programs Steward runs in each
// engine image: found through the image's PATH and executable.
func TestEngineProgramsExecutable(t *testing.T) {
	programs := map[string][]string{
		"postgres":  {"postgres", "initdb", "pg_ctl", "pg_basebackup", "pg_controldata", "pg_rewind", "psql", "pg_dump", "pg_restore"},
		"mariadb":   {"mariadbd", "mariadb-install-db", "mariadb", "mariadb-dump", "my_print_defaults", "resolveip"},
		"redis":     {"sh", "redis-server", "redis-cli"},
		"memcached": {"memcached"},
		"nginx":     {"nginx", "curl"},
		"demo-app":  {"nginx", "curl", "psql", "redis-cli"},
	}
	for _, d := range Definitions("") {
		names, ok := programs[d.Short]
		if !ok {
			continue
		}
		t.Run(d.Short, func(t *testing.T) {
			c := readArchive(t, d.Short)
			l := layerOf(c)
			var dirs []string
			for _, e := range c.Config.Config.Env {
				if v, ok := strings.CutPrefix(e, "PATH="); ok {
					dirs = strings.Split(v, ":")
				}
			}
			for _, n := range names {
				found := false
				for _, dir := range dirs {
					if h, _ := l.resolve(strings.TrimPrefix(path.Join(dir, n), "/")); h != nil {
						l.executable(t, strings.TrimPrefix(path.Join(dir, n), "/"))
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s is not on PATH %v", n, dirs)
				}
			}
		})
	}
}
