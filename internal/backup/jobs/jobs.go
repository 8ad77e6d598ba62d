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

// Package jobs builds the pods that run `steward backup`, `steward
// restore` and `steward backup-verify`: the engine's official image, which carries the dump and restore
// tools, with Steward's binary copied in by an init container, as in a
// database pod. It also builds the pods of `steward backup-check` and
// `steward backup-delete`, which need no tool and run in Steward's own
// image. A run reports its result in its container's termination message,
// which the operator reads from the finished pod's status: the pod needs no
// API access at all, and the operator never contacts a store itself.
package jobs

import (
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/instance"
)

// Container is the name of the container that runs the backup or restore;
// its termination message is the run's result.
const Container = "run"

const (
	binVolume   = "steward-bin"
	storeVolume = "store-credentials"
	// storeMount is outside /steward, which is a directory in the
	// engines' images (the copied binary) but the binary itself in
	// Steward's image, where a check or delete Job runs.
	storeMount    = "/var/run/steward/store"
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
	// PointInTime, on a backup run, adds a base backup beside the dump
	// (the BaseContainer); on a restore, it recovers the archive to a
	// point in time instead of restoring a dump.
	PointInTime *PointInTime
	// Labels go on the pods.
	Labels map[string]string
}

// PodTemplate is the pod of a run. It never restarts: a failed run is
// reported, and the next scheduled run tries again.
func PodTemplate(r Run) *corev1ac.PodTemplateSpecApplyConfiguration {
	secret := func(name, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(r.Conn.CredentialsSecret).WithKey(key)))
	}
	port := r.Conn.Port
	if port == 0 {
		port = DefaultPort(r.Conn.Type)
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		value(dumpcmd.EnvDBType, string(r.Conn.Type)),
		value(dumpcmd.EnvDBHost, r.Conn.Host),
		value(dumpcmd.EnvDBPort, strconv.Itoa(int(port))),
		value(dumpcmd.EnvDBName, r.Conn.Database),
		secret(dumpcmd.EnvDBUsername, "username"),
		secret(dumpcmd.EnvDBPassword, "password"),
	}
	env = append(env, destinationEnv(r.Destination)...)
	if ret := r.Retention; ret != nil {
		for _, n := range []struct {
			env string
			v   *int32
		}{
			{dumpcmd.EnvKeepLast, ret.KeepLast}, {dumpcmd.EnvKeepDaily, ret.KeepDaily},
			{dumpcmd.EnvKeepWeekly, ret.KeepWeekly}, {dumpcmd.EnvKeepMonthly, ret.KeepMonthly},
		} {
			if n.v != nil {
				env = append(env, value(n.env, strconv.Itoa(int(*n.v))))
			}
		}
		if ret.MaxAge != nil {
			env = append(env, value(dumpcmd.EnvMaxAge, ret.MaxAge.Duration.String()))
		}
		if r.TimeZone != "" {
			env = append(env, value(dumpcmd.EnvRetentionTimeZone, r.TimeZone))
		}
	}
	if r.Command == "restore" {
		env = append(env, value(dumpcmd.EnvRestoreKey, r.Key), value(dumpcmd.EnvRestoreOverwrite, strconv.FormatBool(r.Overwrite)))
	}
	command := r.Command
	var base *corev1ac.ContainerApplyConfiguration
	if p := r.PointInTime; p != nil {
		env = append(env, value(pitrcmd.EnvArchive, p.Archive))
		if r.Command == "restore" {
			command = pitrcmd.CommandRestore
			env = append(env, value(pitrcmd.EnvTargetTime, p.TargetTime))
		}
	}

	s := storage(r.Destination)
	if p := r.PointInTime; p != nil && r.Command == "backup" {
		base = baseContainer(r, p, env, s)
	}
	main := copiedBinaryContainer(Container, r.Image, command, append(env, s.env...), s, "128Mi", "512Mi")
	copyBinary := instance.CopyBinaryContainer(r.InstanceImage, binVolume, containerSecurity())
	containers := []*corev1ac.ContainerApplyConfiguration{main}
	if base != nil {
		containers = append(containers, base)
	}
	return corev1ac.PodTemplateSpec().
		WithLabels(r.Labels).
		WithSpec(podSpec().
			WithInitContainers(copyBinary).
			WithContainers(containers...).
			WithVolumes(append([]*corev1ac.VolumeApplyConfiguration{
				corev1ac.Volume().WithName(binVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			}, s.volumes...)...))
}

