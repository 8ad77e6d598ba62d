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

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStandardLabels applies every sample (each kind, an AppStack among
// them) and checks that every object Steward created for them, and the
// pods its workloads create, carries the standard app.kubernetes.io labels:
// name, instance, component and managed-by=steward.
func TestStandardLabels(t *testing.T) {
	const ns = "e2e-labels"
	kubectl(t, "", "create", "namespace", ns)
	kubectl(t, "", "apply", "--namespace="+ns, "-k", "config/samples")
	t.Cleanup(func() { _, _ = kubectlMayFail("delete", "--namespace="+ns, "--wait=false", "-k", "config/samples") })

	kinds := "deployments,statefulsets,services,ingresses,horizontalpodautoscalers,poddisruptionbudgets,configmaps,secrets," +
		"persistentvolumeclaims,jobs,cronjobs,webapps,databases,caches,appconfigs,backups"
	type object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name            string            `json:"name"`
			Labels          map[string]string `json:"labels"`
			OwnerReferences []struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			} `json:"ownerReferences"`
		} `json:"metadata"`
		Spec struct {
			Template *struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	missing := func(labels map[string]string) []string {
		var m []string
		for _, key := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"} {
			if labels[key] == "" {
				m = append(m, key)
			}
		}
		if labels["app.kubernetes.io/managed-by"] != "steward" {
			m = append(m, "app.kubernetes.io/managed-by=steward")
		}
		return m
	}
	// The samples' children appear over a few reconciles: look until the
	// set of Steward's objects stops growing, then judge them all.
	var created []object
	last, stable := -1, 0
	eventually(t, 3*time.Minute, func() error {
		var list struct {
			Items []object `json:"items"`
		}
		if err := json.Unmarshal([]byte(kubectl(t, "", "get", kinds, "--namespace="+ns, "-o", "json")), &list); err != nil {
			return err
		}
		created = created[:0]
		for _, o := range list.Items {
			ours := o.Metadata.Labels["app.kubernetes.io/managed-by"] == "steward"
			for _, ref := range o.Metadata.OwnerReferences {
				ours = ours || strings.HasPrefix(ref.APIVersion, "steward.dev/")
			}
			if ours {
				created = append(created, o)
			}
		}
		if len(created) == last {
			stable++
		} else {
			last, stable = len(created), 0
		}
		if stable < 10 || len(created) < 20 {
			return fmt.Errorf("%d objects of Steward's so far", len(created))
		}
		return nil
	})
	kindsSeen := map[string]int{}
	for _, o := range created {
		kindsSeen[o.Kind]++
		if m := missing(o.Metadata.Labels); len(m) > 0 {
			t.Errorf("%s %s lacks %v (labels %v)", o.Kind, o.Metadata.Name, m, o.Metadata.Labels)
		}
		if o.Spec.Template != nil {
			if m := missing(o.Spec.Template.Metadata.Labels); len(m) > 0 {
				t.Errorf("the pods of %s %s lack %v (labels %v)", o.Kind, o.Metadata.Name, m, o.Spec.Template.Metadata.Labels)
			}
		}
	}
	t.Logf("Steward's objects by kind: %v", kindsSeen)
	for _, k := range []string{"Deployment", "StatefulSet", "Service", "ConfigMap", "Secret", "CronJob", "WebApp"} {
		if kindsSeen[k] == 0 {
			t.Errorf("no %s of Steward's among %v: the samples did not produce what this test judges", k, kindsSeen)
		}
	}
}
