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

package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// modulePath identifies the repository root: the directory whose go.mod
// declares this module.
const modulePath = "github.com/steward-dev/steward"

// stagesDirName is the directory next to the binaries that holds the kwok
// Stage manifests (kwok's kustomize/stage tree).
const stagesDirName = "kwok-stages"

// binaries lists the executables a bin directory must hold.
var binaries = []string{
	"etcd",
	"kube-apiserver",
	"kube-controller-manager",
	"kube-scheduler",
	"kubectl",
	"kwok",
}

// BinDir returns the directory holding the control-plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok) and
// the kwok-stages folder. It looks, in order, at:
//   - $KUBEBUILDER_ASSETS, when it holds all of them;
//   - the repository cache <repo root>/bin/k8s/<version>-linux-<GOARCH>/,
//     newest version first, where the repository root is the nearest parent
//     of the working directory whose go.mod declares this module.
//
// When neither is complete it returns an error asking to run `make kube-bins`.
func BinDir() (string, error) {
	var looked []string
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if completeBinDir(dir) {
			return filepath.Abs(dir)
		}
		looked = append(looked, "$KUBEBUILDER_ASSETS="+dir)
	}
	root, err := RepoRoot()
	if err != nil {
		looked = append(looked, fmt.Sprintf("the repository cache (%v)", err))
	} else {
		pattern := filepath.Join(root, "bin", "k8s", "*-linux-"+runtime.GOARCH)
		candidates, _ := filepath.Glob(pattern)
		sortNewestFirst(candidates)
		for _, dir := range candidates {
			if completeBinDir(dir) {
				return dir, nil
			}
		}
		looked = append(looked, pattern)
	}
	return "", fmt.Errorf("no complete set of control-plane binaries (%s) with %s/ in %s: run `make kube-bins` (hack/kube-bins.sh) to build them",
		strings.Join(binaries, ", "), stagesDirName, strings.Join(looked, " or "))
}

// completeBinDir reports whether dir holds every binary, executable, and the
// kwok stages folder.
func completeBinDir(dir string) bool {
	for _, name := range binaries {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	info, err := os.Stat(filepath.Join(dir, stagesDirName))
	return err == nil && info.IsDir()
}

// RepoRoot returns Steward's repository root: the nearest parent of the
// working directory whose go.mod declares this module.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting the working directory: %w", err)
	}
	for dir := wd; ; {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, wd)
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod file at path declares modulePath.
func declaresModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`+"`") == modulePath
		}
	}
	return false
}

// sortNewestFirst orders <version>-linux-<arch> directories by descending
// version, comparing dot-separated numbers numerically.
func sortNewestFirst(dirs []string) {
	version := func(dir string) []string {
		v, _, _ := strings.Cut(filepath.Base(dir), "-")
		return strings.Split(v, ".")
	}
	slices.SortFunc(dirs, func(a, b string) int {
		va, vb := version(a), version(b)
		for i := 0; i < len(va) && i < len(vb); i++ {
			na, errA := strconv.Atoi(va[i])
			nb, errB := strconv.Atoi(vb[i])
			switch {
			case errA == nil && errB == nil && na != nb:
				return nb - na
			case (errA != nil || errB != nil) && va[i] != vb[i]:
				return strings.Compare(vb[i], va[i])
			}
		}
		return len(vb) - len(va)
	})
}
