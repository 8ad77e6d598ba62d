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

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"golang.org/x/sys/unix"
)

// LocalStorageClassName is the default StorageClass of a cluster with real
// nodes. Its claims get a directory on the node their first pod is
// scheduled to, as a local PersistentVolume: like a freshly formatted
// disk, the directory belongs to root with mode 0755, and the kubelet
// gives it to the pod's fsGroup, so that a pod running as another user
// can write to it only if it asks for that group.
const LocalStorageClassName = "steward-local"

// ExpandableStorageClassName is a second class of a cluster with real
// nodes, which allows volume expansion: its volumes are tmpfs mounts of
// exactly the claim's size at the volume directory, so that they fill at
// that size, and the provisioner grows them online when their claim asks
// for more (mount -o remount,size=), which a pod that has the volume
// mounted sees at once. As they live in memory, a node's Restart (which
// unmounts everything under the node, as a reboot would) loses their
// data; LocalStorageClassName's directories keep it, and cannot grow.
const ExpandableStorageClassName = "steward-local-expandable"

// FixedSizeStorageClassName is a third class of a cluster with real nodes:
// tmpfs volumes of exactly the claim's size, as ExpandableStorageClassName's,
// in a class that does not allow volume expansion. A volume of it fills at
// its size, so a test can fill it past a threshold, which a directory of
// LocalStorageClassName on the host's file system cannot promise.
const FixedSizeStorageClassName = "steward-local-fixed-size"

// localProvisioner is the provisioner name of the three classes.
const localProvisioner = "local.steward.dev"

// Annotations the volume scheduling and the persistent volume controller
// put on claims, and the one a provisioner puts on its volumes.
const (
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// provisioner provisions and deletes the volumes of the three classes
// for the real nodes, inside the process that started the cluster.
type provisioner struct {
	client kubernetes.Interface
	// volumeDirs maps a node's name to the directory its volumes go in.
	volumeDirs map[string]string
	// log receives the errors of provisioning steps, which are retried;
	// stop closes it.
	log    io.WriteCloser
	cancel context.CancelFunc
	done   chan struct{}
}

// localStorageClass is LocalStorageClassName, the default class.
func localStorageClass() *storagev1.StorageClass {
	bindingMode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LocalStorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       localProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &bindingMode,
	}
}

// expandableStorageClass is ExpandableStorageClassName.
func expandableStorageClass() *storagev1.StorageClass {
	sc := localStorageClass()
	sc.Name, sc.Annotations = ExpandableStorageClassName, nil
	sc.AllowVolumeExpansion = new(true)
	return sc
}

// fixedSizeStorageClass is FixedSizeStorageClassName.
func fixedSizeStorageClass() *storagev1.StorageClass {
	sc := localStorageClass()
	sc.Name, sc.Annotations = FixedSizeStorageClassName, nil
	return sc
}

// tmpfsClass reports whether the volumes of class are tmpfs mounts of the
// claim's size.
func tmpfsClass(class string) bool {
	return class == ExpandableStorageClassName || class == FixedSizeStorageClassName
}

// startProvisioner creates LocalStorageClassName, ExpandableStorageClassName
// and FixedSizeStorageClassName and starts provisioning.
func startProvisioner(ctx context.Context, client kubernetes.Interface, volumeDirs map[string]string, log io.WriteCloser) (*provisioner, error) {
	for _, sc := range []*storagev1.StorageClass{localStorageClass(), expandableStorageClass(), fixedSizeStorageClass()} {
		if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p := &provisioner{client: client, volumeDirs: volumeDirs, log: log, cancel: cancel, done: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(client, 0)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	if _, err := claims.Informer().AddEventHandler(handler); err != nil {
		cancel()
		return nil, err
	}
	if _, err := volumes.Informer().AddEventHandler(handler); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(runCtx.Done())
	go func() {
		defer close(p.done)
		defer factory.Shutdown()
		factory.WaitForCacheSync(runCtx.Done())
		// Failed steps are tried again every few seconds.
		retry := time.NewTicker(3 * time.Second)
		defer retry.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-kick:
			case <-retry.C:
			}
			p.sync(runCtx, claims.Lister().List, volumes.Lister().List)
		}
	}()
	return p, nil
}

// stop ends provisioning, waits for it and closes its log.
func (p *provisioner) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
	_ = p.log.Close()
}

