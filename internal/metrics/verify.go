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

// Per-Backup metrics of verifications (spec.verify, steward.dev/verify-now),
// labelled with the Backup's namespace and name. They have series once a
// verification ended.
var (
	VerificationLast = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_last_verification_timestamp_seconds",
		Help: "Unix time at which the newest verification of a Backup's newest backup ended, passed or not.",
	}, []string{"namespace", "backup"})
	VerificationSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_verification_success",
		Help: "1 when the newest verification of a Backup passed (the backup restored into a throwaway server and matched its manifest), 0 when it failed.",
	}, []string{"namespace", "backup"})
	VerificationDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "steward_backup_last_verification_duration_seconds",
		Help: "How long the newest verification of a Backup took: restore and comparison in its pod.",
	}, []string{"namespace", "backup"})
)

func init() {
	mustRegister(VerificationLast, VerificationSuccess, VerificationDuration)
}

// ForgetVerification removes a Backup's verification series.
func ForgetVerification(namespace, name string) {
	for _, v := range []*prometheus.GaugeVec{VerificationLast, VerificationSuccess, VerificationDuration} {
		v.DeleteLabelValues(namespace, name)
	}
}
