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

package jobs

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/instance"
)

var (
	sourceTypes      = []v1alpha1.BackupSourceType{v1alpha1.SourcePostgreSQL, v1alpha1.SourceMySQL, v1alpha1.SourceMongoDB}
	destinationTypes = []v1alpha1.DestinationType{v1alpha1.DestinationS3, v1alpha1.DestinationGCS, v1alpha1.DestinationAzure, v1alpha1.DestinationFile}
)

// fuzzDestination is a destination the schema admits: of the type chosen,
// a file one with its volume, and a credentials Secret when asked.
func fuzzDestination(choice uint8, bucket, prefix string) v1alpha1.BackupDestination {
	if bucket == "" || len(bucket) > 1024 {
		bucket = "backups"
	}
	d := v1alpha1.BackupDestination{Type: destinationTypes[choice%4], Bucket: bucket, Prefix: prefix}
	if d.Type == v1alpha1.DestinationFile {
		d.Volume = &corev1.LocalObjectReference{Name: "backups"}
	}
	if choice&4 != 0 {
		d.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "store"}
	}
	if choice&8 != 0 {
		d.Endpoint, d.Region = "https://minio.example:9000", "us-east-1"
	}
	return d
}

// FuzzPodTemplate checks the pod of any backup or restore run: the same
// every time, never restarted, one run container of the run's image and
// command after the binary's copy, the database's address, no two
// variables, volumes or mount paths alike, and a file destination's
// directory on its volume.
func FuzzPodTemplate(f *testing.F) {
	f.Add(true, "postgres:16", "orders.prod.svc", int32(0), "orders", uint8(0|4|8), "steward-backups", "samples/orders", uint8(7), "")
	f.Add(false, "mysql:8.4", "catalog.prod.svc", int32(3307), "catalog", uint8(3), "dumps/nightly", "", uint8(1), "latest")
	f.Add(true, "mongo:7.0", "db", int32(27017), "admin", uint8(2|4), "c", "p", uint8(0), "")
	f.Add(false, "postgres:17", "h", int32(1), "d", uint8(3|4), "../tmp", "x", uint8(255), "2026/01/01/orders.dump")
	f.Fuzz(func(t *testing.T, backup bool, image, host string, port int32, database string, destination uint8,
		bucket, prefix string, retention uint8, key string) {
		r := Run{
			Command: dumpcmd.CommandRestore, Image: image, InstanceImage: "ghcr.io/steward-dev/steward:test",
			Conn: Connection{Type: sourceTypes[int(destination>>4)%3], Host: host, Port: max(port, 0) % 65536,
				Database: database, CredentialsSecret: "orders-credentials"},
			Destination: fuzzDestination(destination, bucket, prefix),
			Key:         key, Overwrite: retention&1 != 0,
			Labels: map[string]string{"steward.dev/backup": "orders"},
		}
		if backup {
			r.Command = dumpcmd.CommandBackup
			if retention != 0 {
				r.Retention = &v1alpha1.BackupRetention{KeepLast: new(int32(retention)), MaxAge: &metav1.Duration{Duration: time.Duration(retention) * time.Hour}}
			}
			r.TimeZone = []string{"", "UTC", "Europe/Paris"}[retention%3]
		}
		tmpl := PodTemplate(r)
		if !equality.Semantic.DeepEqual(tmpl, PodTemplate(r)) {
			t.Fatal("the pod template differs from one build to the next")
		}
		if !equality.Semantic.DeepEqual(tmpl.Labels, r.Labels) {
			t.Fatalf("pod labels %v, want the run's %v", tmpl.Labels, r.Labels)
		}
		env := checkPod(t, tmpl, r.Destination)
		c := tmpl.Spec.Containers[0]
		if *c.Image != r.Image || len(c.Command) != 2 || c.Command[0] != instance.BinaryPath || c.Command[1] != r.Command {
			t.Fatalf("run container of image %s and command %v", *c.Image, c.Command)
		}
		if len(tmpl.Spec.InitContainers) != 1 {
			t.Fatalf("%d init containers, want the binary's copy", len(tmpl.Spec.InitContainers))
		}
		wantPort := r.Conn.Port
		if wantPort == 0 {
			wantPort = DefaultPort(r.Conn.Type)
		}
		if env[dumpcmd.EnvDBHost] != r.Conn.Host || env[dumpcmd.EnvDBName] != r.Conn.Database || env[dumpcmd.EnvDBPort] != strconv.Itoa(int(wantPort)) {
			t.Fatalf("database variables %v for %+v", env, r.Conn)
		}
		if _, ok := env[dumpcmd.EnvRestoreKey]; ok != (r.Command == dumpcmd.CommandRestore) {
			t.Fatalf("restore key set %v for a %s", ok, r.Command)
		}
	})
}

