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

package plugin

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/internal/testenv/apitest"
)

// These tests run every subcommand against a real API server (envtest's
// kube-apiserver and etcd, with Steward's CRDs), through a kubeconfig
// file and the command line, as a user runs them. No operator runs unless
// a test starts one: tests write the statuses the operator would, and
// play its part where a command waits for it.

var (
	update = flag.Bool("update", false, "rewrite the golden files of testdata with the output of this run")

	// k8s is an admin client for the tests' own objects.
	k8s client.Client
	// cfg is the admin's client configuration.
	cfg *rest.Config
	// kubeconfig is a kubeconfig file for the API server, with the
	// contexts "envtest" (namespace default) and "elsewhere" (namespace
	// elsewhere).
	kubeconfig string
)

// testNow is the clock of every command in the tests: golden files show
// ages against it.
var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// at is testNow moved by d.
func at(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(d)) }

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if apitest.FuzzOnly() {
		return m.Run()
	}
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
	cfg = env.Config
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kubectl-steward-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// writeKubeconfig writes a kubeconfig for the admin of cfg.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "default"}
	kc.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "elsewhere"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// result is what one command line did.
type result struct {
	out, errOut string
	err         error
}

// harness runs command lines like a user's shell, and records what the
// commands that leave the API server would have done.
type harness struct {
	t  *testing.T
	ns string
	// stdin is the next command's standard input.
	stdin string
	// execs are the exec requests the commands made.
	mu    sync.Mutex
	execs []execRequest
	// logs are the logs of containers, by "pod/container", as the API
	// server would return them (with timestamps).
	logs map[string]string
	// opened are the logs opened, as "pod/container".
	opened []string
	// now is the commands' clock when set, testNow otherwise.
	now time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{t: t, ns: apitest.Namespace(t, k8s), logs: map[string]string{}}
}

// run runs kubectl-steward with args in the harness' namespace, with
// the kubeconfig file, and returns what it printed.
func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runWith(append([]string{"--kubeconfig", kubeconfig, "-n", h.ns}, args...))
}

// runWith runs kubectl-steward with exactly args.
func (h *harness) runWith(args []string) result {
	h.t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{
		flags:   genericclioptions.NewConfigFlags(true),
		streams: genericiooptions.IOStreams{In: strings.NewReader(h.stdin), Out: &out, ErrOut: &errOut},
		now:     func() time.Time { return cmp.Or(h.now, testNow) },
		poll:    20 * time.Millisecond,
	}
	c.exec = func(_ context.Context, req execRequest) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.execs = append(h.execs, req)
		return nil
	}
	c.openLog = func(_ context.Context, pod *corev1.Pod, container string, _ logOptions) (io.ReadCloser, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		key := pod.Name + "/" + container
		h.opened = append(h.opened, key)
		return io.NopCloser(strings.NewReader(h.logs[key])), nil
	}
	root := c.root()
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

// ok fails the test unless the command succeeded, and returns its output.
func (r result) ok(t *testing.T) string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("command failed: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.out, r.errOut)
	}
	return r.out
}

// fails fails the test unless the command failed with an error that
// contains want, and returns the error's text.
func (r result) fails(t *testing.T, want string) string {
	t.Helper()
	if r.err == nil {
		t.Fatalf("command succeeded, want an error containing %q\nstdout:\n%s", want, r.out)
	}
	if !strings.Contains(r.err.Error(), want) {
		t.Fatalf("error %q does not contain %q", r.err, want)
	}
	if !strings.Contains(r.errOut, "Error: "+r.err.Error()) {
		t.Errorf("stderr %q does not show the error", r.errOut)
	}
	return r.err.Error()
}

// create creates the objects of a YAML document (several, separated by
// ---) in the harness' namespace, and writes the status each carries.
func (h *harness) create(objs ...client.Object) {
	h.t.Helper()
	for _, obj := range objs {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(h.ns)
		}
		status := obj.DeepCopyObject().(client.Object)
		if err := k8s.Create(context.Background(), obj); err != nil {
			h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		h.writeStatus(obj, status)
	}
}

// writeStatus writes the status of want (the object as the test wrote
// it) onto obj, as the operator would.
func (h *harness) writeStatus(obj, want client.Object) {
	h.t.Helper()
	switch obj.(type) {
	case *corev1.Secret, *coordinationv1.Lease, *appsv1.Deployment, *appsv1.StatefulSet:
		// No status, or one that the tests' rollOutWorkloads writes.
		return
	}
	withStatus := want.DeepCopyObject().(client.Object)
	withStatus.SetResourceVersion(obj.GetResourceVersion())
	withStatus.SetUID(obj.GetUID())
	withStatus.SetGeneration(obj.GetGeneration())
	withStatus.SetCreationTimestamp(obj.GetCreationTimestamp())
	withStatus.SetManagedFields(nil)
	if err := k8s.Status().Update(context.Background(), withStatus); err != nil && !strings.Contains(err.Error(), "the server could not find the requested resource") {
		h.t.Fatalf("writing the status of %T %s: %v", obj, obj.GetName(), err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		h.t.Fatal(err)
	}
}

// decode reads a YAML object into obj.
func decode[T any](t *testing.T, doc string) *T {
	t.Helper()
	obj := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return obj
}

// operatorRunning creates a Lease of the operator in the harness'
// namespace, held and just renewed, and returns the flag that finds it.
func (h *harness) operatorRunning() string {
	h.t.Helper()
	holder, renewed, secs := "steward-manager-7d4-x2k", metav1.NewMicroTime(testNow.Add(-2*time.Second)), int32(15)
	h.create(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: defaultOperatorLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, LeaseDurationSeconds: &secs},
	})
	return "--operator-namespace=" + h.ns
}

// event records a Warning event about obj, as the operator's recorder
// would (the core API shows events.k8s.io's events too).
func (h *harness) event(obj client.Object, kind, reason, message string, last time.Duration, count int32) {
	h.t.Helper()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: obj.GetName() + ".", Namespace: h.ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "steward.dev/v1alpha1", Kind: kind, Namespace: h.ns, Name: obj.GetName(), UID: obj.GetUID(),
		},
		Type: corev1.EventTypeWarning, Reason: reason, Message: message, Count: count,
		FirstTimestamp: at(last - time.Hour), LastTimestamp: at(last),
		Source: corev1.EventSource{Component: "steward"},
	}
	if err := k8s.Create(context.Background(), e); err != nil {
		h.t.Fatal(err)
	}
}

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("the output differs from %s (run with -update if the change is right):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// eventually polls check until it returns nil.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	apitest.Eventually(t, 30*time.Second, check)
}