// Task is a run that works on the destination only: the check of a
// destination (dumpcmd.CommandCheck) or the deletion of a database's dumps
// (dumpcmd.CommandDelete).
type Task struct {
	// Command is dumpcmd.CommandCheck or dumpcmd.CommandDelete.
	Command string
	// Image is Steward's own image, which carries steward-agent at
	// instance.AgentImagePath.
	Image       string
	Destination v1alpha1.BackupDestination
	// Database is the dumped database's name, whose dumps a delete
	// deletes.
	Database string
	// Labels go on the pods.
	Labels map[string]string
}

// TaskPodTemplate is the pod of a Task: Steward's own image, with the
// destination's environment, credentials Secret and volume as a run has
// them, and neither a database's address nor its credentials. Like a run,
// it never restarts and has no API access.
func TaskPodTemplate(t Task) *corev1ac.PodTemplateSpecApplyConfiguration {
	env := destinationEnv(t.Destination)
	if t.Command == dumpcmd.CommandDelete {
		env = append(env, value(dumpcmd.EnvDBName, t.Database))
	}
	s := storage(t.Destination)
	main := corev1ac.Container().
		WithName(Container).
		WithImage(t.Image).
		WithCommand(instance.AgentImagePath).
		WithArgs(t.Command).
		WithEnv(append(env, s.env...)...).
		WithVolumeMounts(s.mounts...).
		WithSecurityContext(containerSecurity()).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}))
	return corev1ac.PodTemplateSpec().
		WithLabels(t.Labels).
		WithSpec(podSpec().WithContainers(main).WithVolumes(s.volumes...))
}

// Verification is a run of `steward backup-verify`: it restores a backup
// into a throwaway server in its own pod and compares it with its
// manifest.
type Verification struct {
	// Image carries the engine's server and tools; InstanceImage is
	// Steward's.
	Image, InstanceImage string
	// Type and Database say whose backups: the newest good one of them
	// is verified.
	Type     v1alpha1.BackupSourceType
	Database string
	// Destination is where the backups are.
	Destination v1alpha1.BackupDestination
	// PointInTime, when set, also recovers the archive to its latest
	// point, in a second container (PITRVerifyContainer).
	PointInTime *PointInTime
	// Labels go on the pods.
	Labels map[string]string
}

// VerifyPodTemplate is the pod of a verification: the engine's image,
// whose server runs in the pod on 127.0.0.1 with its data in an emptyDir
// (/tmp), with Steward's binary copied in, the destination's environment,
// credentials Secret and volume, and neither the database's address nor
// its credentials. It needs more memory than a dump: a server runs in it.
// Like a run, it never restarts and has no API access.
func VerifyPodTemplate(v Verification) *corev1ac.PodTemplateSpecApplyConfiguration {
	env := append([]*corev1ac.EnvVarApplyConfiguration{
		value(dumpcmd.EnvDBType, string(v.Type)),
		value(dumpcmd.EnvDBName, v.Database),
	}, destinationEnv(v.Destination)...)
	s := storage(v.Destination)
	main := copiedBinaryContainer(Container, v.Image, dumpcmd.CommandVerify, append(env, s.env...), s, "256Mi", "1Gi")
	copyBinary := instance.CopyBinaryContainer(v.InstanceImage, binVolume, containerSecurity())
	containers := []*corev1ac.ContainerApplyConfiguration{main}
	if v.PointInTime != nil {
		containers = append(containers, pitrVerifyContainer(v, s))
	}
	return corev1ac.PodTemplateSpec().
		WithLabels(v.Labels).
		WithSpec(podSpec().
			WithInitContainers(copyBinary).
			WithContainers(containers...).
			WithVolumes(append([]*corev1ac.VolumeApplyConfiguration{
				corev1ac.Volume().WithName(binVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			}, s.volumes...)...))
}

// copiedBinaryContainer runs a command of Steward's binary, copied into
// the pod by the init container, in an engine's image: with the storage's
// mounts, the restricted security context, a tenth of a core, and its
// result in the termination message.
func copiedBinaryContainer(name, image, command string, env []*corev1ac.EnvVarApplyConfiguration, s storageParts,
	memory, memoryLimit string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(name).
		WithImage(image).
		WithCommand(instance.BinaryPath, command).
		WithEnv(env...).
		WithVolumeMounts(append([]*corev1ac.VolumeMountApplyConfiguration{
			corev1ac.VolumeMount().WithName(binVolume).WithMountPath(instance.BinaryDir).WithReadOnly(true),
		}, s.mounts...)...).
		WithSecurityContext(containerSecurity()).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(memory)}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memoryLimit)}))
}

