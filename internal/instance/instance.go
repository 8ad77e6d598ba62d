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

// Package instance is the instance manager, `steward instance`: the
// entrypoint of every database pod. It initialises the data directory (a
// new database on the primary, a clone of the primary on a replica), runs
// the engine's server as a child process, serves health, readiness and
// status over HTTP, reloads the configuration when ConfigDir changes, and
// stops the server cleanly on SIGTERM.
//
// It is configured by environment variables, whose names are the Env*
// constants below so that the operator's StatefulSet builder uses the same.
// The pod provides (see the engine packages for engine specifics):
//
//   - STEWARD_ENGINE: the engine name, e.g. "postgres";
//   - STEWARD_DATA_DIR: a directory one level below the volume's mount point;
//   - STEWARD_CONFIG_DIR: the rendered configuration (a ConfigMap volume);
//   - STEWARD_RUN_DIR: a writable emptyDir for sockets and secret files;
//   - POD_NAME: the StatefulSet pod name, the instance's name; the number
//     after the last '-' is the ordinal, ServerID is ordinal + 1;
//   - STEWARD_PRIMARY_PORT: the primary's port when an assignment gives
//     none (default STEWARD_PORT);
//   - the credentials, from a Secret, and STEWARD_DATABASE;
//   - optionally STEWARD_PORT (the engine's default when unset),
//     STEWARD_BIN_DIR (default $PATH), STEWARD_RUN_AS_UID and _GID (when the
//     container runs as root) and STEWARD_CONFIG_POLL_INTERVAL (default 5s).
//
// HTTP endpoints on STEWARD_STATUS_ADDR (default ":8008"):
//
//   - /healthz: 200 while the manager runs, whatever the server does: the
//     operator, not a restart of the container, decides what happens to
//     an instance whose server stopped;
//   - /readyz: 200 when the engine's Status is Ready, otherwise 503 with the
//     reason;
//   - /status: the Report as JSON (200 even when not ready): the
//     engine.Status, the manager's phase and term;
//   - POST /role: an Assignment from the operator, with the bearer token
//     ControlToken(replication password). Which instance is the primary is
//     the operator's decision alone (see manager.go): the server does not
//     start before the first assignment.
package instance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/engine"
	// The engines the instance manager can run.
	_ "github.com/steward-dev/steward/internal/engine/mysql"
	_ "github.com/steward-dev/steward/internal/engine/postgres"
)

// Environment variables of `steward instance`.
const (
	EnvEngine              = "STEWARD_ENGINE"
	EnvDataDir             = "STEWARD_DATA_DIR"
	EnvConfigDir           = "STEWARD_CONFIG_DIR"
	EnvRunDir              = "STEWARD_RUN_DIR"
	EnvBinDir              = "STEWARD_BIN_DIR"
	EnvPort                = "STEWARD_PORT"
	EnvStatusAddr          = "STEWARD_STATUS_ADDR"
	EnvPodName             = "POD_NAME"
	EnvPrimaryPort         = "STEWARD_PRIMARY_PORT"
	EnvDatabase            = "STEWARD_DATABASE"
	EnvSuperuserUsername   = "STEWARD_SUPERUSER_USERNAME"
	EnvSuperuserPassword   = "STEWARD_SUPERUSER_PASSWORD"
	EnvOwnerUsername       = "STEWARD_OWNER_USERNAME"
	EnvOwnerPassword       = "STEWARD_OWNER_PASSWORD"
	EnvReplicationUsername = "STEWARD_REPLICATION_USERNAME"
	EnvReplicationPassword = "STEWARD_REPLICATION_PASSWORD"
	// EnvRunAsUID and EnvRunAsGID (optional) are the user the engine's
	// processes run as when the manager runs as root; engines refuse root.
	EnvRunAsUID = "STEWARD_RUN_AS_UID"
	EnvRunAsGID = "STEWARD_RUN_AS_GID"
	// EnvConfigPollInterval (optional, a Go duration, default 5s) is how
	// often ConfigDir is checked for changes.
	EnvConfigPollInterval = "STEWARD_CONFIG_POLL_INTERVAL"
)

