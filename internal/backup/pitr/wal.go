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
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/steward-dev/steward/internal/backup/dump"
)

// SegmentSize is the size of a WAL segment: PostgreSQL's default, which
// Steward's databases keep.
const SegmentSize = 16 << 20

// Object name suffixes.
const (
	partialSuffix = ".partial"
	gzSuffix      = ".gz"
	historySuffix = ".history"
)

var (
	segmentPattern = regexp.MustCompile(`^[0-9A-F]{24}$`)
	historyPattern = regexp.MustCompile(`^[0-9A-F]{8}\.history$`)
)

// Segment is a WAL segment's name parsed: its timeline and its number.
type Segment struct {
	Timeline uint32
	// No counts segments from the start of the log: the log and segment
	// parts of the name, for 16 MiB segments.
	No uint64
}

// ParseSegment parses a segment's file name (24 hexadecimal digits).
func ParseSegment(name string) (Segment, bool) {
	if !segmentPattern.MatchString(name) {
		return Segment{}, false
	}
	tli, _ := strconv.ParseUint(name[:8], 16, 32)
	log, _ := strconv.ParseUint(name[8:16], 16, 32)
	seg, _ := strconv.ParseUint(name[16:], 16, 32)
	return Segment{Timeline: uint32(tli), No: log*segmentsPerLog + seg}, true
}

// segmentsPerLog is how many 16 MiB segments make one 4 GiB "log".
const segmentsPerLog = 0x100000000 / SegmentSize

// Name is the segment's file name.
func (s Segment) Name() string {
	return fmt.Sprintf("%08X%08X%08X", s.Timeline, s.No/segmentsPerLog, s.No%segmentsPerLog)
}

// SegmentAt is the segment that holds a log position on a timeline.
func SegmentAt(timeline uint32, lsn uint64) Segment {
	return Segment{Timeline: timeline, No: lsn / SegmentSize}
}

// ParseLSN parses a log position as PostgreSQL prints it: "16/B374D848".
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("%q is not a log position", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a log position", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a log position", s)
	}
	return h<<32 | l, nil
}

// Prefix is where a database's point-in-time objects are: pitr/<db>/.
func Prefix(database string) string { return dump.PointInTimePrefix(database) }

func walPrefix(database string) string  { return Prefix(database) + "wal/" }
func basePrefix(database string) string { return Prefix(database) + "base/" }

// walKey is the key of an archived file: segments and partial segments
// gzip-compressed, history files as they are.
func walKey(database, file string) string {
	if historyPattern.MatchString(file) {
		return walPrefix(database) + file
	}
	return walPrefix(database) + file + gzSuffix
}

// ErrNotArchived is returned by Fetch for a file the archive does not
// hold.
var ErrNotArchived = errors.New("not in the archive")

// Fetch copies the archived WAL file named file (a segment or a history
// file, as PostgreSQL's restore_command asks for it) to dest. A segment
// that was not completed before archiving stopped is served from its
// partial upload: what it holds is replayed, and the rest of it reads as
// the end of the log.
func Fetch(ctx context.Context, bucket *blob.Bucket, database, file, dest string) error {
	keys := []string{walKey(database, file)}
	if _, ok := ParseSegment(file); ok {
		keys = append(keys, walKey(database, file+partialSuffix))
	}
	for _, key := range keys {
		err := fetchObject(ctx, bucket, key, dest)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		return err
	}
	return fmt.Errorf("%s: %w", file, ErrNotArchived)
}

func fetchObject(ctx context.Context, bucket *blob.Bucket, key, dest string) error {
	r, err := bucket.NewReader(ctx, key, nil)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	var src io.Reader = r
	if strings.HasSuffix(key, gzSuffix) {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path.Base(key), err)
		}
		src = gz
	}
	tmp := dest + ".steward-fetch"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("reading %s: %w", path.Base(key), err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dest)
}

// upload stores a local WAL file under key, gzip-compressed unless it is a
// history file.
func upload(ctx context.Context, bucket *blob.Bucket, key, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return uploadRange(ctx, bucket, key, f, 0, info.Size())
}

// uploadRange stores bytes [from, to) of f under key, gzip-compressed
// when the key ends in gzSuffix. Nothing is stored when it fails.
func uploadRange(ctx context.Context, bucket *blob.Bucket, key string, f io.ReaderAt, from, to int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := bucket.NewWriter(wctx, key, nil)
	if err != nil {
		return err
	}
	var dst io.Writer = w
	var gz *gzip.Writer
	if strings.HasSuffix(key, gzSuffix) {
		gz, _ = gzip.NewWriterLevel(w, gzip.BestSpeed)
		dst = gz
	}
	if _, err := io.Copy(dst, io.NewSectionReader(f, from, to-from)); err != nil {
		cancel()
		_ = w.Close()
		return err
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			cancel()
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// archived lists the archive of a database: the completed segments (by
// name), the partial ones and the history files.
type archived struct {
	segments map[string]bool
	partial  map[string]bool
	history  map[string]bool
}

func listArchive(ctx context.Context, bucket *blob.Bucket, database string) (archived, error) {
	a := archived{segments: map[string]bool{}, partial: map[string]bool{}, history: map[string]bool{}}
	it := bucket.List(&blob.ListOptions{Prefix: walPrefix(database)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return a, nil
		}
		if err != nil {
			return a, fmt.Errorf("listing the WAL archive: %w", err)
		}
		name := path.Base(obj.Key)
		switch {
		case historyPattern.MatchString(name):
			a.history[name] = true
		case strings.HasSuffix(name, partialSuffix+gzSuffix):
			a.partial[strings.TrimSuffix(name, partialSuffix+gzSuffix)] = true
		case strings.HasSuffix(name, gzSuffix):
			if _, ok := ParseSegment(strings.TrimSuffix(name, gzSuffix)); ok {
				a.segments[strings.TrimSuffix(name, gzSuffix)] = true
			}
		}
	}
}

// newest is the newest completed segment: the highest number, and of
// those the highest timeline.
func (a archived) newest() (Segment, bool) {
	var best Segment
	found := false
	for name := range a.segments {
		s, _ := ParseSegment(name)
		if !found || s.No > best.No || (s.No == best.No && s.Timeline > best.Timeline) {
			best, found = s, true
		}
	}
	return best, found
}

func isNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }
