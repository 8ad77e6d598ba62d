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

package pitr

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/backup/redact"
)

// Archiver streams a primary's WAL (PostgreSQL) or binary log (MariaDB)
// into a bucket.
type Archiver struct {
	// Engine is EnginePostgreSQL (the default) or EngineMariaDB.
	Engine   string
	Conn     Conn
	Bucket   *blob.Bucket
	Database string
	// Dir is the local directory pg_receivewal writes into.
	Dir string
	Log io.Writer
	// Interval is how often the directory is scanned; default 2s.
	Interval time.Duration

	red *redact.Redactor

	mu          sync.Mutex
	status      pitrcmd.Status
	receiving   bool
	uploadedAll bool
	// uploaded maps a local file to the modification time it had when
	// uploaded.
	uploaded map[string]time.Time
	lastBeat time.Time
	// gapAt is when a gap was found; zero without one.
	gapAt time.Time
	// completeAt is the newest time up to which every byte pg_receivewal
	// had received is uploaded.
	completeAt time.Time
	// binlog is MariaDB's archiving state.
	binlog *binlogArchive
}

// receiveDelay is the margin between a commit on the primary and its
// arrival at pg_receivewal that the archive's end allows for.
const receiveDelay = time.Second

func (a *Archiver) logf(format string, args ...any) {
	if a.Log != nil {
		fmt.Fprintf(a.Log, "wal-archive: %s\n", a.red.String(fmt.Sprintf(format, args...)))
	}
}

func (a *Archiver) fail(format string, args ...any) {
	msg := a.red.String(fmt.Sprintf(format, args...))
	now := time.Now().UTC()
	a.mu.Lock()
	a.status.Failures++
	a.status.LastFailure, a.status.LastFailureTime = msg, &now
	a.mu.Unlock()
	a.logf("%s", msg)
}

// Status is the archiver's current status.
func (a *Archiver) Status() pitrcmd.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.status
	s.Streaming = a.receiving
	if a.receiving && a.uploadedAll && !a.completeAt.IsZero() {
		t := a.completeAt
		s.ArchivedUntil = &t
	}
	return s
}

// Run archives until ctx ends: it serves the status on listen (when not
// nil), keeps pg_receivewal running and uploads what it writes.
func (a *Archiver) Run(ctx context.Context, listen net.Listener) error {
	a.red = redact.New(a.Conn.Password)
	a.uploaded = map[string]time.Time{}
	if a.Interval == 0 {
		a.Interval = 2 * time.Second
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	if listen != nil {
		srv := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(listen) }()
		defer func() { _ = srv.Close() }()
	}
	upload, receive := a.uploadOnce, a.receiveLoop
	if a.Engine == EngineMariaDB {
		a.binlog = &binlogArchive{streams: map[string]*binlogStream{}}
		db, err := a.Conn.openMariaDB()
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		a.binlog.primary = db
		upload, receive = a.uploadBinlogOnce, a.receiveBinlogLoop
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.uploadLoop(ctx, upload)
	}()
	receive(ctx)
	wg.Wait()
	return nil
}

func (a *Archiver) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a.Status())
	})
	return mux
}

// receive waits for a started receiving tool to exit and cleans up after
// it; the archiver counts as receiving once it has run for 3 s.
func (a *Archiver) receive(t *tool) error {
	done := make(chan struct{})
	go func() {
		select {
		case <-time.After(3 * time.Second):
			a.mu.Lock()
			a.receiving = true
			a.mu.Unlock()
		case <-done:
		}
	}()
	err := t.cmd.Wait()
	close(done)
	a.mu.Lock()
	a.receiving = false
	a.mu.Unlock()
	t.cleanup()
	return err
}

