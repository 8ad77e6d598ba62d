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

package postgres

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/steward-dev/steward/internal/engine"
)

// prepareDataDir creates DataDir with mode 0700 and checks it is empty.
func prepareDataDir(cfg engine.Config) error {
	if cfg.DataDir == "" {
		return errors.New("no data directory")
	}
	if err := prepareDir(cfg, cfg.DataDir); err != nil {
		return err
	}
	entries, err := os.ReadDir(cfg.DataDir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty (%s, ...); use a subdirectory of the volume", cfg.DataDir, entries[0].Name())
	}
	return nil
}

// prepareDir creates dir with mode 0700 when missing and, running as root with
// RunAsUID set, gives it to that user. A directory of its own gets mode 0700;
// one that belongs to another user, such as an emptyDir's mount point (root's,
// writable by all or by the pod's fsGroup), is left as it is: its files are
// private by their own modes.
func prepareDir(cfg engine.Config, dir string) error {
	const perm = 0o700
	if dir == "" {
		return errors.New("a directory is not configured")
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	if err := chown(cfg, dir); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil
	}
	if fi.Mode().Perm() != perm {
		return os.Chmod(dir, perm)
	}
	return nil
}

func chown(cfg engine.Config, path string) error {
	if cfg.RunAsUID == 0 || os.Geteuid() != 0 {
		return nil
	}
	return os.Chown(path, int(cfg.RunAsUID), int(cfg.RunAsGID))
}

// writeSecretFile writes content to a new file in RunDir with mode 0600,
// readable by the server's user.
func writeSecretFile(cfg engine.Config, pattern, content string) (string, error) {
	f, err := os.CreateTemp(cfg.RunDir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	if err = f.Chmod(0o600); err == nil {
		_, err = f.WriteString(content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = chown(cfg, name)
	}
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("writing a secret file in %s: %w", cfg.RunDir, err)
	}
	return name, nil
}

// writePassfile writes <RunDir>/pgpass with the replication user's and the
// superuser's passwords for any host, atomically. pg_rewind connects to a
// new primary as the superuser.
func writePassfile(cfg engine.Config) (string, error) {
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	line := fmt.Sprintf("*:*:*:%s:%s\n", esc.Replace(cfg.Replication.Username), esc.Replace(cfg.Replication.Password))
	if cfg.Superuser.Username != "" && cfg.Superuser.Username != cfg.Replication.Username {
		line += fmt.Sprintf("*:*:*:%s:%s\n", esc.Replace(cfg.Superuser.Username), esc.Replace(cfg.Superuser.Password))
	}
	return replaceRunFile(cfg, "pgpass", line)
}

// replaceRunFile writes <RunDir>/name (mode 0600, owned by the server's
// user) atomically, and returns its path.
func replaceRunFile(cfg engine.Config, name, content string) (string, error) {
	tmp, err := writeSecretFile(cfg, name+"-", content)
	if err != nil {
		return "", err
	}
	p := filepath.Join(cfg.RunDir, name)
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return p, nil
}

func writeStandbySignal(cfg engine.Config) error {
	p := filepath.Join(cfg.DataDir, "standby.signal")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return err
	}
	return chown(cfg, p)
}