func value(name, v string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValue(v)
}

// destinationEnv says where the destination is.
func destinationEnv(d v1alpha1.BackupDestination) []*corev1ac.EnvVarApplyConfiguration {
	return []*corev1ac.EnvVarApplyConfiguration{
		value(dumpcmd.EnvDestinationType, string(d.Type)),
		value(dumpcmd.EnvDestinationBucket, bucket(d)),
		value(dumpcmd.EnvDestinationPrefix, d.Prefix),
		value(dumpcmd.EnvDestinationEndpoint, d.Endpoint),
		value(dumpcmd.EnvDestinationRegion, d.Region),
		value("HOME", "/tmp"),
	}
}

// storageParts are the environment, mounts and volumes of a pod's storage:
// /tmp, the store's credentials Secret, and a file destination's volume.
type storageParts struct {
	env     []*corev1ac.EnvVarApplyConfiguration
	mounts  []*corev1ac.VolumeMountApplyConfiguration
	volumes []*corev1ac.VolumeApplyConfiguration
}

func storage(d v1alpha1.BackupDestination) storageParts {
	s := storageParts{
		mounts:  []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp")},
		volumes: []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName(tmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource())},
	}
	if ref := d.CredentialsSecretRef; ref != nil {
		s.env = append(s.env, value(dumpcmd.EnvStoreCredentialsDir, storeMount))
		s.mounts = append(s.mounts, corev1ac.VolumeMount().WithName(storeVolume).WithMountPath(storeMount).WithReadOnly(true))
		s.volumes = append(s.volumes, corev1ac.Volume().WithName(storeVolume).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(ref.Name).WithDefaultMode(0o400)))
	}
	if d.Type == v1alpha1.DestinationFile && d.Volume != nil {
		s.mounts = append(s.mounts, corev1ac.VolumeMount().WithName(fileVolume).WithMountPath(fileMount))
		s.volumes = append(s.volumes, corev1ac.Volume().WithName(fileVolume).
			WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(d.Volume.Name)))
	}
	return s
}

func containerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// podSpec is the spec every backup, restore, check and delete pod shares:
// never restarted, no service account token, a non-root user of its own.
func podSpec() *corev1ac.PodSpecApplyConfiguration {
	return corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(toolUID).
			WithRunAsGroup(toolUID).
			WithFSGroup(toolUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
}

// bucket is the destination's bucket as the run sees it: for type file, a
// directory on the mounted volume, which ".." cannot leave (the dumps
// would go to the pod's own disk, and be lost with it).
func bucket(d v1alpha1.BackupDestination) string {
	if d.Type == v1alpha1.DestinationFile {
		return path.Join(fileMount, path.Clean("/"+d.Bucket))
	}
	return d.Bucket
}

// Result reads the run's result from a finished pod: the termination
// message of the run container. ok is false while the pod has not finished
// or left no message.
func Result(pod *corev1.Pod) (dumpcmd.Result, bool, error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != Container || cs.State.Terminated == nil {
			continue
		}
		msg := cs.State.Terminated.Message
		if msg == "" {
			return dumpcmd.Result{}, false, fmt.Errorf("the %s container ended (%s, exit code %d) without a result",
				Container, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		res, err := dumpcmd.ParseResult(msg)
		if err != nil {
			// The runtime's own message: the container could not start.
			return res, false, fmt.Errorf("the %s container ended (%s, exit code %d) without a result: %s",
				Container, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, shorten(msg, 300))
		}
		return res, true, nil
	}
	return dumpcmd.Result{}, false, nil
}

// shorten cuts s to at most n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
