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

// Package images builds the container images a local cluster runs, without
// Docker and without a registry: the engines' images from Debian's packages
// (the machine's apt sources), the pod sandbox's pause image and Steward's
// own image, each written as an OCI image archive by internal/ociimage
// under the exact name Steward's pod specs use, ready for
// `ctr -n k8s.io images import`.
//
// An engine image is the package closure apt resolves for its packages
// against an empty system, unpacked from the .deb files' file trees in the
// merged-/usr layout with documentation left out, plus what the
// packages' maintainer scripts would have made and the image needs:
// /etc/passwd and /etc/group, /etc/nsswitch.conf, the alternatives
// symlinks, the service user's directories. No maintainer script runs and
// nothing is extracted on this machine.
//
// A build is skipped when the key file beside the archive matches: a hash
// of the image's definition, the resolved package versions, the programs
// put into it and BuilderVersion.
package images

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steward-dev/steward/internal/build/ociimage"
)

// BuilderVersion is part of every image's key: change it whenever the
// builder would make a different image from the same inputs.
const BuilderVersion = "2"

// LabelPackages lists the Debian packages an image was asked for, with
// their versions; /var/lib/dpkg/status.d lists every package in it.
const LabelPackages = "dev.steward.image.packages"

// Options configure a build.
type Options struct {
	// Out is the directory of the archives; the .deb files are cached in
	// its debs directory.
	Out string
	// StewardBinary is the operator's static binary for its image.
	StewardBinary string
	// Version is the operator image's tag.
	Version string
	// StewardImage, when set, is the operator image's full name instead
	// of StewardName:Version.
	StewardImage string
	// ModuleDir is the module's root, where the pause program is built.
	ModuleDir string
	// Log, when set, reports progress.
	Log func(format string, args ...any)
}

// Result is what became of one image.
type Result struct {
	Definition Definition
	File       string
	Size       int64
	// Built is false when the archive was up to date.
	Built    bool
	Packages []Package
	Took     time.Duration
}