// sync provisions a volume for every claim of the class that waits for
// one on a real node, and deletes the released volumes it provisioned.
func (p *provisioner) sync(ctx context.Context,
	listClaims func(labels.Selector) ([]*corev1.PersistentVolumeClaim, error),
	listVolumes func(labels.Selector) ([]*corev1.PersistentVolume, error)) {
	var errs []error
	claims, err := listClaims(labels.Everything())
	if err != nil {
		errs = append(errs, err)
	}
	for _, claim := range claims {
		if err := p.provision(ctx, claim); err != nil {
			errs = append(errs, err)
		}
	}
	volumes, err := listVolumes(labels.Everything())
	if err != nil {
		errs = append(errs, err)
	}
	byName := map[string]*corev1.PersistentVolume{}
	for _, pv := range volumes {
		byName[pv.Name] = pv
		if err := p.release(ctx, pv); err != nil {
			errs = append(errs, err)
		}
	}
	for _, claim := range claims {
		if err := p.resize(ctx, claim, byName[claim.Spec.VolumeName]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_, _ = fmt.Fprintf(p.log, "%s %v\n", time.Now().UTC().Format(time.RFC3339), err)
	}
}

// volumeName is the name of a claim's volume, as other provisioners name
// theirs.
func volumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// provision makes the directory and the PersistentVolume of a pending
// claim of the class once the scheduler has chosen its node.
func (p *provisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Status.Phase != corev1.ClaimPending || claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil {
		return nil
	}
	class := *claim.Spec.StorageClassName
	if class != LocalStorageClassName && !tmpfsClass(class) {
		return nil
	}
	node := claim.Annotations[annSelectedNode]
	base, ok := p.volumeDirs[node]
	if !ok {
		return nil // not chosen yet, or not a real node
	}
	name := volumeName(claim)
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("provisioning %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	// MkdirAll leaves an existing directory as it is; a new one gets the
	// mode a freshly formatted file system's root has, whatever the umask.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("provisioning %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if tmpfsClass(class) {
		if err := mountTmpfs(dir, size.Value()); err != nil {
			return fmt.Errorf("provisioning %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	mode := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: localProvisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			VolumeMode:                    &mode,
			ClaimRef: &corev1.ObjectReference{
				Kind:       "PersistentVolumeClaim",
				APIVersion: "v1",
				Namespace:  claim.Namespace,
				Name:       claim.Name,
				UID:        claim.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: dir},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("provisioning %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// release deletes a released volume the provisioner made, its directory
// first.
func (p *provisioner) release(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Annotations[annProvisionedBy] != localProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.Local == nil {
		return nil
	}
	if !p.owns(pv.Spec.Local.Path) {
		return fmt.Errorf("volume %s: %s is not in a real node's volume directory: left alone", pv.Name, pv.Spec.Local.Path)
	}
	// A tmpfs volume is unmounted first, which frees its memory.
	if err := unmountUnder(pv.Spec.Local.Path); err != nil {
		return fmt.Errorf("deleting volume %s: %w", pv.Name, err)
	}
	if err := os.RemoveAll(pv.Spec.Local.Path); err != nil {
		return fmt.Errorf("deleting volume %s: %w", pv.Name, err)
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting volume %s: %w", pv.Name, err)
	}
	return nil
}

// owns reports whether path is a volume directory of one of the nodes.
func (p *provisioner) owns(path string) bool {
	for _, base := range p.volumeDirs {
		if filepath.Dir(path) == base {
			return true
		}
	}
	return false
}

// mountTmpfs mounts a tmpfs of size bytes at dir, unless one is mounted
// there already (a provisioning step tried again).
func mountTmpfs(dir string, size int64) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return fmt.Errorf("mounting a tmpfs of %d bytes at %s: %w", size, dir, err)
	}
	return nil
}

// isMountPoint reports whether something is mounted at dir.
func isMountPoint(dir string) (bool, error) {
	mounts, err := readMounts()
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		if m.point == dir {
			return true, nil
		}
	}
	return false, nil
}

// resize grows the tmpfs of a bound claim of ExpandableStorageClassName
// that asks for more than its volume has: it remounts the tmpfs with the
// new size, which the pods that mount the volume see at once, then
// records the new size in the claim's status and in the volume, the claim
// first, so that the kubelet never sees a volume larger than its claim's
// capacity, which it would take for a file system to resize.
func (p *provisioner) resize(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if pv == nil || claim.Status.Phase != corev1.ClaimBound || pv.Spec.StorageClassName != ExpandableStorageClassName ||
		pv.Annotations[annProvisionedBy] != localProvisioner || pv.Spec.Local == nil {
		return nil
	}
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pv.Spec.Capacity[corev1.ResourceStorage]
	status := claim.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 && want.Cmp(status) <= 0 {
		return nil
	}
	if !p.owns(pv.Spec.Local.Path) {
		return fmt.Errorf("volume %s: %s is not in a real node's volume directory: not resized", pv.Name, pv.Spec.Local.Path)
	}
	dir := pv.Spec.Local.Path
	switch mounted, err := isMountPoint(dir); {
	case err != nil:
		return fmt.Errorf("resizing volume %s: %w", pv.Name, err)
	case !mounted:
		return fmt.Errorf("resizing volume %s: no tmpfs at %s", pv.Name, dir)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT, fmt.Sprintf("size=%d", want.Value())); err != nil {
		return fmt.Errorf("resizing volume %s to %d bytes: %w", pv.Name, want.Value(), err)
	}
	if want.Cmp(status) > 0 {
		c := claim.DeepCopy()
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
		if _, err := p.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("resizing volume %s: recording the size in claim %s/%s: %w", pv.Name, c.Namespace, c.Name, err)
		}
	}
	if want.Cmp(have) > 0 {
		v := pv.DeepCopy()
		v.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
		if _, err := p.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("resizing volume %s: recording the size: %w", pv.Name, err)
		}
	}
	return nil
}
