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

package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steward-dev/steward/internal/testenv/devenv"
)

// client is a pod that stays up with a client program (psql or mariadb)
// and an application's view of a Steward object: the
// variables of a Secret. Tests run scripts in it with kubectl exec.
type client struct {
	name string
}

// clientImage is an image with a client program and the user it runs as.
type clientImage struct {
	image string
	uid   int
}

// The images the clients run: each engine's image has its own client.
var (
	postgresClient = clientImage{"postgres:15", 999}
	mariadbClient  = clientImage{"mariadb:10.11", 999}
)

// startClient starts a client pod in namespace default, restricted as an
// application's would be, with each key of the Secret secret (if not empty)
// as a variable of the same name ($uri, $host, $username, $password, ...),
// and deletes it when the test ends.
func startClient(t *testing.T, name string, img clientImage, secret string) *client {
	t.Helper()
	return startClientOn(t, name, img, secret, "")
}

// startClientOn is startClient on the node named node, or where the
// scheduler puts it when node is empty.
func startClientOn(t *testing.T, name string, img clientImage, secret, node string) *client {
	t.Helper()
	pin := ""
	if node != "" {
		pin = "\n  nodeName: " + node
	}
	env := " []"
	if secret != "" {
		env = fmt.Sprintf("\n        - secretRef: {name: %s}", secret)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  terminationGracePeriodSeconds: 1%s
  securityContext:
    runAsNonRoot: true
    runAsUser: %d
    runAsGroup: %d
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: client
      image: %s
      imagePullPolicy: Never
      command: [sleep, infinity]
      resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
      securityContext:
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
      envFrom:%s
`, name, pin, img.uid, img.uid, img.image, env)
	if out, err := devenv.Kubectl(t.Context(), cluster, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		_, _ = devenv.Kubectl(ctx, cluster, nil, "delete", "pod", name, "--wait=false")
	})
	kubectl(t, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=180s")
	return &client{name: name}
}

// run runs a bash script in the client with args as $1, $2, ..., and
// returns its standard output, trimmed.
func (c *client) run(ctx context.Context, script string, args ...string) (string, error) {
	out, err := devenv.Kubectl(ctx, cluster, nil, append([]string{"exec", c.name, "--", "bash", "-c", script, "script"}, args...)...)
	return strings.TrimSpace(out), err
}

// must runs a script and fails the test if it fails.
func (c *client) must(t *testing.T, script string, args ...string) string {
	t.Helper()
	out, err := c.run(t.Context(), script, args...)
	if err != nil {
		t.Fatalf("in %s: %v: %s", c.name, err, out)
	}
	return out
}

// execIn runs a shell command line in a container of a pod, as a user of
// the cluster would with kubectl exec, feeding it stdin.
func execIn(ctx context.Context, pod, container, stdin string, command ...string) (string, error) {
	args := append([]string{"exec", "-i", pod, "-c", container, "--"}, command...)
	out, err := devenv.Kubectl(ctx, cluster, []byte(stdin), args...)
	return strings.TrimSpace(out), err
}

// jsonpath reads a field of an object with kubectl's jsonpath; object is
// kubectl get's arguments, e.g. "-n steward-system lease/steward.steward.dev".
func jsonpath(t *testing.T, object, path string) string {
	t.Helper()
	return kubectl(t, append(append([]string{"get"}, strings.Fields(object)...), "-o", "jsonpath="+path)...)
}

// applyAndDelete applies the manifest of one object and deletes the object
// when the test ends.
func applyAndDelete(t *testing.T, object, manifest string) {
	t.Helper()
	if out, err := devenv.Kubectl(t.Context(), cluster, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	deleteAtEnd(t, object)
}

// deleteAtEnd deletes the objects (kind/name), one after another and each
// waited for, when the test ends.
func deleteAtEnd(t *testing.T, objects ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Minute)
		defer cancel()
		for _, object := range objects {
			if out, err := devenv.Kubectl(ctx, cluster, nil, "delete", object, "--ignore-not-found", "--timeout=240s"); err != nil {
				t.Errorf("deleting %s: %v: %s", object, err, out)
			}
		}
	})
}