// FuzzTaskPodTemplate checks the pod of a destination's check or delete
// as FuzzPodTemplate checks a run's.
func FuzzTaskPodTemplate(f *testing.F) {
	f.Add(true, uint8(0|4|8), "steward-backups", "samples/orders", "orders")
	f.Add(false, uint8(3), "dumps", "", "app")
	f.Add(false, uint8(3|4), "..", "x", "")
	f.Fuzz(func(t *testing.T, check bool, destination uint8, bucket, prefix, database string) {
		task := Task{Command: dumpcmd.CommandDelete, Image: "ghcr.io/steward-dev/steward:test",
			Destination: fuzzDestination(destination, bucket, prefix), Database: database,
			Labels: map[string]string{"steward.dev/backup": "orders"}}
		if check {
			task.Command = dumpcmd.CommandCheck
		}
		tmpl := TaskPodTemplate(task)
		if !equality.Semantic.DeepEqual(tmpl, TaskPodTemplate(task)) {
			t.Fatal("the pod template differs from one build to the next")
		}
		env := checkPod(t, tmpl, task.Destination)
		if name, ok := env[dumpcmd.EnvDBName]; ok != (task.Command == dumpcmd.CommandDelete) || name != map[bool]string{true: database}[ok] {
			t.Fatalf("database variable %q (set %v) for a %s of %q", name, ok, task.Command, database)
		}
		if c := tmpl.Spec.Containers[0]; *c.Image != task.Image || len(c.Command) != 1 || c.Command[0] != instance.AgentImagePath || len(c.Args) != 1 || c.Args[0] != task.Command {
			t.Fatalf("container of image %s, command %v and arguments %v", *c.Image, c.Command, c.Args)
		}
	})
}

// checkPod checks what every run and task pod promises, and returns the
// plain variables of its one container.
func checkPod(t *testing.T, tmpl *corev1ac.PodTemplateSpecApplyConfiguration, d v1alpha1.BackupDestination) map[string]string {
	t.Helper()
	spec := tmpl.Spec
	if *spec.RestartPolicy != corev1.RestartPolicyNever || *spec.AutomountServiceAccountToken {
		t.Fatalf("restart policy %s, service account token %v", *spec.RestartPolicy, *spec.AutomountServiceAccountToken)
	}
	if len(spec.Containers) != 1 || *spec.Containers[0].Name != Container {
		t.Fatalf("containers %+v, want one named %s", spec.Containers, Container)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[*v.Name] {
			t.Fatalf("two volumes %s", *v.Name)
		}
		volumes[*v.Name] = true
	}
	env := map[string]string{}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		names, paths := map[string]bool{}, map[string]bool{}
		for _, e := range c.Env {
			if names[*e.Name] {
				t.Fatalf("container %s has two variables %s", *c.Name, *e.Name)
			}
			names[*e.Name] = true
			if *c.Name == Container && e.Value != nil {
				env[*e.Name] = *e.Value
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[*m.Name] || paths[*m.MountPath] {
				t.Fatalf("container %s mounts %s at %s: no such volume, or the path is taken", *c.Name, *m.Name, *m.MountPath)
			}
			paths[*m.MountPath] = true
		}
	}
	if d.Type == v1alpha1.DestinationFile {
		if b := env[dumpcmd.EnvDestinationBucket]; b != fileMount && !strings.HasPrefix(b, fileMount+"/") {
			t.Fatalf("the directory of bucket %q is %s, not on the volume at %s", d.Bucket, b, fileMount)
		}
	}
	return env
}

// FuzzVerifyPodTemplate checks the pod of a verification as
// FuzzPodTemplate checks a run's, and that it holds the type and name of
// the database whose backups it verifies but neither its address nor any
// Secret in its environment.
func FuzzVerifyPodTemplate(f *testing.F) {
	f.Add("postgres:16", uint8(0|4|8), "steward-backups", "samples/orders", "orders")
	f.Add("mariadb:11.4", uint8(1|16), "dumps", "", "app")
	f.Add("mysql:8.4", uint8(3|4|16), "..", "x", "")
	f.Fuzz(func(t *testing.T, image string, destination uint8, bucket, prefix, database string) {
		v := Verification{Image: image, InstanceImage: "ghcr.io/steward-dev/steward:test",
			Type: sourceTypes[int(destination>>4)%2], Database: database,
			Destination: fuzzDestination(destination, bucket, prefix),
			Labels:      map[string]string{"steward.dev/backup-verify": "orders"}}
		tmpl := VerifyPodTemplate(v)
		if !equality.Semantic.DeepEqual(tmpl, VerifyPodTemplate(v)) {
			t.Fatal("the pod template differs from one build to the next")
		}
		if !equality.Semantic.DeepEqual(tmpl.Labels, v.Labels) {
			t.Fatalf("pod labels %v, want %v", tmpl.Labels, v.Labels)
		}
		env := checkPod(t, tmpl, v.Destination)
		c := tmpl.Spec.Containers[0]
		if *c.Image != v.Image || len(c.Command) != 2 || c.Command[0] != instance.BinaryPath || c.Command[1] != dumpcmd.CommandVerify ||
			len(tmpl.Spec.InitContainers) != 1 {
			t.Fatalf("container of image %s and command %v, %d init containers", *c.Image, c.Command, len(tmpl.Spec.InitContainers))
		}
		if env[dumpcmd.EnvDBType] != string(v.Type) || env[dumpcmd.EnvDBName] != v.Database {
			t.Fatalf("database variables %v", env)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil || *e.Name == dumpcmd.EnvDBHost || *e.Name == dumpcmd.EnvDBUsername || *e.Name == dumpcmd.EnvDBPassword {
				t.Fatalf("a verification's environment holds %s", *e.Name)
			}
		}
	})
}
