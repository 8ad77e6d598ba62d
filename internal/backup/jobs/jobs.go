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

// Package jobs builds the pods that run `steward backup` and `steward
// restore`: the engine's official image, which carries the dump and restore
// tools, with Steward's binary copied in by an init container, as in a
// database pod. A run reports its result in its container's termination
// message, which the operator reads from the finished pod's status: the pod
// needs no API access at all.
package jobs

import (
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dump"
	"github.com/steward-dev/steward/internal/instance"
)

// Container is the name of the container that runs the backup or restore;
// its termination message is the run's result.
const Container = "run"

const (
	binVolume     = "steward-bin"
	storeVolume   = "store-credentials"
	storeMount    = "/steward/store"
	fileVolume    = "backups"
	fileMount     = "/backups"
	tmpVolume     = "tmp"
	toolUID       = 999
	defaultPGPort = 5432
)

// Connection is a resolved database to dump or restore into.
type Connection struct {
	Type     v1alpha1.BackupSourceType
	Host     string
	Port     int32
	Database string
	// CredentialsSecret has the keys username and password.
	CredentialsSecret string
}

// DefaultPort is the engine's port for a type.
func DefaultPort(t v1alpha1.BackupSourceType) int32 {
	switch t {
	case v1alpha1.SourceMySQL:
		return 3306
	case v1alpha1.SourceMongoDB:
		return 27017
	}
	return defaultPGPort
}

// DefaultImage is the official image whose tools dump and restore a type
// when no Database says which version runs. Newer pg_dump and mysqldump
// read older servers.
func DefaultImage(t v1alpha1.BackupSourceType) string {
	switch t {
	case v1alpha1.SourceMySQL:
		return "mysql:8.4"
	case v1alpha1.SourceMongoDB:
		return "mongo:7.0"
	}
	return "postgres:17"
}

// Run describes one kind of run.
type Run struct {
	// Command is "backup" or "restore".
	Command string
	// Image carries the engine's tools; InstanceImage is Steward's.
	Image, InstanceImage string
	Conn                 Connection
	Destination          v1alpha1.BackupDestination
	// Retention applies to backups; its days, weeks and months are those
	// of TimeZone.
	Retention *v1alpha1.BackupRetention
	TimeZone  string
	// Key and Overwrite apply to restores.
	Key       string
	Overwrite bool
	// Labels go on the pods.
	Labels map[string]string
}

// PodTemplate is the pod of a run. It never restarts: a failed run is
// reported, and the next scheduled run tries again.
func PodTemplate(r Run) *corev1ac.PodTemplateSpecApplyConfiguration {
	value := func(name, v string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValue(v)
	}
	secret := func(name, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(r.Conn.CredentialsSecret).WithKey(key)))
	}
	port := r.Conn.Port
	if port == 0 {
		port = DefaultPort(r.Conn.Type)
	}
	d := r.Destination
	env := []*corev1ac.EnvVarApplyConfiguration{
		value(dump.EnvDBType, string(r.Conn.Type)),
		value(dump.EnvDBHost, r.Conn.Host),
		value(dump.EnvDBPort, strconv.Itoa(int(port))),
		value(dump.EnvDBName, r.Conn.Database),
		secret(dump.EnvDBUsername, "username"),
		secret(dump.EnvDBPassword, "password"),
		value(dump.EnvDestinationType, string(d.Type)),
		value(dump.EnvDestinationBucket, bucket(d)),
		value(dump.EnvDestinationPrefix, d.Prefix),
		value(dump.EnvDestinationEndpoint, d.Endpoint),
		value(dump.EnvDestinationRegion, d.Region),
		value("HOME", "/tmp"),
	}
	if ret := r.Retention; ret != nil {
		for _, n := range []struct {
			env string
			v   *int32
		}{
			{dump.EnvKeepLast, ret.KeepLast}, {dump.EnvKeepDaily, ret.KeepDaily},
			{dump.EnvKeepWeekly, ret.KeepWeekly}, {dump.EnvKeepMonthly, ret.KeepMonthly},
		} {
			if n.v != nil {
				env = append(env, value(n.env, strconv.Itoa(int(*n.v))))
			}
		}
		if ret.MaxAge != nil {
			env = append(env, value(dump.EnvMaxAge, ret.MaxAge.Duration.String()))
		}
		if r.TimeZone != "" {
			env = append(env, value(dump.EnvRetentionTimeZone, r.TimeZone))
		}
	}
	if r.Command == "restore" {
		env = append(env, value(dump.EnvRestoreKey, r.Key), value(dump.EnvRestoreOverwrite, strconv.FormatBool(r.Overwrite)))
	}

	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(binVolume).WithMountPath(instance.BinaryDir).WithReadOnly(true),
		corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
	}
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(binVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		corev1ac.Volume().WithName(tmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if ref := d.CredentialsSecretRef; ref != nil {
		env = append(env, value(dump.EnvStoreCredentialsDir, storeMount))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(storeVolume).WithMountPath(storeMount).WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName(storeVolume).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(ref.Name).WithDefaultMode(0o400)))
	}
	if d.Type == v1alpha1.DestinationFile && d.Volume != nil {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(fileVolume).WithMountPath(fileMount))
		volumes = append(volumes, corev1ac.Volume().WithName(fileVolume).
			WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(d.Volume.Name)))
	}

	security := corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
	main := corev1ac.Container().
		WithName(Container).
		WithImage(r.Image).
		WithCommand(instance.BinaryPath, r.Command).
		WithEnv(env...).
		WithVolumeMounts(mounts...).
		WithSecurityContext(security).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}))
	copyBinary := instance.CopyBinaryContainer(r.InstanceImage, binVolume, security)
	return corev1ac.PodTemplateSpec().
		WithLabels(r.Labels).
		WithSpec(corev1ac.PodSpec().
			WithRestartPolicy(corev1.RestartPolicyNever).
			WithAutomountServiceAccountToken(false).
			WithInitContainers(copyBinary).
			WithContainers(main).
			WithVolumes(volumes...).
			WithSecurityContext(corev1ac.PodSecurityContext().
				WithRunAsNonRoot(true).
				WithRunAsUser(toolUID).
				WithRunAsGroup(toolUID).
				WithFSGroup(toolUID).
				WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))))
}

// bucket is the destination's bucket as the run sees it: for type file, a
// directory on the mounted volume.
func bucket(d v1alpha1.BackupDestination) string {
	if d.Type == v1alpha1.DestinationFile {
		return path.Join(fileMount, d.Bucket)
	}
	return d.Bucket
}

// Result reads the run's result from a finished pod: the termination
// message of the run container. ok is false while the pod has not finished
// or left no message.
func Result(pod *corev1.Pod) (dump.Result, bool, error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != Container || cs.State.Terminated == nil {
			continue
		}
		msg := cs.State.Terminated.Message
		if msg == "" {
			return dump.Result{}, false, fmt.Errorf("the %s container ended (%s, exit code %d) without a result",
				Container, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		res, err := dump.ParseResult(msg)
		return res, err == nil, err
	}
	return dump.Result{}, false, nil
}
