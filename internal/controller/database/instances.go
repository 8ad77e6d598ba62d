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

package database

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/steward-dev/steward/internal/instance"
)

// InstanceClient talks to the instance managers of a Database's pods.
type InstanceClient interface {
	// Report reads an instance's GET /status.
	Report(ctx context.Context, pod *corev1.Pod) (instance.Report, error)
	// Assign posts an assignment with the Database's control token.
	Assign(ctx context.Context, pod *corev1.Pod, token string, a instance.Assignment) error
}

// NoInstances contacts no instance: for clusters whose pods run nothing.
type NoInstances struct{}

var errNoInstanceRequests = errors.New("the operator does not contact instances (--no-instance-requests)")

// Report implements InstanceClient.
func (NoInstances) Report(context.Context, *corev1.Pod) (instance.Report, error) {
	return instance.Report{}, errNoInstanceRequests
}

// Assign implements InstanceClient.
func (NoInstances) Assign(context.Context, *corev1.Pod, string, instance.Assignment) error {
	return errNoInstanceRequests
}

// HTTPInstances reaches instance managers at their pod IP.
type HTTPInstances struct {
	// Client makes the requests; nil means one with a 2 s timeout.
	Client *http.Client
}

var defaultInstanceClient = &http.Client{Timeout: 2 * time.Second}

func (h HTTPInstances) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return defaultInstanceClient
}

// statusAddr is the address of a pod's instance manager.
func statusAddr(pod *corev1.Pod) (string, error) {
	if pod.Status.PodIP == "" {
		return "", errors.New("the pod has no address yet")
	}
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(statusPort)), nil
}

func statusURL(pod *corev1.Pod, path string) (string, error) {
	addr, err := statusAddr(pod)
	if err != nil {
		return "", err
	}
	return "http://" + addr + path, nil
}

// Report implements InstanceClient.
func (h HTTPInstances) Report(ctx context.Context, pod *corev1.Pod) (instance.Report, error) {
	addr, err := statusAddr(pod)
	if err != nil {
		return instance.Report{}, err
	}
	return instance.GetReport(ctx, h.client(), addr)
}

// Assign implements InstanceClient.
func (h HTTPInstances) Assign(ctx context.Context, pod *corev1.Pod, token string, a instance.Assignment) error {
	url, err := statusURL(pod, "/role")
	if err != nil {
		return err
	}
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client().Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("POST /role: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
