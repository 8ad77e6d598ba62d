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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// StorageClassName is the default StorageClass of a full cluster: kwok
// provisions and binds its claims at once, with no real volume behind them.
const StorageClassName = "kwok-volume"

// Every fake node carries the annotation kwok selects the nodes it manages
// by, and a label that tells them from any other node.
const (
	nodeAnnotationKey   = "kwok.x-k8s.io/node"
	nodeAnnotationValue = "fake"
	nodeLabelKey        = "type"
	nodeLabelValue      = "kwok"
)

// workloadTimeout bounds the wait for the nodes and the default
// ServiceAccount of a full cluster.
const workloadTimeout = 3 * time.Minute

// stageFiles are the kwok Stage manifests a full cluster plays, relative to
// the kwok-stages folder: nodes become Ready at once and keep a lease; pods
// become ready at once, Job pods complete and deleted pods go; claims of
// StorageClassName are provisioned, bound, released and deleted at once.
var stageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
	"volume/fast/pvc-provision.yaml",
	"volume/fast/pv-bind.yaml",
	"volume/fast/pvc-delete.yaml",
	"volume/fast/pv-delete.yaml",
}

// podCompleteStage completes the pods of Jobs.
const podCompleteStage = "pod/fast/pod-complete.yaml"

// storageClassFile is the manifest of StorageClassName in the kwok-stages
// folder.
const storageClassFile = "volume/fast/storage-class.yaml"

// startWorkloadComponents starts kube-controller-manager, kube-scheduler and
// kwok, creates the StorageClass and the nodes, and waits for the nodes to
// be Ready and untainted and for the default ServiceAccount to exist.
func (c *Cluster) startWorkloadComponents(ctx context.Context) error {
	controllerManager, err := c.startControllerManager()
	if err != nil {
		return err
	}
	if err := c.startScheduler(); err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	if c.real() {
		if err := c.startRealNodes(ctx, clientset); err != nil {
			return err
		}
	}

	if c.opts.Nodes > 0 {
		kwok, err := c.startKwok()
		if err != nil {
			return err
		}
		if err := c.createStorageClass(ctx, clientset); err != nil {
			return err
		}
		for i := range c.opts.Nodes {
			if _, err := clientset.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating node kwok-node-%d: %w", i, err)
			}
		}
		err = c.waitFor(ctx, "the fake nodes to be Ready", workloadTimeout, kwok, func(ctx context.Context) error {
			return nodesReady(ctx, clientset, nodeLabelValue, c.opts.Nodes)
		})
		if err != nil {
			return err
		}
	}
	return c.waitFor(ctx, "the default ServiceAccount", workloadTimeout, controllerManager, func(ctx context.Context) error {
		_, err := clientset.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// startKwok writes kwok's configuration, the stages, and starts kwok as the
// admin, managing the annotated nodes, with no HTTP server.
func (c *Cluster) startKwok() (*process, error) {
	stagesDir := filepath.Join(c.opts.BinDir, stagesDirName)
	var config bytes.Buffer
	for _, name := range stageFiles {
		if name == podCompleteStage && c.opts.JobPodsRunUntilTold {
			continue
		}
		data, err := os.ReadFile(filepath.Join(stagesDir, name))
		if err != nil {
			return nil, fmt.Errorf("reading kwok stage: %w", err)
		}
		config.WriteString("---\n")
		config.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			config.WriteString("\n")
		}
	}
	configPath := filepath.Join(c.dir, "kwok.yaml")
	if err := os.WriteFile(configPath, config.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("writing the kwok configuration: %w", err)
	}
	return c.startProcess("kwok",
		"--kubeconfig="+c.internalKubeconfig(),
		"--config="+configPath,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+nodeAnnotationKey+"="+nodeAnnotationValue,
		"--cidr="+podCIDR,
		// Leases keep the nodes Ready; kwok keeps none without this.
		"--node-lease-duration-seconds=40",
	)
}

// createStorageClass creates StorageClassName from kwok's manifest, as the
// default StorageClass unless there are real nodes.
func (c *Cluster) createStorageClass(ctx context.Context, clientset kubernetes.Interface) error {
	path := filepath.Join(c.opts.BinDir, stagesDirName, storageClassFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the StorageClass: %w", err)
	}
	var sc storagev1.StorageClass
	if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&sc); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	if sc.Name != StorageClassName {
		return fmt.Errorf("%s defines StorageClass %q, not %q", path, sc.Name, StorageClassName)
	}
	if !c.real() {
		metav1.SetMetaDataAnnotation(&sc.ObjectMeta, "storageclass.kubernetes.io/is-default-class", "true")
	}
	if _, err := clientset.StorageV1().StorageClasses().Create(ctx, &sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
	}
	return nil
}

// fakeNode returns a node for kwok to manage, with room for large
// benchmarks and no taints. It reports ephemeral storage as a kubelet does,
// so that pods that request it (the operator's own) can be scheduled.
func fakeNode(name string) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("1000"),
		corev1.ResourceMemory:           resource.MustParse("4Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Ti"),
		corev1.ResourcePods:             resource.MustParse("5000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				nodeAnnotationKey:              nodeAnnotationValue,
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				nodeLabelKey:                    nodeLabelValue,
				"kubernetes.io/hostname":        name,
				"kubernetes.io/os":              "linux",
				"kubernetes.io/arch":            runtime.GOARCH,
				"node-role.kubernetes.io/agent": "",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
		},
	}
}

// nodesReady checks that want nodes labeled type=<kind> exist, are Ready
// and have no taints left (a new node is tainted not-ready until its
// controller sees it Ready).
func nodesReady(ctx context.Context, clientset kubernetes.Interface, kind string, want int) error {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeLabelKey + "=" + kind})
	if err != nil {
		return err
	}
	if len(nodes.Items) != want {
		return fmt.Errorf("%d of %d nodes exist", len(nodes.Items), want)
	}
	var pending []string
	for _, node := range nodes.Items {
		if !nodeReady(&node) || len(node.Spec.Taints) > 0 {
			pending = append(pending, node.Name)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("not Ready or still tainted: %s", strings.Join(pending, ", "))
	}
	return nil
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
