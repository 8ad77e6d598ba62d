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

// Package engine is the contract between Steward's operator and the database
// engines it runs. The operator uses the pure parts (versions, images, size
// presets, configuration rendering, parameter rules); the instance manager
// (`steward instance`, the entrypoint of every database pod) uses the rest to
// initialise, clone, start, reload and report on a real server. Each engine
// lives in its own package (engine/postgres, engine/mysql) and registers here.
package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Credentials are a user name and its password. Password never appears in logs,
// events, status or errors.
type Credentials struct {
	Username string
	Password string
}

// Tuning is what the configuration is rendered from.
type Tuning struct {
	// Version is the engine version the server runs, e.g. "16" or "8.4".
	Version string
	// MemoryBytes is the container's memory limit; settings such as buffer
	// sizes are derived from it. Zero means unknown: the engine's defaults.
	MemoryBytes int64
	// MilliCPU is the container's CPU limit in millicores; zero means unknown.
	MilliCPU int64
	// Port is the TCP port the server listens on.
	Port int
	// Parameters are the user's engine settings. They win over tuned values.
	// Controlled keys must have been rejected before (see Engine.Controlled).
	Parameters map[string]string
	// SynchronousReplicas is how many replicas must have a commit before
	// the primary acknowledges it; zero means asynchronous replication.
	SynchronousReplicas int
}

// Config is what one instance needs at run time.
type Config struct {
	// DataDir holds the database files. An empty or missing directory means
	// the instance has never been initialised.
	DataDir string
	// ConfigDir holds the files Render produced (mounted from a ConfigMap in a
	// pod). The engine reads its configuration from there.
	ConfigDir string
	// RunDir is a writable scratch directory for sockets and pid files.
	RunDir string
	// BinDir is where the engine's programs are; empty means $PATH.
	BinDir string
	// Port is the TCP port to listen on; Host the address to bind ("" = all).
	Host string
	Port int
	// ServerID is unique per instance of one Database (ordinal + 1); engines
	// with replication ids use it.
	ServerID int
	// Name is the instance's name (its pod's); a replica introduces itself
	// to the primary by it, and the primary lists its streaming replicas by
	// it.
	Name string
	// Superuser, Owner and Replication are the engine's users. Owner owns
	// Database.
	Superuser   Credentials
	Owner       Credentials
	Replication Credentials
	Database    string
	// PrimaryHost and PrimaryPort locate the primary. Empty PrimaryHost means
	// this instance is the primary.
	PrimaryHost string
	PrimaryPort int
	// RunAsUID and RunAsGID, when non-zero, are the user the engine's
	// processes run as (tests running as root need this; in a pod the
	// container already runs as the engine's user).
	RunAsUID, RunAsGID uint32
}

// Role is an instance's part in replication.
type Role string

// The roles an instance can have.
const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
)

// Status is what an instance reports on /status and, in short, to the
// readiness probe.
type Status struct {
	Role Role `json:"role"`
	// Ready is true when the server accepts connections and, for a replica,
	// replicates from the primary.
	Ready bool `json:"ready"`
	// Version is the server's own version string.
	Version string `json:"version,omitempty"`
	// LagBytes is how far a replica's replay is behind what it received from
	// the primary, or behind the primary, in bytes where the engine measures
	// bytes. Nil on a primary.
	LagBytes *int64 `json:"lagBytes,omitempty"`
	// LagSeconds is the replica's delay in seconds where the engine measures
	// time. Nil on a primary or when unknown.
	LagSeconds *float64 `json:"lagSeconds,omitempty"`
	// PendingRestart lists settings whose new values take effect only after
	// a restart.
	PendingRestart []string `json:"pendingRestart,omitempty"`
	// Refused lists the settings of the configuration that the server
	// could not apply at its last reload; a restart may fail on them. Most
	// keep their previous values; PostgreSQL holds a value it can judge
	// only inside a database (a text search configuration) as it stands.
	Refused []RefusedSetting `json:"refused,omitempty"`
	// Message says what is wrong when Ready is false.
	Message string `json:"message,omitempty"`
	// Position is how far the instance's history goes, in bytes of the
	// engine's log: what a primary has written, what a replica has
	// received. Comparable between the instances of one Database; zero when
	// unknown or when the engine does not measure it.
	Position int64 `json:"position,omitempty"`
	// Timeline is the history a PostgreSQL instance is on; each promotion
	// starts a new one.
	Timeline int64 `json:"timeline,omitempty"`
	// Streaming names, on a primary, the replicas that stream from it now.
	Streaming []string `json:"streaming,omitempty"`
}

// RefusedSetting is a setting the server refused, and why.
type RefusedSetting struct {
	Name string `json:"name"`
	// Reason is the server's own words where it gives them.
	Reason string `json:"reason"`
}