// receiveLoop runs pg_receivewal again whenever it stops.
func (a *Archiver) receiveLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.resumePoint(ctx); err != nil {
			a.fail("finding where the archive ends: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		t, err := a.Conn.command(ctx, "pg_receivewal", "-D", a.Dir, "--no-loop", "--status-interval=1")
		if err != nil {
			a.fail("preparing pg_receivewal: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		started := time.Now()
		if err := t.cmd.Start(); err != nil {
			t.cleanup()
			a.fail("starting pg_receivewal: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		err = a.receive(t)
		if ctx.Err() != nil {
			return
		}
		msg := tail(t.errs.String(), 500)
		if strings.Contains(msg, "has already been removed") {
			// The primary recycled WAL the archive does not have: streaming
			// starts again at the primary's position, and recovery cannot
			// cross the gap until a base backup taken after it.
			now := time.Now().UTC()
			a.mu.Lock()
			a.status.Gap = fmt.Sprintf("the primary no longer had the WAL after segment %s (found at %s): times before the next base backup cannot be recovered",
				a.status.LastSegment, now.Format(time.RFC3339))
			a.gapAt = now
			a.mu.Unlock()
			a.forgetLocalSegments(ctx)
		}
		a.fail("pg_receivewal stopped after %s: %v: %s", time.Since(started).Round(time.Second), err, msg)
		sleep(ctx, 2*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// placeholderMark is a file that marks the placeholders the archiver made.
const placeholderMark = ".steward-placeholder"

// resumePoint makes pg_receivewal continue after the newest segment in
// the archive: when its directory has no segment (a new pod), it gets an
// empty file of that segment's name and size, which pg_receivewal takes
// for the last one it wrote.
func (a *Archiver) resumePoint(ctx context.Context) error {
	entries, err := os.ReadDir(a.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), partialSuffix)
		if _, ok := ParseSegment(name); ok {
			return nil
		}
	}
	a.mu.Lock()
	gap := !a.gapAt.IsZero()
	a.mu.Unlock()
	if gap {
		return nil // the primary no longer has what follows the archive
	}
	arch, err := listArchive(ctx, a.Bucket, a.Database)
	if err != nil {
		return err
	}
	newest, ok := arch.newest()
	if !ok {
		return nil // nothing archived yet: start at the primary's position
	}
	a.mu.Lock()
	a.status.LastSegment = newest.Name()
	a.mu.Unlock()
	f, err := os.Create(filepath.Join(a.Dir, newest.Name()))
	if err != nil {
		return err
	}
	if err := f.Truncate(SegmentSize); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	info, err := os.Stat(filepath.Join(a.Dir, newest.Name()))
	if err != nil {
		return err
	}
	// Already archived: never uploaded over the real segment.
	a.mu.Lock()
	a.uploaded[newest.Name()] = info.ModTime()
	a.mu.Unlock()
	return os.WriteFile(filepath.Join(a.Dir, placeholderMark), []byte(newest.Name()), 0o600)
}

// forgetLocalSegments uploads what pg_receivewal left, then removes its
// segments, so that it starts again at the primary's position.
func (a *Archiver) forgetLocalSegments(ctx context.Context) {
	a.uploadOnce(ctx)
	entries, err := os.ReadDir(a.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, ok := ParseSegment(strings.TrimSuffix(e.Name(), partialSuffix)); ok || e.Name() == placeholderMark {
			_ = os.Remove(filepath.Join(a.Dir, e.Name()))
		}
	}
	a.mu.Lock()
	a.uploaded = map[string]time.Time{}
	a.mu.Unlock()
}

// clearGap forgets a gap once a base backup started after it: recovery
// from that base backup on needs nothing from before the gap.
func (a *Archiver) clearGap(ctx context.Context) {
	a.mu.Lock()
	gapAt := a.gapAt
	a.mu.Unlock()
	if gapAt.IsZero() {
		return
	}
	bases, err := ListBases(ctx, a.Bucket, a.Database)
	if err != nil || len(bases) == 0 || !bases[len(bases)-1].StartTime.After(gapAt) {
		return
	}
	a.mu.Lock()
	a.status.Gap, a.gapAt = "", time.Time{}
	a.mu.Unlock()
	a.logf("base backup %s started after the gap: every time after it is recoverable", bases[len(bases)-1].Key)
}

func (a *Archiver) uploadLoop(ctx context.Context, uploadOnce func(context.Context)) {
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	for {
		uploadOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// uploadOnce uploads every history file and completed segment not yet
// uploaded, then the partial segment if it changed, and deletes the
// uploaded segments but the newest (pg_receivewal resumes after it).
func (a *Archiver) uploadOnce(ctx context.Context) {
	a.mu.Lock()
	wasReceiving := a.receiving
	a.mu.Unlock()
	scanned := time.Now().UTC().Add(-receiveDelay)
	entries, err := os.ReadDir(a.Dir)
	if err != nil {
		a.fail("reading %s: %v", a.Dir, err)
		return
	}
	type file struct {
		name  string
		mtime time.Time
		size  int64
	}
	var history, complete, partial []file
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		f := file{name: e.Name(), mtime: info.ModTime(), size: info.Size()}
		switch {
		case historyPattern.MatchString(f.name):
			history = append(history, f)
		case strings.HasSuffix(f.name, partialSuffix):
			if _, ok := ParseSegment(strings.TrimSuffix(f.name, partialSuffix)); ok {
				partial = append(partial, f)
			}
		default:
			if _, ok := ParseSegment(f.name); ok && f.size == SegmentSize {
				complete = append(complete, f)
			}
		}
	}
	sort.Slice(complete, func(i, j int) bool { return complete[i].name < complete[j].name })
	all := true
	upload1 := func(f file, key string) bool {
		a.mu.Lock()
		prev, done := a.uploaded[f.name]
		a.mu.Unlock()
		if done && !f.mtime.After(prev) {
			return true
		}
		if err := upload(ctx, a.Bucket, key, filepath.Join(a.Dir, f.name)); err != nil {
			if ctx.Err() == nil {
				a.fail("uploading %s: %v", f.name, err)
			}
			all = false
			return false
		}
		a.mu.Lock()
		a.uploaded[f.name] = f.mtime
		until := f.mtime.UTC()
		if a.status.ArchivedUntil == nil || until.After(*a.status.ArchivedUntil) {
			a.status.ArchivedUntil = &until
		}
		a.mu.Unlock()
		return true
	}
	for _, f := range history {
		upload1(f, walKey(a.Database, f.name))
	}
	for _, f := range complete {
		if !upload1(f, walKey(a.Database, f.name)) {
			break
		}
		a.mu.Lock()
		a.status.LastSegment = f.name
		a.mu.Unlock()
		// The partial upload of the segment is superseded.
		_ = a.Bucket.Delete(ctx, walKey(a.Database, f.name+partialSuffix))
	}
	for _, f := range partial {
		upload1(f, walKey(a.Database, f.name))
	}
	if all {
		for _, f := range complete[:max(0, len(complete)-1)] {
			_ = os.Remove(filepath.Join(a.Dir, f.name))
			a.mu.Lock()
			delete(a.uploaded, f.name)
			a.mu.Unlock()
		}
	}
	a.settle(ctx, all, wasReceiving, scanned)
}

// settle records whether everything received is uploaded, as of scanned,
// and writes the heartbeat every heartbeatInterval while it is.
func (a *Archiver) settle(ctx context.Context, all, wasReceiving bool, scanned time.Time) {
	a.mu.Lock()
	a.uploadedAll = all
	whole := all && wasReceiving && a.receiving
	if whole {
		a.completeAt = scanned
		if a.status.ArchivedUntil == nil || scanned.After(*a.status.ArchivedUntil) {
			a.status.ArchivedUntil = &scanned
		}
	}
	beat := whole && time.Since(a.lastBeat) >= heartbeatInterval
	last := a.status.LastSegment
	a.mu.Unlock()
	if beat {
		a.clearGap(ctx)
		now := time.Now().UTC()
		data, _ := json.Marshal(ArchivedUntil{Time: scanned, LastSegment: last})
		if err := a.Bucket.WriteAll(ctx, heartbeatKey(a.Database), data, nil); err != nil {
			if ctx.Err() == nil {
				a.fail("writing the archive's heartbeat: %v", err)
			}
			return
		}
		a.mu.Lock()
		a.lastBeat = now
		a.mu.Unlock()
	}
}

// heartbeatInterval is how often a complete archive says so in the store.
const heartbeatInterval = 5 * time.Second
