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

package instance

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steward-dev/steward/internal/engine"
)

// Assignment is what the operator tells an instance, on POST /role: which
// instance is the primary, in which term. The operator sends it again every
// few seconds; to the primary it is also the renewal of its lease.
type Assignment struct {
	// Term counts the role changes of the Database. An instance refuses an
	// assignment of an older term than one it has taken.
	Term int64 `json:"term"`
	// Primary is the name (pod name) of the instance that accepts writes.
	Primary string `json:"primary"`
	// PrimaryHost and PrimaryPort locate the primary, for the replicas.
	PrimaryHost string `json:"primaryHost,omitempty"`
	PrimaryPort int    `json:"primaryPort,omitempty"`
	// Bootstrap allows the primary to create a new database in an empty
	// data directory. Without it an empty primary waits: its data was lost
	// and a replica must take over.
	Bootstrap bool `json:"bootstrap,omitempty"`
	// LeaseSeconds, on the primary, is how long it keeps accepting writes
	// without hearing from the operator again while not every one of
	// Replicas streams from it. Zero means no lease: a single instance.
	LeaseSeconds int `json:"leaseSeconds,omitempty"`
	// Replicas names the other instances.
	Replicas []string `json:"replicas,omitempty"`
	// Peers are the status addresses (host:port) of the instance managers,
	// by name: the Replicas' and the Primary's. A primary whose engine
	// cannot tell by itself that a replica stopped streaming asks the
	// replicas, once its lease ran out; a replica that does not follow
	// asks the primary whether it serves before it rebuilds itself.
	Peers map[string]string `json:"peers,omitempty"`
	// PrimaryExits is the primary's Report.Exits as the operator last read
	// it. A primary whose server exited after that read takes the
	// assignment (a renewal sent before the operator could know) without
	// starting its server again: the operator decides, once it has seen the
	// exit, between a failover and a restart in place.
	PrimaryExits int64 `json:"primaryExits,omitempty"`
}

// Phases of an instance, in Report.Phase.
const (
	// PhaseAwaitingRole: no assignment yet (or none since the server
	// stopped); the server is not running.
	PhaseAwaitingRole = "AwaitingRole"
	// PhaseInitialising: creating the database or cloning the primary.
	PhaseInitialising = "Initialising"
	// PhaseStarting: the server starts.
	PhaseStarting = "Starting"
	// PhaseRunning: the server runs in its assigned role.
	PhaseRunning = "Running"
	// PhasePromoting: the replica becomes the primary.
	PhasePromoting = "Promoting"
	// PhaseRejoining: a former primary is wound back to follow the new one.
	PhaseRejoining = "Rejoining"
	// PhaseFenced: the primary stopped its server because its lease ran
	// out; it waits for the operator.
	PhaseFenced = "Fenced"
	// PhaseStopped: the server stopped (demoted, exited or failed); the
	// instance waits for the next assignment.
	PhaseStopped = "Stopped"
)

// Report is what GET /status returns: the engine's status and the
// manager's own state.
type Report struct {
	engine.Status
	// Name is the instance's pod name.
	Name string `json:"name"`
	// Phase is the manager's state, one of the Phase constants.
	Phase string `json:"phase"`
	// Term is the newest term the instance has taken.
	Term int64 `json:"term"`
	// StoppedPosition is where a primary's history ended when it was
	// stopped to hand over; zero otherwise.
	StoppedPosition int64 `json:"stoppedPosition,omitempty"`
	// Detail says why the instance is in its phase, e.g. the last error.
	Detail string `json:"detail,omitempty"`
	// Exits counts the times the server stopped on its own (a crash, a
	// kill) since the manager started.
	Exits int64 `json:"exits,omitempty"`
	// Rebuilds counts the times the replica was rebuilt (wound back, or
	// cloned afresh) because it could not follow its primary, since the
	// manager started.
	Rebuilds int64 `json:"rebuilds,omitempty"`
	// LastRebuild says why the replica was last rebuilt, and how.
	LastRebuild string `json:"lastRebuild,omitempty"`
	// Config is the ConfigHash of the configuration files the server
	// loaded, at its start or its last reload; empty before it runs.
	Config string `json:"config,omitempty"`
	// Volume is the usage of the data volume's file system, read at each
	// report whether the server runs or not (a full volume may have
	// stopped it); nil when it cannot be read.
	Volume *Volume `json:"volume,omitempty"`
}

// ControlToken is the bearer token of POST /role, derived from the
// replication password that the operator and every instance share.
func ControlToken(replicationPassword string) string {
	sum := sha256.Sum256([]byte("steward-role\x00" + replicationPassword))
	return hex.EncodeToString(sum[:])
}

// validToken compares a request's Authorization header in constant time.
func validToken(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// termFile keeps the newest term beside the data directory, on the volume,
// so that a restarted instance still refuses older ones.
func termFile(cfg engine.Config) string {
	return filepath.Join(filepath.Dir(cfg.DataDir), "steward-term")
}

func readTerm(cfg engine.Config) int64 {
	b, err := os.ReadFile(termFile(cfg))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func writeTerm(cfg engine.Config, term int64) error {
	tmp := termFile(cfg) + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(term, 10)+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, termFile(cfg))
}

// checkAssignment says why an assignment cannot be taken.
func checkAssignment(a Assignment, self string, term int64) error {
	switch {
	case a.Primary == "":
		return errors.New("no primary named")
	case a.Term < term:
		return errors.New("term " + strconv.FormatInt(a.Term, 10) + " is older than " + strconv.FormatInt(term, 10))
	case a.Primary != self && a.PrimaryHost == "":
		return errors.New("a replica needs the primary's host")
	}
	return nil
}

// FenceCheckInterval is how often a primary checks its lease: once it has
// run out, a primary stops accepting writes within this interval plus the
// time the check takes (asking the replicas' managers, up to a second).
const FenceCheckInterval = 500 * time.Millisecond

// mustFence reports whether a primary must stop accepting writes: it has
// a lease, the lease ran out, and not every replica streams from it (were
// they all streaming, none of them could have been promoted).
func mustFence(a *Assignment, leaseUntil, now time.Time, streaming []string) bool {
	if a == nil || a.LeaseSeconds <= 0 || now.Before(leaseUntil) {
		return false
	}
	for _, r := range a.Replicas {
		if !slices.Contains(streaming, r) {
			return true
		}
	}
	return len(a.Replicas) == 0
}