// DefaultStatusAddr is where the HTTP endpoints listen by default.
const DefaultStatusAddr = ":8008"

// Options are the settings of one run.
type Options struct {
	Engine     engine.Engine
	Config     engine.Config
	StatusAddr string
	// PollInterval is how often ConfigDir is checked for changes; zero
	// means 5 seconds.
	PollInterval time.Duration
	// StopTimeout bounds the clean shutdown; zero means 60 seconds.
	StopTimeout time.Duration
	// RebuildAfter is how long a replica may neither stream nor advance,
	// while its primary serves, before it is wound back (a clone afresh
	// waits longer, see cloneWaits); zero means DefaultRebuildAfter.
	RebuildAfter time.Duration
	// Log receives the manager's log.
	Log *slog.Logger
	// Listening, when set, is called with the status server's address once
	// it listens.
	Listening func(addr net.Addr)
}

// FromEnv reads the Options from environment variables through getenv.
func FromEnv(getenv func(string) string) (Options, error) {
	var missing []string
	need := func(name string) string {
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	}
	intVar := func(name string, def int) (int, error) {
		v := getenv(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65535 {
			return 0, fmt.Errorf("%s=%q is not a port number", name, v)
		}
		return n, nil
	}
	o := Options{StatusAddr: getenv(EnvStatusAddr)}
	if o.StatusAddr == "" {
		o.StatusAddr = DefaultStatusAddr
	}
	engineName := need(EnvEngine)
	c := engine.Config{
		DataDir:     need(EnvDataDir),
		ConfigDir:   need(EnvConfigDir),
		RunDir:      need(EnvRunDir),
		BinDir:      getenv(EnvBinDir),
		Database:    need(EnvDatabase),
		Superuser:   engine.Credentials{Username: need(EnvSuperuserUsername), Password: need(EnvSuperuserPassword)},
		Owner:       engine.Credentials{Username: need(EnvOwnerUsername), Password: need(EnvOwnerPassword)},
		Replication: engine.Credentials{Username: need(EnvReplicationUsername), Password: need(EnvReplicationPassword)},
	}
	pod := need(EnvPodName)
	if len(missing) > 0 {
		return o, fmt.Errorf("missing environment variables: %s", strings.Join(missing, ", "))
	}
	for _, id := range []struct {
		name string
		dst  *uint32
	}{{EnvRunAsUID, &c.RunAsUID}, {EnvRunAsGID, &c.RunAsGID}} {
		if v := getenv(id.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return o, fmt.Errorf("%s=%q is not a numeric id", id.name, v)
			}
			*id.dst = uint32(n)
		}
	}
	if v := getenv(EnvConfigPollInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s=%q is not a positive duration", EnvConfigPollInterval, v)
		}
		o.PollInterval = d
	}
	ordinal, err := Ordinal(pod)
	if err != nil {
		return o, err
	}
	c.ServerID, c.Name = ordinal+1, pod
	if c.Port, err = intVar(EnvPort, 0); err != nil {
		return o, err
	}
	// The primary's port when an assignment gives none.
	if c.PrimaryPort, err = intVar(EnvPrimaryPort, c.Port); err != nil {
		return o, err
	}
	if o.Engine, err = engine.Get(engineName); err != nil {
		return o, err
	}
	o.Config = c
	return o, nil
}

// Ordinal returns the number after the last '-' of a StatefulSet pod name.
func Ordinal(podName string) (int, error) {
	i := strings.LastIndex(podName, "-")
	n, err := strconv.Atoi(podName[i+1:])
	if i < 0 || err != nil || n < 0 {
		return 0, fmt.Errorf("pod name %q does not end in -<ordinal>", podName)
	}
	return n, nil
}

