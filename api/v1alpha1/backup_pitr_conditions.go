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

package v1alpha1

import (
	"fmt"
	"time"
)

// ConditionArchiving is, with spec.pointInTime, True while the archive
// holds the log up to at most maxArchiveLag ago, and False, with one of
// the archiving reasons, when it falls behind or cannot archive.
const ConditionArchiving = "Archiving"

// Reasons of the Archiving condition.
const (
	// ReasonArchiving: the archive is current.
	ReasonArchiving = "Archiving"
	// ReasonArchiveLagging: the archive ends longer ago than maxArchiveLag.
	ReasonArchiveLagging = "ArchiveLagging"
	// ReasonArchiverNotRunning: the archiver's pod is not running.
	ReasonArchiverNotRunning = "ArchiverNotRunning"
	// ReasonArchiverUnreachable: the operator could not read the archiver's
	// status.
	ReasonArchiverUnreachable = "ArchiverUnreachable"
	// ReasonArchiveGap: the archive misses part of the log.
	ReasonArchiveGap = "ArchiveGap"
	// ReasonPointInTimeUnsupported: the Database's engine has no
	// point-in-time recovery (MySQL).
	ReasonPointInTimeUnsupported = "PointInTimeUnsupported"
)

// PointInTimeUnsupported says why a Database of engine e cannot be
// archived for point-in-time recovery, or "" when it can: PostgreSQL's
// write-ahead log and MariaDB's binary log (followed by its GTIDs) are
// archived; MySQL's GTIDs differ and are not.
func PointInTimeUnsupported(e DatabaseEngine) string {
	if e == EnginePostgres || e == EngineMariaDB {
		return ""
	}
	return fmt.Sprintf("point-in-time recovery archives PostgreSQL and MariaDB Databases; this one runs %s: use scheduled dumps, or run it as MariaDB", e)
}

// ArchivingVerdict is the Archiving condition's status, reason and message
// for an archiver's report read at now. It is False when the archive ends
// longer than limit ago (or never began), whatever else it says.
func ArchivingVerdict(st *PointInTimeStatus, now time.Time, limit time.Duration) (ok bool, reason, message string) {
	if st.LastRecoverableTime == nil {
		msg := "the archive holds no log yet"
		if st.LastArchiveFailure != "" {
			msg += ": " + st.LastArchiveFailure
		}
		return false, ReasonArchiveLagging, msg
	}
	lag := now.Sub(st.LastRecoverableTime.Time).Round(time.Second)
	if lag > limit {
		msg := fmt.Sprintf("the archive ends %s ago, more than maxArchiveLag %s", lag, limit)
		if !st.Streaming {
			msg += "; the archiver is not receiving the log"
		}
		if st.LastArchiveFailure != "" {
			msg += ": " + st.LastArchiveFailure
		}
		return false, ReasonArchiveLagging, msg
	}
	if st.Gap != "" {
		return false, ReasonArchiveGap, st.Gap
	}
	return true, ReasonArchiving, fmt.Sprintf("the archive ends %s ago", lag)
}

// ReasonPointInTimeUnavailable is a Restore's reason when it asks for a
// point in time of a Backup that does not archive the log.
const ReasonPointInTimeUnavailable = "PointInTimeUnavailable"

// ReasonPointInTimeRecoveryFailed is a verification's reason when the
// recovery of the archive to its latest point failed.
const ReasonPointInTimeRecoveryFailed = "PointInTimeRecoveryFailed"
