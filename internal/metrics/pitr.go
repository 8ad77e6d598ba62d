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

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ArchiveLag is how far a Backup's continuous archive ends behind the
// operator's clock.
var ArchiveLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "steward_backup_archive_lag_seconds",
	Help: "How long ago the WAL archive of a Backup with point-in-time recovery ends: the age of its last recoverable time.",
}, []string{"namespace", "backup"})

// ArchiveLagLimit is a Backup's spec.pointInTime.maxArchiveLag, which the
// StewardBackupArchiveLagging alert compares ArchiveLag with.
var ArchiveLagLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "steward_backup_archive_max_lag_seconds",
	Help: "The most a Backup's WAL archive may lag behind (spec.pointInTime.maxArchiveLag).",
}, []string{"namespace", "backup"})

func init() {
	mustRegister(ArchiveLag, ArchiveLagLimit)
}
