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

// Package pitr is point-in-time recovery of PostgreSQL and MariaDB:
// continuous archiving of the log into a Backup's destination, base backups
// beside the logical dumps, and recovery to a chosen time. What follows is
// PostgreSQL's (the write-ahead log, WAL); MariaDB's binary log is
// described at the end.
//
// # Archiving
//
// `steward wal-archive` runs in a pod of its own (one per Backup, a
// Deployment the operator manages), in the engine's image. It runs
// pg_receivewal against the primary over a replication connection, as a
// streaming standby would, into a local directory, and uploads every
// completed segment and timeline history file to the store. The segment
// being written (pg_receivewal's ".partial" file) is uploaded too, every
// few seconds while it changes, so that what was committed a few seconds
// ago is recoverable even on a quiet database whose segment takes hours to
// fill. The archiver needs no database change: no archive_command, no
// credentials of the store in the database's pods, no restart.
//
// When pg_receivewal stops (a failover, a restart of the primary), it is
// started again and continues after the newest segment in the store: a
// placeholder of that name in its directory tells it where to resume.
// If the primary no longer has the next segment, the archive has a gap:
// the status reports it, and times in the gap cannot be recovered (the
// next base backup starts a new unbroken stretch).
//
// The archiver serves GET /status (JSON, no secrets) on ArchiverPort: the
// newest archived segment, the time up to which the archive is complete,
// and failures. The operator reads it as it reads instance managers.
//
// # Base backups
//
// With point-in-time recovery, each scheduled backup run also takes a base
// backup with pg_basebackup (tar format, the WAL needed for consistency
// fetched into it), gzip-compressed, with a manifest.
//
// # Objects
//
// Under the destination's prefix, for a database named <db> (as in dump
// keys):
//
//	pitr/<db>/base/<YYYYMMDDTHHMMSS.mmmZ>.tar.gz   base backup
//	pitr/<db>/base/<YYYYMMDDTHHMMSS.mmmZ>.json     its manifest
//	pitr/<db>/wal/<segment>.gz                     a completed WAL segment
//	pitr/<db>/wal/<segment>.partial.gz             the segment being written
//	pitr/<db>/wal/<timeline>.history               a timeline's history
//
// None of these match the keys of logical dumps, which the dump package
// lists and prunes; the dump retention never touches them.
//
// # Retention
//
// After a base backup, base backups are pruned with the Backup's retention
// policy, except that the newest is always kept, and WAL segments older
// than the start of the oldest kept base backup are deleted: nothing
// needed to recover to any time after the oldest kept base backup is
// deleted, and nothing older is kept.
//
// # Recovery
//
// A Restore with a point in time runs `steward restore` with a target
// time (or "latest"). It picks the newest base backup that ended before
// the target, unpacks it into a scratch directory of the restore pod,
// starts PostgreSQL there in recovery with restore_command fetching
// segments from the store (`steward wal-fetch`) and recovery_target_time
// set, waits for the recovery to end and the server to be promoted, then
// dumps the recovered database and restores the dump into the target
// Database, as a logical restore does. The time of the last transaction
// replayed is the recovery point the Restore reports. PostgreSQL refuses
// to finish a recovery whose target lies beyond the archive's end: such a
// Restore fails and says up to where the archive reaches.
//
// # MariaDB
//
// The archiver runs mariadb-binlog --read-from-remote-server --raw
// --stop-never after a GTID position (binlog_archive.go): each run is a
// stream, whose files are uploaded as chunks of whole events named by
// their offset and the GTID state after them (binlog.go), so that a listing
// says what every chunk holds. A base backup is a logical dump with the GTID
// position of its snapshot (TakeDumpBase). Recovery (binlog_recover.go)
// restores that dump into a throwaway server (internal/backup/scratch) and
// replays the transactions after the position that began before the
// target, file by file, skipping what overlapping streams repeat. Pruning
// deletes the files whose every transaction the oldest kept base holds.
package pitr