// Main runs the instance manager from the environment until ctx ends (a
// signal) or the server exits, logging JSON to stderr, and returns the exit
// code: 0 after a clean stop, 1 otherwise.
func Main(ctx context.Context, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	opts, err := FromEnv(os.Getenv)
	if err != nil {
		log.Error("invalid configuration", "error", err)
		writeTerminationMessage(TerminationLog, "invalid configuration: "+err.Error())
		return 1
	}
	opts.Log = log
	if err := Run(ctx, opts); err != nil {
		log.Error("instance failed", "error", err)
		writeTerminationMessage(TerminationLog, err.Error())
		return 1
	}
	return 0
}

// TerminationLog is the file whose content Kubernetes takes for a
// container's termination message (the default terminationMessagePath).
const TerminationLog = "/dev/termination-log"

// writeTerminationMessage writes why the instance failed to path, when the
// file exists (the kubelet creates it in a container): the pod's
// termination message, and so a crash loop's condition, is then this one
// plain line rather than the end of the log, where the server's reason may
// be cut short or quoted as JSON.
func writeTerminationMessage(path, msg string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(msg)
	_ = f.Close()
}

// Run serves the HTTP endpoints and runs the server in the role the
// operator assigns (POST /role) until ctx ends, then stops the server and
// returns nil. Before the first assignment the server does not run: only
// the operator knows whether this instance is still the primary.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 60 * time.Second
	}
	if o.RebuildAfter == 0 {
		o.RebuildAfter = DefaultRebuildAfter
	}
	o.Log = o.Log.With("engine", o.Engine.Name(), "instance", o.Config.Name)
	m := newManager(o)
	ln, err := net.Listen("tcp", o.StatusAddr)
	if err != nil {
		return fmt.Errorf("status endpoint: %w", err)
	}
	hs := &http.Server{Handler: handler(m, ControlToken(o.Config.Replication.Password)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("status endpoint failed", "error", err)
		}
	}()
	defer func() { _ = hs.Close() }()
	if o.Listening != nil {
		o.Listening(ln.Addr())
	}
	o.Log.Info("status endpoint listening, waiting for a role", "addr", ln.Addr().String())
	return m.run(ctx)
}

// initialise creates the database (primary) or clones the primary
// (replica), retrying the clone with backoff until the primary answers.
func initialise(ctx context.Context, eng engine.Engine, cfg engine.Config, log *slog.Logger) error {
	if cfg.PrimaryHost == "" {
		log.Info("initialising a new database", "dataDir", cfg.DataDir)
		if err := eng.InitPrimary(ctx, cfg); err != nil {
			return fmt.Errorf("initialising the database: %w", err)
		}
		log.Info("database initialised")
		return nil
	}
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		log.Info("cloning the primary", "primary", cfg.PrimaryHost, "port", cfg.PrimaryPort, "attempt", attempt)
		err := eng.InitReplica(ctx, cfg)
		if err == nil {
			log.Info("primary cloned")
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("cloning the primary failed, retrying", "error", err, "retryIn", backoff.String())
		if err := emptyDir(cfg.DataDir); err != nil {
			return fmt.Errorf("emptying the data directory after a failed clone: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// configHash hashes the names and contents of the files in dir, following
// symbolic links and skipping dot entries (a ConfigMap volume swaps its
// ..data symlink on update).
func configHash(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	files := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		files[e.Name()] = string(b)
	}
	return ConfigHash(files), nil
}

// ConfigHash is the hash of a configuration directory's files, by name:
// what an instance reports as the configuration its server loaded, and
// what the operator computes from the ConfigMap it renders.
func ConfigHash(files map[string]string) string {
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write([]byte(files[n]))
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func handler(m *manager, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		// Healthy while the manager answers: a stopped server is the
		// operator's to deal with, not a container restart's.
		fmt.Fprintln(w, m.currentPhase())
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		s := m.report(r.Context())
		if !s.Ready {
			http.Error(w, s.Message, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.report(r.Context()))
	})
	mux.HandleFunc("POST /role", func(w http.ResponseWriter, r *http.Request) {
		if !validToken(r.Header.Get("Authorization"), token) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var a Assignment
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&a); err != nil {
			http.Error(w, "decoding the assignment: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := m.offer(a); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return mux
}
