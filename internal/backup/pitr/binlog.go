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
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// MariaDB binary logs, as `mariadb-binlog --read-from-remote-server --raw`
// writes them: the magic number, then events, each with a 19-byte header
// (timestamp, type, server id, size, position, flags).
const (
	binlogMagic      = "\xfebin"
	eventHeaderSize  = 19
	gtidEventType    = 162 // GTID_EVENT: a transaction's GTID and start
	gtidEventBodyLen = 12  // sequence number (8 bytes), domain (4 bytes)
)

// binlogEvent is what the archive needs of an event.
type binlogEvent struct {
	// Start and End are its offsets in the file.
	Start, End int64
	Time       time.Time
	Type       byte
	// GTID is set for a GTID event: the transaction that follows.
	GTID *GTID
}

// scanBinlog reads the complete events of a binary log file from offset
// start (0: the file's start, with its magic number) up to size, calls fn
// for each, and returns the offset after the last complete one. It stops
// after limit bytes unless the first event is longer.
func scanBinlog(r io.ReaderAt, start, size, limit int64, fn func(binlogEvent)) (int64, error) {
	pos := start
	if pos == 0 {
		if size < int64(len(binlogMagic)) {
			return 0, nil
		}
		magic := make([]byte, len(binlogMagic))
		if _, err := r.ReadAt(magic, 0); err != nil {
			return 0, err
		}
		if string(magic) != binlogMagic {
			return 0, fmt.Errorf("not a binary log: it starts with %q", magic)
		}
		pos = int64(len(binlogMagic))
	}
	var hdr [eventHeaderSize + gtidEventBodyLen]byte
	for pos+eventHeaderSize <= size {
		if _, err := r.ReadAt(hdr[:eventHeaderSize], pos); err != nil {
			return pos, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[9:13]))
		if n < eventHeaderSize {
			return pos, fmt.Errorf("a binary log event at offset %d has a size of %d bytes", pos, n)
		}
		if pos+n > size || (pos+n-start > limit && pos > start) {
			break
		}
		ev := binlogEvent{Start: pos, End: pos + n, Type: hdr[4],
			Time: time.Unix(int64(binary.LittleEndian.Uint32(hdr[0:4])), 0).UTC()}
		if ev.Type == gtidEventType && n >= eventHeaderSize+gtidEventBodyLen {
			if _, err := r.ReadAt(hdr[eventHeaderSize:], pos+eventHeaderSize); err != nil {
				return pos, err
			}
			ev.GTID = &GTID{Server: binary.LittleEndian.Uint32(hdr[5:9]),
				Seq: binary.LittleEndian.Uint64(hdr[19:27]), Domain: binary.LittleEndian.Uint32(hdr[27:31])}
		}
		fn(ev)
		pos += n
	}
	return pos, nil
}

// Binary log objects. A stream is one run of mariadb-binlog, named by its
// start time and the GTID state it started after; it holds the files the
// server sent, each stored as chunks of whole events, named by their
// offset and the GTID state after them:
//
//	pitr/<db>/binlog/<start>_<state>/<file>/<offset>_<state>.gz
//
// The names say all that recovery and pruning need, so a listing is
// enough: no chunk is read to know what it holds.
func binlogPrefix(database string) string { return Prefix(database) + "binlog/" }

func streamName(start time.Time, from GTIDState) string {
	return start.UTC().Format(keyTime) + "_" + from.String()
}

func chunkKey(database, stream, file string, offset int64, to GTIDState) string {
	return fmt.Sprintf("%s%s/%s/%016d_%s%s", binlogPrefix(database), stream, file, offset, to.String(), gzSuffix)
}

// chunk is one stored piece of a binary log file.
type chunk struct {
	Key          string
	Stream, File string
	Offset       int64
	// StreamFrom is the GTID state the chunk's stream started after; To
	// the state after the chunk.
	StreamFrom, To GTIDState
}

// parseChunkKey reads a chunk's stream, file, offset and states from its
// key.
func parseChunkKey(database, key string) (chunk, bool) {
	rest, ok := strings.CutPrefix(key, binlogPrefix(database))
	if !ok || !strings.HasSuffix(rest, gzSuffix) {
		return chunk{}, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, gzSuffix), "/")
	if len(parts) != 3 {
		return chunk{}, false
	}
	c := chunk{Key: key, Stream: parts[0], File: parts[1]}
	_, from, ok1 := strings.Cut(parts[0], "_")
	off, to, ok2 := strings.Cut(parts[2], "_")
	if !ok1 || !ok2 {
		return chunk{}, false
	}
	var err error
	if c.Offset, err = strconv.ParseInt(off, 10, 64); err != nil {
		return chunk{}, false
	}
	if c.StreamFrom, err = ParseGTIDState(from); err != nil {
		return chunk{}, false
	}
	if c.To, err = ParseGTIDState(to); err != nil {
		return chunk{}, false
	}
	return c, true
}

// listChunks lists a database's binary log chunks in replay order:
// streams by start, files by name, chunks by offset.
func listChunks(ctx context.Context, bucket *blob.Bucket, database string) ([]chunk, error) {
	var out []chunk
	it := bucket.List(&blob.ListOptions{Prefix: binlogPrefix(database)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing the binary logs: %w", err)
		}
		if c, ok := parseChunkKey(database, obj.Key); ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Stream != b.Stream {
			return a.Stream < b.Stream
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Offset < b.Offset
	})
	return out, nil
}
