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
	"database/sql"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The engines an archive can be of.
const (
	EnginePostgreSQL = "postgresql"
	EngineMariaDB    = "mariadb"
)

// binlogArchive is the state of MariaDB's archiving: the streams being
// uploaded, and the GTID state the archive reaches.
type binlogArchive struct {
	streams map[string]*binlogStream
	current string
	// archived is the GTID state after the newest uploaded chunk; nil
	// until known.
	archived GTIDState
	// fromPrimary makes the next stream start at the primary's position
	// (after a gap) instead of after the archive.
	fromPrimary bool
	// primary polls the primary's position; asked and askedAt are the
	// position it answered last, and when it was asked.
	primary *sql.DB
	asked   GTIDState
	askedAt time.Time
	// uploading serialises uploads: the upload loop's, and the one after
	// mariadb-binlog stops.
	uploading sync.Mutex
}

// binlogStream is one run of mariadb-binlog: its directory, the state it
// started after, the state after what is uploaded, and how much of each
// file is uploaded.
type binlogStream struct {
	name, dir string
	state     GTIDState
	uploaded  map[string]int64
}

// chunkLimit bounds one chunk: a burst of writes is stored in pieces of
// this size, each recoverable as soon as it is stored.
const chunkLimit = 64 << 20

// binlogGapMessages are the primary's answers when it no longer has the
// binary log after the archive's state.
var binlogGapMessages = []string{"Could not find GTID state requested", "have been purged", "is not in the master's binlog",
	"Could not find first log file name"}