// Failover is implemented by the engines whose instances can change roles:
// a replica promoted, a former primary made a replica of the new one.
type Failover interface {
	// IsReplica reports whether the initialised cfg.DataDir was last a
	// replica's.
	IsReplica(cfg Config) (bool, error)
	// Rejoin makes the data directory of a stopped former primary, or of a
	// replica that may have diverged, a replica of cfg.PrimaryHost: its
	// history is wound back to where the two diverged. What only the former
	// primary had is discarded.
	Rejoin(ctx context.Context, cfg Config) error
	// StoppedPosition is the Position at which the cleanly stopped server
	// of cfg.DataDir ended.
	StoppedPosition(ctx context.Context, cfg Config) (int64, error)
	// Promote makes a running replica the primary of the role change
	// numbered term and returns once it accepts writes. An engine that
	// numbers the histories its promotions start (PostgreSQL's timelines)
	// numbers the new one at least term: terms are never reused, so two
	// promotions never start histories of the same number, even when the
	// new primary never heard of the other's.
	Promote(ctx context.Context, s Server, term int64) error
	// PrimaryTracksReplicas reports whether a primary's Status.Streaming
	// drops a replica lost without a word (its node gone, the network
	// cut) within seconds. Where it does not, the instance manager asks
	// the replicas themselves before it keeps a primary whose lease ran
	// out.
	PrimaryTracksReplicas() bool
}

// Fencer is implemented by the Servers whose clean stop can let a waiting
// commit through: a MariaDB primary holding commits for a replica's
// acknowledgement acknowledges them when the wait times out, even while
// shutting down.
type Fencer interface {
	// Fence stops the server at once (SIGKILL): no commit is acknowledged
	// after it returns. The data directory recovers as after a crash.
	Fence() error
}

// Engine is one database engine's operational knowledge.
type Engine interface {
	// Name is the engine's name in Database.spec.engine.
	Name() string

	// Pure parts, used by the operator.

	// Versions lists the supported versions (majors, e.g. "16" or "8.4").
	Versions() []string
	// Image is the official image for a version (a major or major.minor).
	Image(version string) string
	// Controlled reports whether Steward itself sets this parameter (ports,
	// paths, replication); the user may not.
	Controlled(key string) bool
	// Render returns the configuration files, by file name, for ConfigDir.
	Render(t Tuning) (map[string]string, error)
	// NeedsRestart reports whether a change of this parameter takes effect
	// only after a restart.
	NeedsRestart(key string) bool
	// CheckParameter reports whether the server would take value for the
	// parameter key: nil when it would, and for a parameter whose type
	// Steward does not know (engines have hundreds, extensions add more).
	// Otherwise the error names the value and what is expected, e.g.
	// `"not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)`.
	// Controlled keys are Controlled's to refuse, not this method's.
	CheckParameter(key, value string) error

	// Run-time parts, used by the instance manager.

	// Initialized reports whether cfg.DataDir holds a database.
	Initialized(cfg Config) (bool, error)
	// InitPrimary creates a database in the empty cfg.DataDir, with the
	// superuser, owner, replication user and database of cfg.
	InitPrimary(ctx context.Context, cfg Config) error
	// InitReplica fills the empty cfg.DataDir with a copy of the primary at
	// cfg.PrimaryHost, set up to replicate from it.
	InitReplica(ctx context.Context, cfg Config) error
	// Start starts the server and returns once it accepts connections.
	Start(ctx context.Context, cfg Config) (Server, error)
}

// Server is a running engine process.
type Server interface {
	// EnsureUsers makes the owner, database and replication user exist with
	// the passwords of cfg. Idempotent; run on the primary at every start.
	EnsureUsers(ctx context.Context) error
	// Reload re-reads the configuration files without a restart.
	Reload(ctx context.Context) error
	// Status reports role, readiness, lag and pending restarts.
	Status(ctx context.Context) Status
	// Stop shuts the server down cleanly and waits for it.
	Stop(ctx context.Context) error
	// Done is closed when the process has exited; Err then says why.
	Done() <-chan struct{}
	Err() error
}

// Repointer is a Server whose replica can follow another primary without
// a restart.
type Repointer interface {
	// Repoint makes the running replica follow the primary at host and
	// port; on an error it follows what it did before, or nothing.
	Repoint(ctx context.Context, host string, port int) error
}

var engines = map[string]Engine{}

// Register makes an engine available by name. Engine packages call it from
// init.
func Register(e Engine) { engines[e.Name()] = e }

// Get returns the named engine.
func Get(name string) (Engine, error) {
	e, ok := engines[name]
	if !ok {
		return nil, fmt.Errorf("unknown database engine %q", name)
	}
	return e, nil
}

// Names lists the registered engines, sorted.
func Names() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ImageFor is the image a Database's instances run: spec.image, or the
// engine's official image of spec.version.
func ImageFor(db *v1alpha1.Database, e Engine) string {
	if db.Spec.Image != "" {
		return db.Spec.Image
	}
	return e.Image(db.Spec.Version)
}
