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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/instance"
)

func destination() v1alpha1.BackupDestination {
	return v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "b", Endpoint: "https://s3.example",
		CredentialsSecretRef: &corev1.LocalObjectReference{Name: "keys"}}
}

func container(cs []corev1ac.ContainerApplyConfiguration, name string) *corev1ac.ContainerApplyConfiguration {
	for i := range cs {
		if *cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// envOf maps a container's variables to their value, or to
// "secret/key" for those read from a Secret.
func envOf(c *corev1ac.ContainerApplyConfiguration) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[*e.Name] = *e.ValueFrom.SecretKeyRef.Name + "/" + *e.ValueFrom.SecretKeyRef.Key
		case e.Value != nil:
			env[*e.Name] = *e.Value
		}
	}
	return env
}

func TestBackupRunTakesABaseBackupBesideTheDump(t *testing.T) {
	run := Run{Command: "backup", Image: "postgres:15", InstanceImage: "steward:1",
		Conn:        Connection{Type: v1alpha1.SourcePostgreSQL, Host: "orders.shop.svc", Database: "orders", CredentialsSecret: "orders-credentials"},
		Destination: destination(), PointInTime: &PointInTime{Archive: "orders", ReplicationSecret: "orders-superuser"}}
	spec := PodTemplate(run).Spec
	if len(spec.Containers) != 2 {
		t.Fatalf("containers %d, want the dump and the base backup", len(spec.Containers))
	}
	base := container(spec.Containers, BaseContainer)
	if base == nil || !slices.Equal(base.Command, []string{instance.BinaryPath, pitrcmd.CommandBase}) {
		t.Fatalf("base container %+v", base)
	}
	env := envOf(base)
	for k, want := range map[string]string{
		pitrcmd.EnvArchive:             "orders",
		pitrcmd.EnvReplicationUsername: "orders-superuser/replication-username",
		pitrcmd.EnvReplicationPassword: "orders-superuser/replication-password",
		dumpcmd.EnvDBHost:              "orders.shop.svc",
		dumpcmd.EnvDBUsername:          "orders-credentials/username",
		dumpcmd.EnvStoreCredentialsDir: "/var/run/steward/store",
	} {
		if env[k] != want {
			t.Errorf("base container %s = %q, want %q", k, env[k], want)
		}
	}
	if got := container(spec.Containers, Container).Command; !slices.Equal(got, []string{instance.BinaryPath, "backup"}) {
		t.Errorf("the dump's command is %v", got)
	}
	// Without point-in-time recovery, one container as before.
	run.PointInTime = nil
	if n := len(PodTemplate(run).Spec.Containers); n != 1 {
		t.Errorf("%d containers without pointInTime", n)
	}
}

func TestPointInTimeRestoreRunsRestorePITR(t *testing.T) {
	run := Run{Command: "restore", Image: "postgres:15", InstanceImage: "steward:1",
		Conn:        Connection{Type: v1alpha1.SourcePostgreSQL, Host: "copy.shop.svc", Database: "orders", CredentialsSecret: "copy-credentials"},
		Destination: destination(), PointInTime: &PointInTime{Archive: "orders", TargetTime: "2026-11-26T12:00:00Z"}}
	main := container(PodTemplate(run).Spec.Containers, Container)
	if !slices.Equal(main.Command, []string{instance.BinaryPath, pitrcmd.CommandRestore}) {
		t.Errorf("command %v", main.Command)
	}
	env := envOf(main)
	if env[pitrcmd.EnvTargetTime] != "2026-11-26T12:00:00Z" || env[pitrcmd.EnvArchive] != "orders" || env[dumpcmd.EnvDBPassword] != "copy-credentials/password" {
		t.Errorf("env %v", env)
	}
	if _, ok := env[pitrcmd.EnvReplicationPassword]; ok {
		t.Error("a restore gets the source's replication credentials")
	}
}

func TestArchiverDeployment(t *testing.T) {
	spec := ArchiverDeployment(Archiver{Image: "postgres:15", InstanceImage: "steward:1", Host: "orders.shop.svc", Port: 5432,
		Archive: "orders", ReplicationSecret: "orders-superuser", Destination: destination(), Labels: map[string]string{"a": "b"}})
	if *spec.Replicas != 1 || string(*spec.Strategy.Type) != "Recreate" {
		t.Errorf("replicas %d, strategy %s: two archivers would upload the same segments", *spec.Replicas, *spec.Strategy.Type)
	}
	pod := spec.Template.Spec
	if *pod.RestartPolicy != corev1.RestartPolicyAlways || *pod.AutomountServiceAccountToken || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pod spec: restart %s, token %v, non-root %v", *pod.RestartPolicy, *pod.AutomountServiceAccountToken, *pod.SecurityContext.RunAsNonRoot)
	}
	main := container(pod.Containers, ArchiverContainer)
	if !slices.Equal(main.Command, []string{instance.BinaryPath, pitrcmd.CommandArchive}) || *main.Ports[0].ContainerPort != pitrcmd.ArchiverPort {
		t.Errorf("archiver container %v, ports %v", main.Command, main.Ports)
	}
	env := envOf(main)
	if env[pitrcmd.EnvReplicationPassword] != "orders-superuser/replication-password" || env[dumpcmd.EnvDBHost] != "orders.shop.svc" || env[dumpcmd.EnvDBPort] != "5432" {
		t.Errorf("env %v", env)
	}
	for k, v := range env {
		if k == pitrcmd.EnvReplicationPassword || k == dumpcmd.EnvDBPassword {
			if v == "" || v[0] == '/' {
				t.Errorf("%s is not read from a Secret: %q", k, v)
			}
		}
	}
}

func TestVerificationRecoversThePointInTimeArchive(t *testing.T) {
	v := Verification{Image: "postgres:15", InstanceImage: "steward:1", Type: v1alpha1.SourcePostgreSQL, Database: "orders",
		Destination: destination()}
	if n := len(VerifyPodTemplate(v).Spec.Containers); n != 1 {
		t.Fatalf("%d containers without pointInTime", n)
	}
	v.PointInTime = &PointInTime{Archive: "orders"}
	c := container(VerifyPodTemplate(v).Spec.Containers, PITRVerifyContainer)
	if c == nil || !slices.Equal(c.Command, []string{instance.BinaryPath, pitrcmd.CommandVerify}) {
		t.Fatalf("pitr container %+v", c)
	}
	env := envOf(c)
	if env[pitrcmd.EnvArchive] != "orders" || env[dumpcmd.EnvStoreCredentialsDir] == "" {
		t.Errorf("env %v", env)
	}
	for k := range env {
		if k == dumpcmd.EnvDBPassword || k == pitrcmd.EnvReplicationPassword {
			t.Errorf("the recovery gets database credentials: %s", k)
		}
	}
}
