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
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/manager"
)

// TestConfigDiffAgreesWithOperator runs the operator (every controller,
// watching this test's namespace) and, for each change of a table, asks
// config diff what the change does, makes the change, and compares the
// workloads the operator restarted (their pod template's hash moved) and
// blocked with what config diff said, and the revision it renders with
// the operator's. No kube-controller-manager runs: the test reports each
// Deployment's and StatefulSet's rollout as complete once it changed.
func TestConfigDiffAgreesWithOperator(t *testing.T) {
	h := newHarness(t)
	startOperator(t, h.ns)
	rollOutWorkloads(t, h.ns)

	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "first"}})
	ac := decode[v1alpha1.AppConfig](t, `
metadata: {name: app-config}
spec:
  application: app
  environment: prod
  data: {DB_HOST: "db.${namespace}.svc", LOG_LEVEL: info, QUEUE: jobs, FEATURE_X: "on"}
  overrides: {prod: {LOG_LEVEL: warn}}
  secretData: {DB_PASSWORD: {secretName: db, key: password}}
  rollout: {debounceSeconds: 0, maxConcurrent: 10}
`)
	h.create(ac)
	optIn := func(keys string) map[string]string {
		a := map[string]string{v1alpha1.AnnotationAppConfigConsumer: "app-config"}
		if keys != "" {
			a[v1alpha1.AnnotationAppConfigKeys] = keys
		}
		return a
	}
	h.create(
		deployment("api", optIn("DB_HOST,LOG_LEVEL,DB_PASSWORD")),
		deployment("worker", optIn("QUEUE")),
		statefulSet("cron", optIn("")),
		decode[v1alpha1.WebApp](t, `
metadata: {name: web}
spec: {image: "nginx:1.27", config: [{appConfig: app-config, keys: [LOG_LEVEL, FEATURE_X]}]}
`),
	)
	settled(t, h.ns, 4)

	cases := []struct {
		name string
		// change changes the spec, or the world.
		change func(*v1alpha1.AppConfigSpec)
		rotate string
		// restarts and blocked are what the operator does, as KIND/NAME.
		restarts, blocked []string
	}{
		{name: "the prod override of a key three consumers use",
			change:   func(s *v1alpha1.AppConfigSpec) { s.Overrides["prod"]["LOG_LEVEL"] = "error" },
			restarts: []string{"Deployment/api", "StatefulSet/cron", "WebApp/web"}},
		{name: "a new key that only the consumer of every key gets",
			change:   func(s *v1alpha1.AppConfigSpec) { s.Data["NEW_KEY"] = "1" },
			restarts: []string{"StatefulSet/cron"}},
		{name: "a key one consumer lists",
			change:   func(s *v1alpha1.AppConfigSpec) { s.Data["QUEUE"] = "jobs-v2" },
			restarts: []string{"Deployment/worker", "StatefulSet/cron"}},
		{name: "a data value that the prod override hides",
			change: func(s *v1alpha1.AppConfigSpec) { s.Data["LOG_LEVEL"] = "debug" }},
		{name: "a removed key that a consumer uses",
			change:   func(s *v1alpha1.AppConfigSpec) { delete(s.Data, "FEATURE_X") },
			restarts: []string{"StatefulSet/cron"}, blocked: []string{"WebApp/web"}},
		{name: "the key back as it was: the blocked consumer runs it already",
			change:   func(s *v1alpha1.AppConfigSpec) { s.Data["FEATURE_X"] = "on" },
			restarts: []string{"StatefulSet/cron"}},
		{name: "a rotated secret value, with a change of the spec that renders the same",
			change:   func(s *v1alpha1.AppConfigSpec) { s.Data["LOG_LEVEL"] = "trace" },
			rotate:   "second",
			restarts: []string{"Deployment/api", "StatefulSet/cron"}},
		{name: "a reference to the namespace: the same rendered value",
			change: func(s *v1alpha1.AppConfigSpec) { s.Data["DB_HOST"] = "db." + h.ns + ".svc" }},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := &v1alpha1.AppConfig{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ac), live); err != nil {
				t.Fatal(err)
			}
			next := &v1alpha1.AppConfig{TypeMeta: metav1.TypeMeta{APIVersion: "steward.dev/v1alpha1", Kind: "AppConfig"},
				ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Spec: *live.Spec.DeepCopy()}
			if tc.change != nil {
				tc.change(&next.Spec)
			}
			if tc.rotate != "" {
				rotate(t, h.ns, "db", tc.rotate)
			}
			file := filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
			b, err := yaml.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}

			var d configDiff
			out := h.run("config", "diff", "app-config", "-f", file, "-o", "json").ok(t)
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			human := h.run("config", "diff", "app-config", "-f", file).ok(t)
			if strings.Contains(out+human, "first") || strings.Contains(out+human, "second") {
				t.Errorf("config diff shows a secret value:\n%s\n%s", out, human)
			}

			before := templateHashes(t, h.ns)
			// The operator writes the AppConfig's status meanwhile: an
			// update that meets that write is sent again on a fresh copy,
			// whose spec is still the one the diff was made against.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ac), live); err != nil {
					return err
				}
				live.Spec = next.Spec
				return k8s.Update(context.Background(), live)
			})
			if err != nil {
				t.Fatal(err)
			}
			st := settledOn(t, h.ns, d.NewRevision)
			after := templateHashes(t, h.ns)

			var restarted, blocked, saidBlocked []string
			for w, hash := range after {
				if before[w] != hash {
					restarted = append(restarted, w)
				}
			}
			for _, cs := range st.Consumers {
				if cs.State == v1alpha1.ConsumerBlocked {
					blocked = append(blocked, cs.Kind+"/"+cs.Name)
				}
			}
			for _, o := range d.Consumers {
				if o.State == v1alpha1.ConsumerBlocked {
					saidBlocked = append(saidBlocked, o.Kind+"/"+o.Name)
				}
			}
			slices.Sort(restarted)
			slices.Sort(blocked)
			slices.Sort(d.Restarts)
			if !slices.Equal(d.Restarts, restarted) || !slices.Equal(saidBlocked, blocked) {
				t.Errorf("config diff said restarts %v, blocked %v; the operator restarted %v, blocked %v\n%s",
					d.Restarts, saidBlocked, restarted, blocked, human)
			}
			if !slices.Equal(restarted, tc.restarts) || !slices.Equal(blocked, tc.blocked) {
				t.Errorf("the operator restarted %v and blocked %v, the table says %v and %v", restarted, blocked, tc.restarts, tc.blocked)
			}
			if d.TargetRevision != st.CurrentRevision {
				t.Errorf("config diff's target revision %s, the operator's current %s", d.TargetRevision, st.CurrentRevision)
			}
		})
	}

	// An invalid spec is refused with the operator's own message.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("spec:\n  application: app\n  environment: prod\n  data: {URL: \"${HOSTT}/x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.run("config", "diff", "app-config", "-f", bad).fails(t,
		`the operator would refuse the new AppConfig (InvalidSpec): Invalid configuration: key "URL", position 1: unknown reference ${HOSTT}`)
	h.stdin = "spec:\n  application: other\n  environment: prod\n"
	h.run("config", "diff", "app-config", "-f", "-").fails(t, `spec.application cannot change ("app" to "other")`)
	h.stdin = ""
}

