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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Package is one Debian package at an exact version.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
}

// String is the package as apt-get takes it: name=version.
func (p Package) String() string { return p.Name + "=" + p.Version }

// Upstream is the version without its epoch and Debian revision:
// 1:10.11.19-0+deb12u1 is 10.11.19.
func (p Package) Upstream() string {
	v := p.Version
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndex(v, "-"); i > 0 {
		v = v[:i]
	}
	return v
}

// DebFile is the name apt-get download gives the package's file.
func (p Package) DebFile() string {
	return p.Name + "_" + strings.ReplaceAll(p.Version, ":", "%3a") + "_" + p.Arch + ".deb"
}

// apt resolves and downloads packages with the machine's apt: its sources,
// its package lists, its resolver.
type apt struct {
	// debs is the download cache.
	debs string
	log  func(format string, args ...any)

	mu      sync.Mutex
	updated bool
}

// instLine matches the simulation's "Inst name (version release [arch])"
// lines; a package already known to the empty status never appears.
var instLine = regexp.MustCompile(`^Inst (\S+) (?:\[\S+\] )?\((\S+) .*\[(\S+)\]\)`)

// parseSimulation returns the packages of an apt-get -s install output,
// sorted by name.
func parseSimulation(out []byte) ([]Package, error) {
	var pkgs []Package
	for line := range strings.Lines(string(out)) {
		if !strings.HasPrefix(line, "Inst ") {
			continue
		}
		m := instLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("cannot read apt's line %q", strings.TrimSpace(line))
		}
		pkgs = append(pkgs, Package{Name: m[1], Version: m[2], Arch: m[3]})
	}
	if len(pkgs) == 0 {
		return nil, errors.New("apt-get installed nothing in its simulation")
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Name, b.Name) })
	return pkgs, nil
}

// listsPresent reports whether apt has package lists to resolve against.
func listsPresent() bool {
	m, _ := filepath.Glob("/var/lib/apt/lists/*_Packages*")
	return len(m) > 0
}

// listsFingerprint changes whenever apt's package lists do.
func listsFingerprint() string {
	m, _ := filepath.Glob("/var/lib/apt/lists/*_Packages*")
	slices.Sort(m)
	h := sha256.New()
	for _, f := range m {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// update runs apt-get update once per build. A source that cannot be
// reached makes apt-get fail even when the others were read; that is an
// error only when no lists are left.
func (a *apt) update(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.updated {
		return nil
	}
	a.log("Updating apt's package lists")
	out, err := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput()
	if err != nil && !listsPresent() {
		return fmt.Errorf("apt-get update: %w: %s", err, tail(out))
	}
	if err != nil {
		a.log("apt-get update reported a problem, going on with the lists it has: %s", tail(out))
	}
	a.updated = true
	return nil
}

// resolve is the closure of pkgs that apt would install into an empty
// system without recommended packages, preferring release's versions when
// release is set.
func (a *apt) resolve(ctx context.Context, pkgs []string, release string) ([]Package, error) {
	if !listsPresent() {
		if err := a.update(ctx); err != nil {
			return nil, err
		}
	}
	args := append([]string{"install", "-s", "-q", "--no-install-recommends",
		"-o", "Dir::State::status=/dev/null", "-o", "APT::Architecture=amd64",
		"-o", "Debug::NoLocking=1"}, pkgs...)
	if release != "" {
		args = append(args, "-t", release)
	}
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("resolving %s with apt-get: %w: %s", strings.Join(pkgs, " "), err, tail(stderr.Bytes()))
	}
	return parseSimulation(out)
}

// download fetches the packages missing from the cache. When the mirror no
// longer has a version the lists name, the lists are old: the caller
// updates them and resolves again.
func (a *apt) download(ctx context.Context, pkgs []Package) error {
	var missing []string
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(a.debs, p.DebFile())); err != nil {
			missing = append(missing, p.String())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(a.debs, 0o755); err != nil {
		return err
	}
	a.log("Downloading %d packages", len(missing))
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download", "-q"}, missing...)...)
	cmd.Dir = a.debs
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &downloadError{err: fmt.Errorf("apt-get download: %w: %s", err, tail(out))}
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(a.debs, p.DebFile())); err != nil {
			return &downloadError{err: fmt.Errorf("apt-get download left no %s", p.DebFile())}
		}
	}
	return nil
}

type downloadError struct{ err error }

func (e *downloadError) Error() string { return e.err.Error() }
func (e *downloadError) Unwrap() error { return e.err }

// fetch resolves and downloads pkgs, from release when set; when a
// download fails it updates the lists once and tries again.
func (a *apt) fetch(ctx context.Context, pkgs []string, release string) ([]Package, error) {
	resolved, err := a.resolve(ctx, pkgs, release)
	if err != nil {
		return nil, err
	}
	err = a.download(ctx, resolved)
	var de *downloadError
	if !errors.As(err, &de) {
		return resolved, err
	}
	a.log("%v; updating the lists and trying again", err)
	a.mu.Lock()
	a.updated = false
	a.mu.Unlock()
	if err := a.update(ctx); err != nil {
		return nil, err
	}
	if resolved, err = a.resolve(ctx, pkgs, release); err != nil {
		return nil, err
	}
	return resolved, a.download(ctx, resolved)
}

// tail is the end of a command's output, for an error message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