// receiveBinlogLoop runs mariadb-binlog again whenever it stops, each run a
// new stream starting after what the archive holds.
func (a *Archiver) receiveBinlogLoop(ctx context.Context) {
	for ctx.Err() == nil {
		from, err := a.binlogResumeState(ctx)
		if err != nil {
			a.fail("finding where the archive ends: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		name := streamName(time.Now(), from)
		dir := filepath.Join(a.Dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			a.fail("creating %s: %v", dir, err)
			sleep(ctx, 5*time.Second)
			continue
		}
		a.mu.Lock()
		a.binlog.streams[name] = &binlogStream{name: name, dir: dir, state: from.Clone(), uploaded: map[string]int64{}}
		a.binlog.current = name
		a.mu.Unlock()
		args := []string{"--read-from-remote-server", "--raw", "--stop-never",
			"--stop-never-slave-server-id=" + strconv.FormatUint(uint64(archiverServerID()), 10),
			"--result-file=" + dir + "/"}
		// After a GTID state the primary finds the binary log to send;
		// without one (a server that never logged a transaction) its first
		// file is read from its start.
		if len(from) > 0 {
			args = append(args, "--start-position="+from.String())
		}
		t, err := a.Conn.mariadbCommand(ctx, "mariadb-binlog", append(args, "binlog.000001")...)
		if err != nil {
			a.fail("preparing mariadb-binlog: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		started := time.Now()
		if err := t.cmd.Start(); err != nil {
			t.cleanup()
			a.fail("starting mariadb-binlog: %v", err)
			sleep(ctx, 5*time.Second)
			continue
		}
		a.logf("streaming the binary log after GTID state %q into %s", from.String(), name)
		err = a.receive(t)
		if ctx.Err() != nil {
			return
		}
		a.uploadBinlogOnce(ctx)
		msg := tail(t.errs.String(), 500)
		for _, gap := range binlogGapMessages {
			if strings.Contains(msg, gap) {
				now := time.Now().UTC()
				a.mu.Lock()
				a.status.Gap = fmt.Sprintf("the primary no longer had the binary log after GTID state %q (found at %s): times before the next base backup cannot be recovered",
					from.String(), now.Format(time.RFC3339))
				a.gapAt = now
				a.binlog.fromPrimary = true
				a.mu.Unlock()
				break
			}
		}
		a.fail("mariadb-binlog stopped after %s: %v: %s", time.Since(started).Round(time.Second), err, msg)
		sleep(ctx, 2*time.Second)
	}
}

// archiverServerID is the server id mariadb-binlog presents to the
// primary, as a replica would: far from the instances' small ids, and
// different for each archiver pod, so that a replaced pod's connection
// never evicts its successor's.
func archiverServerID() uint32 {
	h := fnv.New32a()
	host, _ := os.Hostname()
	_, _ = h.Write([]byte(host))
	return 1_000_000_000 + h.Sum32()%1_000_000_000
}

// binlogResumeState is where the next stream starts: after the newest
// uploaded chunk (in this process, or in the store for a new pod), or at
// the primary's current position for a new archive or after a gap.
func (a *Archiver) binlogResumeState(ctx context.Context) (GTIDState, error) {
	a.mu.Lock()
	archived, fromPrimary := a.binlog.archived, a.binlog.fromPrimary
	a.mu.Unlock()
	if !fromPrimary {
		if archived != nil {
			return archived.Clone(), nil
		}
		chunks, err := listChunks(ctx, a.Bucket, a.Database)
		if err != nil {
			return nil, err
		}
		if len(chunks) > 0 {
			last := chunks[len(chunks)-1]
			a.mu.Lock()
			a.binlog.archived = last.To
			a.status.LastSegment = last.File
			a.mu.Unlock()
			return last.To.Clone(), nil
		}
	}
	pos, err := queryGTIDState(ctx, a.binlog.primary)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.binlog.fromPrimary = false
	// After a gap the archive goes on from here (status.gap tells what is
	// missing before).
	a.binlog.archived = pos.Clone()
	a.mu.Unlock()
	return pos, nil
}

func queryGTIDState(ctx context.Context, db *sql.DB) (GTIDState, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var pos string
	if err := db.QueryRowContext(cctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
		return nil, fmt.Errorf("reading the primary's GTID position: %w", err)
	}
	return ParseGTIDState(pos)
}

// openMariaDB is a connection pool to the primary as the replication user.
func (c Conn) openMariaDB() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net = c.Username, c.Password, "tcp"
	cfg.Addr = fmt.Sprintf("%s:%d", c.Host, c.mariadbPort())
	cfg.Timeout, cfg.ReadTimeout = 5*time.Second, 5*time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	return db, nil
}

func (c Conn) mariadbPort() int {
	if c.Port == 0 {
		return 3306
	}
	return c.Port
}

// uploadBinlogOnce uploads the complete events each stream's files gained
// since the last upload, file by file in order, and removes local files
// that are uploaded and followed by a newer one.
func (a *Archiver) uploadBinlogOnce(ctx context.Context) {
	a.binlog.uploading.Lock()
	defer a.binlog.uploading.Unlock()
	a.mu.Lock()
	wasReceiving := a.receiving
	streams := make([]*binlogStream, 0, len(a.binlog.streams))
	for _, s := range a.binlog.streams {
		streams = append(streams, s)
	}
	current := a.binlog.current
	a.mu.Unlock()
	sort.Slice(streams, func(i, j int) bool { return streams[i].name < streams[j].name })
	// The archive is complete as of a time only if it holds what the
	// primary had then: the position asked in the previous round, whose
	// transactions have had a round to arrive, is checked after this
	// round's upload. A stalled connection, which mariadb-binlog may not
	// notice, then stops the archive's end from moving.
	askedBefore, askedAt := a.binlog.asked, a.binlog.askedAt
	a.binlog.asked, a.binlog.askedAt = nil, time.Time{}
	now := time.Now().UTC()
	if pos, err := queryGTIDState(ctx, a.binlog.primary); err == nil {
		a.binlog.asked, a.binlog.askedAt = pos, now
	}
	all := true
	for _, s := range streams {
		done, err := a.uploadStream(ctx, s)
		if err != nil {
			if ctx.Err() == nil {
				a.fail("uploading stream %s: %v", s.name, err)
			}
			all = false
			break
		}
		if done && s.name != current {
			_ = os.RemoveAll(s.dir)
			a.mu.Lock()
			delete(a.binlog.streams, s.name)
			a.mu.Unlock()
		}
	}
	a.mu.Lock()
	archived := a.binlog.archived
	a.mu.Unlock()
	covered := askedBefore != nil && archived != nil && archived.Covers(askedBefore)
	a.settle(ctx, all && covered, wasReceiving, askedAt)
}

// uploadStream uploads what one stream's files gained; done reports that
// every byte of it is uploaded.
func (a *Archiver) uploadStream(ctx context.Context, s *binlogStream) (done bool, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return false, err
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	done = true
	for i, name := range files {
		p := filepath.Join(s.dir, name)
		for {
			info, err := os.Stat(p)
			if err != nil {
				return false, err
			}
			off := s.uploaded[name]
			if info.Size() <= off {
				break
			}
			n, err := a.uploadChunk(ctx, s, name, off, info.Size())
			if err != nil {
				return false, err
			}
			if n == off {
				// An event is still being written.
				done = false
				break
			}
		}
		if i < len(files)-1 && done {
			_ = os.Remove(p)
		}
	}
	return done, nil
}

// uploadChunk uploads the complete events of a file from off, at most
// chunkLimit bytes of them, and returns the offset after them.
func (a *Archiver) uploadChunk(ctx context.Context, s *binlogStream, name string, off, size int64) (int64, error) {
	f, err := os.Open(filepath.Join(s.dir, name))
	if err != nil {
		return off, err
	}
	defer func() { _ = f.Close() }()
	state := s.state.Clone()
	var last time.Time
	end, err := scanBinlog(f, off, size, chunkLimit, func(ev binlogEvent) {
		if ev.GTID != nil {
			state.Add(*ev.GTID)
			last = ev.Time
		}
	})
	if err != nil {
		return off, fmt.Errorf("reading %s: %w", name, err)
	}
	if end == off {
		return off, nil
	}
	key := chunkKey(a.Database, s.name, name, off, state)
	if err := uploadRange(ctx, a.Bucket, key, f, off, end); err != nil {
		return off, err
	}
	s.uploaded[name], s.state = end, state
	a.mu.Lock()
	a.binlog.archived = state.Clone()
	a.status.LastSegment = name
	if !last.IsZero() && (a.status.ArchivedUntil == nil || last.After(*a.status.ArchivedUntil)) {
		a.status.ArchivedUntil = &last
	}
	a.mu.Unlock()
	return end, nil
}