// TestConfigDiffOutput is config diff's human output, for the docs.
func TestConfigDiffOutput(t *testing.T) {
	h := newHarness(t)
	startOperator(t, h.ns)
	rollOutWorkloads(t, h.ns)
	h.create(decode[v1alpha1.AppConfig](t, `
metadata: {name: shop-config}
spec:
  application: shop
  environment: prod
  data: {LOG_LEVEL: info, API_URL: "https://shop.example.com/api", CART_TTL: "30m"}
  rollout: {debounceSeconds: 0}
`))
	h.create(
		deployment("shop-api", map[string]string{v1alpha1.AnnotationAppConfigConsumer: "shop-config", v1alpha1.AnnotationAppConfigKeys: "LOG_LEVEL,CART_TTL"}),
		deployment("shop-frontend", map[string]string{v1alpha1.AnnotationAppConfigConsumer: "shop-config", v1alpha1.AnnotationAppConfigKeys: "API_URL"}),
		statefulSet("shop-reports", map[string]string{v1alpha1.AnnotationAppConfigConsumer: "shop-config", v1alpha1.AnnotationAppConfigKeys: "REPORT_BUCKET"}),
	)
	settled(t, h.ns, 3)
	h.stdin = `apiVersion: steward.dev/v1alpha1
kind: AppConfig
metadata: {name: shop-config}
spec:
  application: shop
  environment: prod
  data: {LOG_LEVEL: debug, API_URL: "https://shop.example.com/api", CART_TTL: "30m", RECOMMENDATIONS: "on"}
  rollout: {debounceSeconds: 0}
`
	out := h.run("config", "diff", "shop-config", "-f", "-").ok(t)
	// Revision names are hashes of the values: stable.
	golden(t, "config-diff.golden", out)
}