// Build builds the images named by their short names, all when none are
// named.
func Build(ctx context.Context, opts Options, shorts []string) ([]Result, error) {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if opts.ModuleDir == "" {
		opts.ModuleDir = "."
	}
	defs := Definitions(opts.Version)
	if opts.StewardImage != "" {
		for i := range defs {
			if defs[i].Short == "steward" {
				defs[i].Names = []string{opts.StewardImage}
			}
		}
	}
	if len(shorts) > 0 {
		var picked []Definition
		for _, s := range shorts {
			i := slices.IndexFunc(defs, func(d Definition) bool { return d.Short == s })
			if i < 0 {
				return nil, fmt.Errorf("no image %q (known: %s)", s, strings.Join(Shorts(opts.Version), ", "))
			}
			picked = append(picked, defs[i])
		}
		defs = picked
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	b := &builder{opts: opts, apt: &apt{debs: filepath.Join(opts.Out, "debs"), log: opts.Log}}
	defer b.close()
	var results []Result
	for _, d := range defs {
		r, err := b.build(ctx, d)
		if err != nil {
			return results, fmt.Errorf("%s: %w", d.Short, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// Shorts are the images' short names.
func Shorts(version string) []string {
	var s []string
	for _, d := range Definitions(version) {
		s = append(s, d.Short)
	}
	return s
}

// Version is the upstream version of the package that names the image
// short in out (its VersionTag), as the archive's last build resolved it:
// 15.20 for postgres:15.20.
func Version(out, short string) (string, error) {
	i := slices.IndexFunc(Definitions(""), func(d Definition) bool { return d.Short == short })
	if i < 0 || Definitions("")[i].VersionTag == nil {
		return "", fmt.Errorf("image %q is not named by a version", short)
	}
	tag := Definitions("")[i].VersionTag
	raw, err := os.ReadFile(filepath.Join(out, short+".key"))
	if err != nil {
		return "", fmt.Errorf("image %s is not built: run `make images` (%w)", short, err)
	}
	var k key
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("reading %s's key: %w", short, err)
	}
	for _, p := range k.Packages {
		if p.Name == tag.Package {
			return p.Upstream(), nil
		}
	}
	return "", fmt.Errorf("image %s has no %s", short, tag.Package)
}

// ClusterShorts are the short names of the images every cluster loads:
// all but those built OnRequest.
func ClusterShorts(version string) []string {
	var s []string
	for _, d := range Definitions(version) {
		if !d.OnRequest {
			s = append(s, d.Short)
		}
	}
	return s
}

type builder struct {
	opts  Options
	apt   *apt
	spool *spool
	tmp   string

	dataOnce sync.Once
	data     map[string]Package // ca-certificates and tzdata, resolved alone
	dataErr  error
}

func (b *builder) close() {
	if b.spool != nil {
		_ = b.spool.Close()
	}
	if b.tmp != "" {
		_ = os.RemoveAll(b.tmp)
	}
}

// key is the content of an archive's key file.
type key struct {
	// Inputs hashes what is known before apt runs: when it matches, so
	// does everything else.
	Inputs string `json:"inputs"`
	// Content hashes what the image is made of.
	Content  string    `json:"content"`
	Packages []Package `json:"packages,omitempty"`
}

func hashOf(parts ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		if err := enc.Encode(p); err != nil {
			panic(err) // the definitions are plain data
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (b *builder) build(ctx context.Context, def Definition) (Result, error) {
	start := time.Now()
	res := Result{Definition: def, File: filepath.Join(b.opts.Out, def.Short+".tar")}
	keyFile := filepath.Join(b.opts.Out, def.Short+".key")

	var (
		progs   []programFile
		digests []string
		err     error
	)
	for _, p := range def.Programs {
		prog, perr := b.program(ctx, p)
		if perr != nil {
			return res, perr
		}
		progs, digests = append(progs, prog), append(digests, prog.digest)
	}
	usesApt := len(def.Packages) > 0 || def.CABundle || def.Zoneinfo
	lists := ""
	if usesApt {
		lists = listsFingerprint()
	}
	inputs := hashOf(BuilderVersion, def, Base, digests, lists)
	var old key
	if raw, err := os.ReadFile(keyFile); err == nil {
		_ = json.Unmarshal(raw, &old)
	}
	fi, statErr := os.Stat(res.File)
	if statErr == nil && usesApt && lists != "" && old.Inputs == inputs {
		res.Definition = withVersionTag(def, old.Packages)
		res.Size, res.Packages, res.Took = fi.Size(), old.Packages, time.Since(start)
		return res, nil
	}

	var pkgs []Package
	if len(def.Packages) > 0 {
		b.opts.Log("%s: resolving %s", def.Short, strings.Join(def.Packages, " "))
		if pkgs, err = b.apt.fetch(ctx, append(slices.Clone(def.Packages), Base...), def.Release); err != nil {
			return res, err
		}
	}
	data := map[string]Package{}
	if def.CABundle || def.Zoneinfo {
		if data, err = b.dataPackages(ctx); err != nil {
			return res, err
		}
	}
	def = withVersionTag(def, pkgs)
	res.Definition = def
	if len(def.Names) == 0 {
		return res, errors.New("no name: the package of its version tag was not resolved")
	}
	recorded := slices.Clone(pkgs)
	for _, name := range []string{"ca-certificates", "tzdata"} {
		if p, ok := data[name]; ok && !slices.ContainsFunc(recorded, func(q Package) bool { return q.Name == name }) {
			if name == "ca-certificates" && def.CABundle || name == "tzdata" && def.Zoneinfo {
				recorded = append(recorded, p)
			}
		}
	}
	slices.SortFunc(recorded, func(a, c Package) int { return strings.Compare(a.Name, c.Name) })
	content := hashOf(BuilderVersion, def, Base, digests, recorded)
	res.Packages = recorded
	newKey := key{Inputs: inputs, Content: content, Packages: recorded}
	if !usesApt {
		newKey.Inputs = content
	}
	if statErr == nil && old.Content == content {
		res.Size, res.Took = fi.Size(), time.Since(start)
		return res, writeKey(keyFile, newKey)
	}

	if len(recorded) > 0 {
		b.opts.Log("%s: building from %d packages", def.Short, len(recorded))
	} else {
		b.opts.Log("%s: building", def.Short)
	}
	t, err := b.assemble(ctx, def, pkgs, data, progs)
	if err != nil {
		return res, err
	}
	for _, c := range t.conflicts {
		b.opts.Log("%s: %s", def.Short, c)
	}
	cfg := def.Config
	if len(def.Packages) > 0 {
		cfg.Labels = withLabel(cfg.Labels, LabelPackages, requested(def.Packages, pkgs))
	}
	img := ociimage.Image{Names: def.Names, Created: epoch, Config: cfg, Entries: t.list()}
	// A failed or interrupted build must not leave a key that matches.
	_ = os.Remove(keyFile)
	if err := ociimage.WriteFile(res.File, img); err != nil {
		return res, err
	}
	if err := writeKey(keyFile, newKey); err != nil {
		return res, err
	}
	fi, err = os.Stat(res.File)
	if err != nil {
		return res, err
	}
	res.Size, res.Built, res.Took = fi.Size(), true, time.Since(start)
	return res, nil
}

func writeKey(name string, k key) error {
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}

// requested lists the asked-for packages with their resolved versions.
func requested(names []string, pkgs []Package) string {
	var parts []string
	for _, n := range names {
		for _, p := range pkgs {
			if p.Name == n {
				parts = append(parts, p.String())
			}
		}
	}
	return strings.Join(parts, " ")
}

// dataPackages resolves ca-certificates and tzdata, whose data (not their
// closure) some images carry.
func (b *builder) dataPackages(ctx context.Context) (map[string]Package, error) {
	b.dataOnce.Do(func() {
		pkgs, err := b.apt.fetch(ctx, []string{"ca-certificates", "tzdata"}, "")
		if err != nil {
			b.dataErr = err
			return
		}
		b.data = map[string]Package{}
		for _, p := range pkgs {
			if p.Name == "ca-certificates" || p.Name == "tzdata" {
				b.data[p.Name] = p
			}
		}
		if len(b.data) != 2 {
			b.dataErr = errors.New("apt resolved no ca-certificates or tzdata")
		}
	})
	return b.data, b.dataErr
}

// programFile is a program's binary and its digest.
type programFile struct {
	path, digest string
	size         int64
}

// program builds or finds def's program.
func (b *builder) program(ctx context.Context, p Program) (programFile, error) {
	bin := b.opts.StewardBinary
	if p.Package != "" {
		dir, err := b.tempDir()
		if err != nil {
			return programFile{}, err
		}
		bin = filepath.Join(dir, path.Base(p.Path))
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, p.Package)
		cmd.Dir = b.opts.ModuleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return programFile{}, fmt.Errorf("go build %s: %w: %s", p.Package, err, bytes.TrimSpace(out))
		}
	}
	if bin == "" {
		return programFile{}, fmt.Errorf("no binary for /%s", p.Path)
	}
	if err := checkStatic(bin); err != nil {
		return programFile{}, err
	}
	f, err := os.Open(bin)
	if err != nil {
		return programFile{}, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return programFile{}, err
	}
	return programFile{path: bin, digest: hex.EncodeToString(h.Sum(nil)), size: n}, nil
}

// checkStatic fails for anything but a static linux/amd64 executable: the
// images that carry one have no C library.
func checkStatic(name string) error {
	f, err := elf.Open(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer func() { _ = f.Close() }()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is for %s, not amd64", name, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", name)
		}
	}
	return nil
}

func (b *builder) tempDir() (string, error) {
	if b.tmp == "" {
		d, err := os.MkdirTemp(b.opts.Out, ".build-")
		if err != nil {
			return "", err
		}
		b.tmp = d
	}
	return b.tmp, nil
}

func (b *builder) debEntries(ctx context.Context, p Package) ([]ociimage.Entry, error) {
	if b.spool == nil {
		dir, err := b.tempDir()
		if err != nil {
			return nil, err
		}
		if b.spool, err = newSpool(dir); err != nil {
			return nil, err
		}
	}
	return b.spool.entries(ctx, filepath.Join(b.apt.debs, p.DebFile()))
}

// assemble makes the image's file system.
func (b *builder) assemble(ctx context.Context, def Definition, pkgs []Package, data map[string]Package, progs []programFile) (*tree, error) {
	t := newTree()
	if len(pkgs) > 0 {
		for _, p := range pkgs {
			es, err := b.debEntries(ctx, p)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				t.merge(p.Name, e)
			}
		}
		if err := b.debianSystem(ctx, t, def, pkgs); err != nil {
			return nil, err
		}
	}
	if def.Zoneinfo && !t.has("usr/share/zoneinfo") {
		es, err := b.debEntries(ctx, data["tzdata"])
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if under(e.Path, "usr/share/zoneinfo") {
				t.merge("tzdata", e)
			}
		}
	}
	if def.CABundle {
		es, err := b.debEntries(ctx, data["ca-certificates"])
		if err != nil {
			return nil, err
		}
		bundle, err := caBundle(es)
		if err != nil {
			return nil, err
		}
		t.file("etc/ssl/certs/ca-certificates.crt", 0o644, bundle)
	}
	for i, prog := range progs {
		f := prog.path
		t.set(ociimage.Entry{Path: def.Programs[i].Path, Type: ociimage.File, Mode: 0o755, Size: prog.size,
			Open: func() (io.ReadCloser, error) { return os.Open(f) }})
	}
	for _, d := range def.Dirs {
		t.dir(mergedPath(d.Path), d.Mode, d.UID, d.GID)
	}
	for _, f := range def.Files {
		t.file(mergedPath(f.Path), f.Mode, []byte(f.Content))
	}
	for _, s := range def.Symlinks {
		t.symlink(mergedPath(s.Path), s.Target)
	}
	t.dropDanglingHardlinks()
	var missing []string
	for _, r := range def.Require {
		p := t.resolve(r)
		if p == "" || (t.entries[p].Type != ociimage.File && t.entries[p].Type != ociimage.Hardlink) {
			missing = append(missing, "/"+r)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the image lacks %s", strings.Join(missing, ", "))
	}
	return t, nil
}

// caBundle concatenates the certificates of Mozilla's store in path order,
// as update-ca-certificates does with the default configuration.
func caBundle(es []ociimage.Entry) ([]byte, error) {
	var certs []ociimage.Entry
	for _, e := range es {
		if e.Type == ociimage.File && under(e.Path, "usr/share/ca-certificates/mozilla") && strings.HasSuffix(e.Path, ".crt") {
			certs = append(certs, e)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("ca-certificates holds no certificates")
	}
	slices.SortFunc(certs, func(a, b ociimage.Entry) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	for _, c := range certs {
		r, err := c.Open()
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(&buf, r)
		_ = r.Close()
		if err != nil {
			return nil, err
		}
		if buf.Len() > 0 && buf.Bytes()[buf.Len()-1] != '\n' {
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), nil
}

// alternatives are the update-alternatives links the packages' maintainer
// scripts would make: the first choice present wins, as the highest
// priority would.
var alternatives = []struct {
	link, name string
	choices    []string
}{
	{"usr/bin/awk", "awk", []string{"usr/bin/gawk", "usr/bin/mawk"}},
	{"usr/bin/nawk", "nawk", []string{"usr/bin/gawk", "usr/bin/mawk"}},
	{"usr/bin/which", "which", []string{"usr/bin/which.debianutils"}},
	{"usr/bin/w", "w", []string{"usr/bin/w.procps"}},
	{"etc/mysql/my.cnf", "my.cnf", []string{"etc/mysql/mariadb.cnf", "etc/mysql/my.cnf.fallback"}},
}

// debianSystem adds what dpkg's maintainer scripts and the merged-/usr
// layout would have made.
func (b *builder) debianSystem(ctx context.Context, t *tree, def Definition, pkgs []Package) error {
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		t.symlink(d, "usr/"+d)
	}
	// base-files' postinst.
	t.dir("run/lock", 0o1777, 0, 0)
	t.symlink("var/run", "/run")
	t.symlink("var/lock", "/run/lock")
	t.dir("tmp", 0o1777, 0, 0)
	t.dir("var/tmp", 0o1777, 0, 0)
	t.dir("root", 0o700, 0, 0)
	if profile, err := t.content("usr/share/base-files/profile"); err == nil {
		t.file("etc/profile", 0o644, profile)
	}
	if t.has("etc/dpkg/origins/debian") {
		t.symlink("etc/dpkg/origins/default", "debian")
	}
	// tzdata's postinst.
	if t.has("usr/share/zoneinfo/Etc/UTC") {
		t.symlink("etc/localtime", "/usr/share/zoneinfo/Etc/UTC")
		t.file("etc/timezone", 0o644, []byte("Etc/UTC\n"))
	}
	// adduser in the packages' postinst, with the official images' ids.
	passwd := "root:x:0:0:root:/root:/bin/bash\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group := "root:x:0:\nnogroup:x:65534:\n"
	if u := def.User; u != nil {
		passwd += fmt.Sprintf("%s:x:%d:%d:%s:%s:%s\n", u.Name, u.UID, u.GID, u.Name, u.Home, u.Shell)
		group += fmt.Sprintf("%s:x:%d:\n", u.Name, u.GID)
	}
	t.file("etc/passwd", 0o644, []byte(passwd))
	t.file("etc/group", 0o644, []byte(group))
	t.file("etc/nsswitch.conf", 0o644, []byte(nsswitch))
	// Kubernetes and Docker mount their own /etc/hosts; a container run
	// without one still finds localhost, which mariadb-install-db looks up.
	t.file("etc/hosts", 0o644, []byte("127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n"))
	for _, a := range alternatives {
		for _, c := range a.choices {
			if t.has(c) {
				t.symlink("etc/alternatives/"+a.name, "/"+c)
				t.symlink(a.link, "/etc/alternatives/"+a.name)
				break
			}
		}
	}
	// The packages, as scanners read them in distroless images.
	for _, p := range pkgs {
		ctl, err := b.spool.control(ctx, filepath.Join(b.apt.debs, p.DebFile()))
		if err != nil {
			return err
		}
		t.file("var/lib/dpkg/status.d/"+p.Name, 0o644, ctl)
	}
	return nil
}

// ChartAppVersion reads appVersion from the Helm chart at name: the tag of
// Steward's image.
func ChartAppVersion(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("the steward image's tag: %w", err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`), nil
		}
	}
	return "", fmt.Errorf("%s has no appVersion", name)
}
