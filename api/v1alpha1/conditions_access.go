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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Conditioned is a Steward object with status conditions: every kind.
// +kubebuilder:object:generate=false
type Conditioned interface {
	client.Object
	// GetConditions returns status.conditions.
	GetConditions() []metav1.Condition
}

// GetConditions returns status.conditions.
func (w *WebApp) GetConditions() []metav1.Condition { return w.Status.Conditions }

// GetConditions returns status.conditions.
func (d *Database) GetConditions() []metav1.Condition { return d.Status.Conditions }

// GetConditions returns status.conditions.
func (c *Cache) GetConditions() []metav1.Condition { return c.Status.Conditions }

// GetConditions returns status.conditions.
func (b *Backup) GetConditions() []metav1.Condition { return b.Status.Conditions }

// GetConditions returns status.conditions.
func (r *Restore) GetConditions() []metav1.Condition { return r.Status.Conditions }

// GetConditions returns status.conditions.
func (a *AppConfig) GetConditions() []metav1.Condition { return a.Status.Conditions }

// GetConditions returns status.conditions.
func (s *AppStack) GetConditions() []metav1.Condition { return s.Status.Conditions }

// ConditionedKinds are Steward's namespaced kinds by name, each with a new
// empty list of its objects.
func ConditionedKinds() map[string]func() client.ObjectList {
	return map[string]func() client.ObjectList{
		"WebApp":    func() client.ObjectList { return &WebAppList{} },
		"Database":  func() client.ObjectList { return &DatabaseList{} },
		"Cache":     func() client.ObjectList { return &CacheList{} },
		"Backup":    func() client.ObjectList { return &BackupList{} },
		"Restore":   func() client.ObjectList { return &RestoreList{} },
		"AppConfig": func() client.ObjectList { return &AppConfigList{} },
		"AppStack":  func() client.ObjectList { return &AppStackList{} },
	}
}

// ProblemConditions are the condition types that, while True, say that an
// object needs attention: the metric
// steward_condition_true_since_timestamp_seconds exports them and the alerts
// fire on them.
var ProblemConditions = []string{ConditionDegraded, ConditionStalled, ConditionBackupStale, ConditionVerificationStale}
