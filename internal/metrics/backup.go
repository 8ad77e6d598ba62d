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

// Per-Backup metrics, labelled with the Backup's namespace and name.
var (
	BackupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_last_success_timestamp_seconds",
		Help: "Unix time at which the newest successful run of a Backup completed.",
	}, []string{"namespace", "backup"})
	BackupDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_last_duration_seconds",
		Help: "How long the newest successful run of a Backup took.",
	}, []string{"namespace", "backup"})
	BackupBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_last_size_bytes",
		Help: "Size of the newest successful dump of a Backup, as stored.",
	}, []string{"namespace", "backup"})
	BackupFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_backup_failures_total",
		Help: "Number of failed runs of a Backup seen by this operator process.",
	}, []string{"namespace", "backup"})
)

func init() {
	mustRegister(BackupLastSuccess, BackupDuration, BackupBytes, BackupFailures)
}

// ForgetBackup removes a deleted Backup's series.
func ForgetBackup(namespace, name string) {
	for _, v := range []*prometheus.GaugeVec{BackupLastSuccess, BackupDuration, BackupBytes} {
		v.DeleteLabelValues(namespace, name)
	}
	BackupFailures.DeleteLabelValues(namespace, name)
	ArchiveLag.DeleteLabelValues(namespace, name)
	ArchiveLagLimit.DeleteLabelValues(namespace, name)
}
