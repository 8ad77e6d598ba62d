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

// Database replication metrics.
var (
	// ReplicationLag is each replica's distance behind its primary.
	ReplicationLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_database_replication_lag_bytes",
		Help: "How far each replica of a Database is behind its primary, in bytes of the engine's log.",
	}, []string{"namespace", "database", "instance"})
	// ReplicationLagTransactions is a MariaDB replica's distance behind its
	// primary in transactions.
	ReplicationLagTransactions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_database_replication_lag_transactions",
		Help: "How far each replica of a MariaDB Database is behind its primary, in transactions (GTID sequence numbers).",
	}, []string{"namespace", "database", "instance"})
	// VolumeUsedRatio is how full each instance's data volume is.
	VolumeUsedRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_database_volume_used_ratio",
		Help: "How full each instance's data volume of a Database is, as the instance reports it: used bytes over used plus available bytes (0 to 1).",
	}, []string{"namespace", "database", "instance"})
	// RoleChanges counts failovers and switchovers.
	RoleChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_database_role_changes_total",
		Help: "Completed failovers and switchovers of Databases, by type (Failover, Switchover).",
	}, []string{"namespace", "database", "type"})
	// RoleChangeWriteGap is the measured write gap of the last role change.
	RoleChangeWriteGap = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_database_last_role_change_write_gap_seconds",
		Help: "How long no instance of a Database accepted writes during its last failover or switchover.",
	}, []string{"namespace", "database", "type"})
)

func init() {
	mustRegister(ReplicationLag, ReplicationLagTransactions, VolumeUsedRatio, RoleChanges, RoleChangeWriteGap)
}

// ForgetDatabase removes a deleted Database's series.
func ForgetDatabase(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "database": name}
	ReplicationLag.DeletePartialMatch(labels)
	ReplicationLagTransactions.DeletePartialMatch(labels)
	VolumeUsedRatio.DeletePartialMatch(labels)
	RoleChanges.DeletePartialMatch(labels)
	RoleChangeWriteGap.DeletePartialMatch(labels)
}
