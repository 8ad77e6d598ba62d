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
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"

	"github.com/steward-dev/steward/internal/backup/dumpcmd"
	"github.com/steward-dev/steward/internal/backup/pitrcmd"
	"github.com/steward-dev/steward/internal/instance"
)

// BaseContainer is the container of a backup run's pod that takes the
// base backup of point-in-time recovery; its termination message is a
// pitrcmd.Result.
const BaseContainer = "base"

// PITRVerifyContainer is the container of a verification's pod that
// recovers the archive to its latest point; its termination message is a
// pitrcmd.Result.
const PITRVerifyContainer = "pitr"

// ArchiverContainer is the container of an archiver's pod.
const ArchiverContainer = "archiver"

// PointInTime is what point-in-time recovery adds to a run.
type PointInTime struct {
	// Archive is the database whose archive is written or read.
	Archive string
	// ReplicationSecret holds the replication user's credentials
	// (replication-username, replication-password), for base backups.
	ReplicationSecret string
	// TargetTime is a restore's target: RFC 3339 or "latest".
	TargetTime string
}

func replicationEnv(secret string) []*corev1ac.EnvVarApplyConfiguration {
	ref := func(name, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
	}
	return []*corev1ac.EnvVarApplyConfiguration{
		ref(pitrcmd.EnvReplicationUsername, "replication-username"),
		ref(pitrcmd.EnvReplicationPassword, "replication-password"),
	}
}

// baseContainer runs `steward backup-base` beside the dump, with the same
// database, destination and retention, and the replication credentials.
func baseContainer(r Run, p *PointInTime, env []*corev1ac.EnvVarApplyConfiguration, s storageParts) *corev1ac.ContainerApplyConfiguration {
	env = append(append(append([]*corev1ac.EnvVarApplyConfiguration{}, env...), replicationEnv(p.ReplicationSecret)...), s.env...)
	return copiedBinaryContainer(BaseContainer, r.Image, pitrcmd.CommandBase, env, s, "64Mi", "256Mi")
}

// pitrVerifyContainer runs `steward verify-pitr` beside a verification,
// with the destination only: the archive is recovered in the pod.
func pitrVerifyContainer(v Verification, s storageParts) *corev1ac.ContainerApplyConfiguration {
	env := append(destinationEnv(v.Destination), value(pitrcmd.EnvArchive, v.PointInTime.Archive),
		value(pitrcmd.EnvWorkDir, "/tmp/steward-pitr-verify"))
	return copiedBinaryContainer(PITRVerifyContainer, v.Image, pitrcmd.CommandVerify, append(env, s.env...), s, "256Mi", "1Gi")
}

// PITRVerifyResult reads the recovery's result from a finished
// verification pod; ok is false while it runs or when the pod has none.
func PITRVerifyResult(pod *corev1.Pod) (pitrcmd.Result, bool, error) {
	return containerResult(pod, PITRVerifyContainer)
}

// containerResult reads a pitrcmd.Result from a container's termination
// message.
func containerResult(pod *corev1.Pod, name string) (pitrcmd.Result, bool, error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != name || cs.State.Terminated == nil {
			continue
		}
		res, err := pitrcmd.ParseResult(cs.State.Terminated.Message)
		if err != nil {
			return res, false, fmt.Errorf("the %s container ended (%s, exit code %d) without a result: %s",
				name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, shorten(cs.State.Terminated.Message, 300))
		}
		return res, true, nil
	}
	return pitrcmd.Result{}, false, nil
}

// BaseResult reads the base backup's result from a finished run pod; ok
// is false while its container runs or when the pod has none.
func BaseResult(pod *corev1.Pod) (pitrcmd.Result, bool, error) {
	return containerResult(pod, BaseContainer)
}

// RestoreResult reads a point-in-time restore's result from its finished
// pod, as Result reads a dump's.
func RestoreResult(pod *corev1.Pod) (pitrcmd.Result, bool, error) {
	return containerResult(pod, Container)
}

// Archiver is the continuous archiving of one Backup.
type Archiver struct {
	// Image is the engine's (it carries pg_receivewal or mariadb-binlog);
	// InstanceImage is Steward's.
	Image, InstanceImage string
	// Type is the source's type (postgresql, or mysql for MariaDB).
	Type v1alpha1.BackupSourceType
	// Host and Port locate the primary.
	Host string
	Port int32
	// Archive is the database's name, as the backups record it.
	Archive           string
	ReplicationSecret string
	Destination       v1alpha1.BackupDestination
	Labels            map[string]string
}

// ArchiverDeployment is the spec of an archiver's Deployment: one pod,
// replaced (never two at once, which would upload the same segments),
// with the destination's credentials and the replication user's, no API
// access, and its status on pitrcmd.ArchiverPort.
func ArchiverDeployment(a Archiver) *appsv1ac.DeploymentSpecApplyConfiguration {
	s := storage(a.Destination)
	env := append(destinationEnv(a.Destination),
		value(dumpcmd.EnvDBType, string(a.Type)),
		value(dumpcmd.EnvDBHost, a.Host),
		value(dumpcmd.EnvDBPort, strconv.Itoa(int(a.Port))),
		value(pitrcmd.EnvArchive, a.Archive),
		value(pitrcmd.EnvArchiveDir, "/tmp/archive"))
	env = append(append(env, replicationEnv(a.ReplicationSecret)...), s.env...)
	main := corev1ac.Container().
		WithName(ArchiverContainer).
		WithImage(a.Image).
		WithCommand(instance.BinaryPath, pitrcmd.CommandArchive).
		WithEnv(env...).
		WithPorts(corev1ac.ContainerPort().WithName("status").WithContainerPort(pitrcmd.ArchiverPort)).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/status").WithPort(intstr.FromInt32(pitrcmd.ArchiverPort))).
			WithPeriodSeconds(10)).
		WithVolumeMounts(append([]*corev1ac.VolumeMountApplyConfiguration{
			corev1ac.VolumeMount().WithName(binVolume).WithMountPath(instance.BinaryDir).WithReadOnly(true),
		}, s.mounts...)...).
		WithSecurityContext(containerSecurity()).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}))
	spec := podSpec().
		WithRestartPolicy(corev1.RestartPolicyAlways).
		WithInitContainers(instance.CopyBinaryContainer(a.InstanceImage, binVolume, containerSecurity())).
		WithContainers(main).
		WithVolumes(append([]*corev1ac.VolumeApplyConfiguration{
			corev1ac.Volume().WithName(binVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		}, s.volumes...)...)
	return appsv1ac.DeploymentSpec().
		WithReplicas(1).
		WithStrategy(appsv1ac.DeploymentStrategy().WithType("Recreate")).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(a.Labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(a.Labels).WithSpec(spec))
}
