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

package instance

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// CopyExecutable copies the running executable to dest with mode 0755,
// atomically (a temporary file in dest's directory, then a rename):
// `steward-agent copy-binary DEST`. The init container of a database,
// backup or restore pod runs `steward copy-binary DEST` (CopyAgent) to put
// the agent into an emptyDir the engine's container runs it from; the
// steward image has no shell or cp.
func CopyExecutable(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return copyFile(self, dest)
}

// AgentName is the file name of steward-agent, the program Steward's pods
// run (the instance manager, the backup and point-in-time commands), beside
// the operator's binary: /steward-agent in Steward's image, and
// bin/steward-agent beside bin/steward.
const AgentName = "steward-agent"

// AgentImagePath is steward-agent's path in Steward's image, for the pods
// that run the image itself rather than a copy in an engine's image.
const AgentImagePath = "/" + AgentName

// CopyAgent copies steward-agent, found beside the running executable, to
// dest as CopyExecutable does. The operator's image answers `steward
// copy-binary DEST` with it: database, backup and restore pods run the
// agent, which the operator's binary does not contain.
func CopyAgent(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return copyFile(filepath.Join(filepath.Dir(self), AgentName), dest)
}

func copyFile(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".copy-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, in)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("copying %s to %s: %w", src, dest, err)
	}
	return nil
}

// Where a pod's containers find Steward's binary. The init container that
// copies it runs Steward's own image, in which /steward is the binary
// itself: nothing can be mounted below it, so that container mounts the
// shared volume at copyDir instead.
const (
	// BinaryDir is where the engine's container mounts the volume with
	// Steward's binary, read-only.
	BinaryDir = "/steward/bin"
	// BinaryPath is the binary's path in the engine's container.
	BinaryPath = BinaryDir + "/steward"
	// copyDir is where the init container mounts the same volume.
	copyDir = "/copy"
)

// CopyBinaryContainer is the init container that copies Steward's binary
// from image into the emptyDir volume named volume, for the pod's other
// containers to run as BinaryPath with volume mounted at BinaryDir. It
// passes arguments only: the image's entrypoint is the binary.
func CopyBinaryContainer(image, volume string, security *corev1ac.SecurityContextApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName("steward").
		WithImage(image).
		WithArgs("copy-binary", copyDir+"/steward").
		WithSecurityContext(security).
		// Its error, printed to stderr, becomes the termination message
		// that a Database's Degraded condition shows when it fails.
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")})).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volume).WithMountPath(copyDir))
}