// startOperator runs the operator, watching only ns, until the test ends.
// An AppConfig is looked at again only when it changes: a Secret rotated
// by a test is seen with the next change of the spec, not before config
// diff looked.
func startOperator(t *testing.T, ns string) {
	t.Helper()
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	opts.SkipControllerNameValidation = true
	opts.AppConfigResync = time.Hour
	opts.NoInstanceRequests = true
	opts.WatchNamespaces = []string{ns}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
}

// rollOutWorkloads plays the Deployment and StatefulSet controllers of ns
// until the test ends: each change is rolled out at once, and healthy.
func rollOutWorkloads(t *testing.T, ns string) {
	playOperator(t, func(ctx context.Context) bool {
		deps := &appsv1.DeploymentList{}
		if k8s.List(ctx, deps, client.InNamespace(ns)) == nil {
			for i := range deps.Items {
				d := &deps.Items[i]
				if d.Status.ObservedGeneration == d.Generation {
					continue
				}
				n := ptr.Deref(d.Spec.Replicas, 1)
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
					Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
					}}
				_ = k8s.Status().Update(ctx, d)
			}
		}
		sets := &appsv1.StatefulSetList{}
		if k8s.List(ctx, sets, client.InNamespace(ns)) == nil {
			for i := range sets.Items {
				s := &sets.Items[i]
				if s.Status.ObservedGeneration == s.Generation {
					continue
				}
				n := ptr.Deref(s.Spec.Replicas, 1)
				rev := fmt.Sprintf("%s-%d", s.Name, s.Generation)
				s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n,
					AvailableReplicas: n, CurrentReplicas: n, CurrentRevision: rev, UpdateRevision: rev}
				_ = k8s.Status().Update(ctx, s)
			}
		}
		return false
	})
}

func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
}

func deployment(name string, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name)},
	}
}

func statefulSet(name string, annotations map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name)},
	}
}

// rotate sets the password of a Secret.
func rotate(t *testing.T, ns, name, value string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["password"] = []byte(value)
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// templateHashes are the AppConfig hashes of the pod templates of every
// Deployment and StatefulSet of ns, by consumer (a WebApp's Deployment as
// the WebApp).
func templateHashes(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	deps := &appsv1.DeploymentList{}
	sets := &appsv1.StatefulSetList{}
	if err := k8s.List(context.Background(), deps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(context.Background(), sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		kind := "Deployment"
		if len(d.OwnerReferences) > 0 && d.OwnerReferences[0].Kind == "WebApp" {
			kind = "WebApp"
		}
		for k, v := range d.Spec.Template.Annotations {
			if strings.HasPrefix(k, v1alpha1.AnnotationAppConfigPrefix) {
				out[kind+"/"+d.Name] = v
			}
		}
	}
	for _, s := range sets.Items {
		for k, v := range s.Spec.Template.Annotations {
			if strings.HasPrefix(k, v1alpha1.AnnotationAppConfigPrefix) {
				out["StatefulSet/"+s.Name] = v
			}
		}
	}
	return out
}

// settled waits until the namespace's AppConfig has n consumers, each
// up to date or blocked.
func settled(t *testing.T, ns string, n int) {
	t.Helper()
	eventually(t, func() error {
		list := &v1alpha1.AppConfigList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d AppConfigs", len(list.Items))
		}
		st := list.Items[0].Status
		if len(st.Consumers) != n {
			return fmt.Errorf("%d consumers: %+v", len(st.Consumers), st.Consumers)
		}
		for _, cs := range st.Consumers {
			if cs.State != v1alpha1.ConsumerUpToDate && cs.State != v1alpha1.ConsumerBlocked {
				return fmt.Errorf("consumer %s/%s is %s", cs.Kind, cs.Name, cs.State)
			}
		}
		return nil
	})
}

// settledOn waits until the namespace's AppConfig rendered revision, saw
// its current spec and no consumer is waiting or rolling out, and returns
// its status.
func settledOn(t *testing.T, ns, revision string) v1alpha1.AppConfigStatus {
	t.Helper()
	var st v1alpha1.AppConfigStatus
	eventually(t, func() error {
		list := &v1alpha1.AppConfigList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d AppConfigs", len(list.Items))
		}
		ac := list.Items[0]
		st = ac.Status
		if st.ObservedGeneration != ac.Generation || st.LatestRevision != revision {
			return fmt.Errorf("the operator renders %s (generation %d of %d); config diff rendered %s",
				st.LatestRevision, st.ObservedGeneration, ac.Generation, revision)
		}
		for _, cs := range st.Consumers {
			if cs.State == v1alpha1.ConsumerPending || cs.State == v1alpha1.ConsumerRollingOut {
				return fmt.Errorf("consumer %s/%s is %s", cs.Kind, cs.Name, cs.State)
			}
		}
		return nil
	})
	return st
}
