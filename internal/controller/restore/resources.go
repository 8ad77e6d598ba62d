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

package restore

import (
	"fmt"

	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/jobs"
	"github.com/steward-dev/steward/internal/labels"
)

// JobName names a Restore's Job.
func JobName(r *v1alpha1.Restore) string { return r.Name + "-restore" }

// Labels are put on a Restore's Job and its pod.
func Labels(r *v1alpha1.Restore) map[string]string {
	l := labels.Common(r.Name, "restore")
	l[v1alpha1.LabelRestore] = r.Name
	return l
}

// Key is the object the Restore reads: spec.source.object or "latest".
func Key(r *v1alpha1.Restore) string {
	if r.Spec.Source.Object != "" {
		return r.Spec.Source.Object
	}
	return v1alpha1.LatestObject
}

// CheckType refuses a target whose type is not the Database's engine.
func CheckType(r *v1alpha1.Restore, db *v1alpha1.Database) error {
	if want := db.SourceType(); r.Spec.Target.Type != want {
		return fmt.Errorf("target.type is %s but Database %s runs %s, which takes %s dumps; create a new Restore with the matching type",
			r.Spec.Target.Type, db.Name, db.Spec.Engine, want)
	}
	return nil
}

// Job runs the restore once: it never retries, a failed restore is final.
func Job(r *v1alpha1.Restore, run jobs.Run) *batchv1ac.JobApplyConfiguration {
	run.Command = "restore"
	run.Labels = Labels(r)
	return batchv1ac.Job(JobName(r), r.Namespace).
		WithLabels(Labels(r)).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(v1alpha1.GroupVersion.String()).
			WithKind("Restore").
			WithName(r.Name).
			WithUID(r.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(0).
			WithTemplate(jobs.PodTemplate(run)))
}
