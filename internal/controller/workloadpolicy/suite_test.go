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

package workloadpolicy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// k8s is an admin client of an API server with Steward's CRDs and the
// admission policies of config/policy, and nothing else: no
// webhook, and no operator but the WorkloadPolicy reconciler that
// TestReportsExistingViolators runs for its own duration.
var k8s client.Client

var cfg *rest.Config

// enforceTimeout bounds the wait for the API server to enforce a new
// ValidatingAdmissionPolicy, WorkloadPolicy or namespace label: its
// informers see them a moment after they are written, later on a loaded
// machine.
const enforceTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := apitest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		v1alpha1.AddToScheme, corev1.AddToScheme, autoscalingv1.AddToScheme, admissionregistrationv1.AddToScheme, eventsv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cfg = env.Config
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := installPolicy(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// policyFile is the ValidatingAdmissionPolicy and its binding, and
// defaultsFile the MutatingAdmissionPolicy and its binding, as kustomize
// installs them.
var (
	policyFile   = filepath.Join("..", "..", "..", "config", "policy", "workloadpolicy.yaml")
	defaultsFile = filepath.Join("..", "..", "..", "config", "policy", "workloadpolicy-defaults.yaml")
)

// installPolicy creates the objects of policyFile and defaultsFile.
func installPolicy(ctx context.Context) error {
	for _, f := range []string{policyFile, defaultsFile} {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := k8s.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// readObjects reads the objects of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}

// deniedPrefix starts the message of every refusal of the policy.
const deniedPrefix = "ValidatingAdmissionPolicy '" + v1alpha1.WorkloadPolicyAdmission +
	"' with binding '" + v1alpha1.WorkloadPolicyAdmission + "' denied request: "

// refusal is the message of a refusal by the WorkloadPolicies, after
// deniedPrefix; "" when err is nil or is not such a refusal.
func refusal(err error) string {
	if err == nil {
		return ""
	}
	_, msg, ok := strings.Cut(err.Error(), deniedPrefix)
	if !ok {
		return ""
	}
	return msg
}

// namespace creates a namespace with labels.
func namespace(t testing.TB, name string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// waitEnforced creates probe, an object the policy named policyName
// refuses, with dry run until the API server refuses it: then the policy,
// its ValidatingAdmissionPolicy and the labels of probe's namespace are
// all in force.
func waitEnforced(t testing.TB, policyName string, probe client.Object) {
	t.Helper()
	apitest.Eventually(t, enforceTimeout, func() error {
		err := k8s.Create(context.Background(), probe.DeepCopyObject().(client.Object), client.DryRunAll)
		if msg := refusal(err); strings.HasSuffix(msg, "(policy "+policyName+")") {
			return nil
		}
		return fmt.Errorf("policy %s not in force yet: a dry run of a %T it refuses returned %w", policyName, probe, err)
	})
}

// waitDefaulted creates a WebApp without runAsNonRoot in ns, whose policy
// requires non-root users, with dry run until the API server returns it
// with the default: then the MutatingAdmissionPolicy is in force there.
func waitDefaulted(t testing.TB, ns string) {
	t.Helper()
	apitest.Eventually(t, enforceTimeout, func() error {
		w := &v1alpha1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe-defaults"},
			Spec: v1alpha1.WebAppSpec{
				Image:     "registry.acme.com/probe:1",
				Resources: &corev1.ResourceRequirements{Requests: quantities("cpu", "1", "memory", "1Gi"), Limits: quantities("cpu", "1", "memory", "1Gi")},
			},
		}
		err := k8s.Create(context.Background(), w, client.DryRunAll)
		if err == nil && w.Spec.PodSecurityContext != nil && w.Spec.PodSecurityContext.RunAsNonRoot != nil && *w.Spec.PodSecurityContext.RunAsNonRoot {
			return nil
		}
		return fmt.Errorf("the defaults are not in force in %s yet: a dry run of a WebApp without runAsNonRoot returned %w, podSecurityContext %+v", ns, err, w.Spec.PodSecurityContext)
	})
}
