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
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebAppScaleAndRollout serves a page through a WebApp's Service,
// scales the WebApp to three pods with kubectl scale, and changes its image
// while a client requests the page every 100 ms: no request may fail.
func TestWebAppScaleAndRollout(t *testing.T) {
	requireClusterBeside(t)
	const (
		image    = "nginxinc/nginx-unprivileged:1.22"
		newImage = "steward-test/web:2"
	)
	// The new image is the same server under another name, as a registry
	// would serve a new tag; the nodes pull nothing.
	for _, n := range cluster.Nodes() {
		if err := n.TagImage(t.Context(), "docker.io/"+image, "docker.io/"+newImage); err != nil {
			t.Fatal(err)
		}
	}
	manifest := fmt.Sprintf(`apiVersion: steward.dev/v1alpha1
kind: WebApp
metadata:
  name: web
  namespace: default
spec:
  image: %s
  port: 8080
  healthCheck: {path: /}
  resources:
    requests: {cpu: 10m, memory: 16Mi}
    limits: {memory: 64Mi}
`, image)
	began := time.Now()
	applyAndDelete(t, "webapp/web", manifest)
	kubectl(t, "wait", "--for=condition=Ready", "webapp/web", "--timeout=300s")
	t.Logf("WebApp Ready %v after kubectl apply", time.Since(began).Round(time.Millisecond))

	// Clients of the Service run in a node's network namespace, where
	// ClusterIPs route. Each request opens a new connection, so each is
	// balanced anew by the node's proxy rules.
	node := cluster.Nodes()[0]
	httpClient := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DialContext: node.DialContext, DisableKeepAlives: true},
	}
	url := "http://" + jsonpath(t, "service/web", "{.spec.clusterIP}") + "/"
	get := func() error {
		resp, err := httpClient.Get(url)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<title>Welcome to nginx!</title>") {
			return fmt.Errorf("%s: %d %.80q", url, resp.StatusCode, body)
		}
		return nil
	}
	// Ready means the pod is; the node's proxy rules for the Service
	// follow a moment later.
	eventually(t, time.Minute, "the page through the Service", get)

	kubectl(t, "scale", "webapp", "web", "--replicas=3")
	var pods []string
	eventually(t, 3*time.Minute, "three ready pods behind the Service", func() error {
		pods = strings.Fields(kubectl(t, "get", "pods", "-l", "steward.dev/webapp=web", "--field-selector=status.phase=Running",
			"-o", `jsonpath={range .items[?(@.status.containerStatuses[0].ready==true)]}{.status.podIP} {end}`))
		endpoints := strings.Fields(kubectl(t, "get", "endpointslices", "-l", "kubernetes.io/service-name=web",
			"-o", `jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]} {end}`))
		slices.Sort(pods)
		slices.Sort(endpoints)
		if len(pods) != 3 || !slices.Equal(pods, endpoints) {
			return fmt.Errorf("ready pods %v, ready endpoints %v", pods, endpoints)
		}
		return nil
	})
	// Each pod's own server answers, from the other node too.
	for _, ip := range pods {
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: cluster.Nodes()[1].DialContext}}).
			Get("http://" + ip + ":8080/")
		if err != nil {
			t.Fatalf("pod %s: %v", ip, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("pod %s answered %s", ip, resp.Status)
		}
	}
	if got := jsonpath(t, "webapp/web", "{.status.readyReplicas}"); got != "3" {
		t.Errorf("status.readyReplicas = %s, want 3", got)
	}

	// The rollout, watched by a client that asks every 100 ms.
	var (
		mu       sync.Mutex
		ok       int
		failures []string
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			err := get()
			mu.Lock()
			if err != nil {
				failures = append(failures, time.Now().Format("15:04:05.000")+" "+err.Error())
			} else {
				ok++
			}
			mu.Unlock()
		}
	}()
	began = time.Now()
	kubectl(t, "patch", "webapp", "web", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"image":%q}}`, newImage))
	eventually(t, 5*time.Minute, "the new image rolled out", func() error {
		got := kubectl(t, "get", "webapp", "web", "-o",
			`jsonpath={.status.observedGeneration}/{.metadata.generation} {.status.updatedReplicas} {.status.readyReplicas} {.status.replicas} {.status.conditions[?(@.type=="Ready")].status}`)
		gen, rest, _ := strings.Cut(got, " ")
		a, b, _ := strings.Cut(gen, "/")
		if a != b || rest != "3 3 3 True" {
			return fmt.Errorf("observedGeneration/generation, updated, ready, replicas, Ready = %s", got)
		}
		return nil
	})
	rollout := time.Since(began)
	// The old pods are still draining: keep asking until they are gone.
	eventually(t, 2*time.Minute, "the old pods gone", func() error {
		images := kubectl(t, "get", "pods", "-l", "steward.dev/webapp=web", "-o", `jsonpath={.items[*].spec.containers[0].image}`)
		if strings.Count(images, newImage) != 3 || strings.Count(images, " ") != 2 {
			return fmt.Errorf("pods' images: %s", images)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	t.Logf("rollout of a new image to 3 pods: %v; a client asking every 100 ms: %d answered, %d failed",
		rollout.Round(time.Millisecond), ok, len(failures))
	if len(failures) > 0 {
		t.Errorf("%d requests failed during the rollout:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	if ok < 50 {
		t.Errorf("only %d requests answered: the client did not watch the rollout", ok)
	}
}
