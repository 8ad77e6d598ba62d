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

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// The config rollout measure: one AppConfig used by many WebApps in one
// namespace; every WebApp uses configCommon, a few also configHot; each
// trial changes configHot only.
const (
	configName   = "shop"
	configCommon = "COMMON"
	configHot    = "HOT"
)

// configTrial is one change of the hot key.
type configTrial struct {
	MaxConcurrent int `json:"maxConcurrent"`
	// Restarted is how many Deployments changed generation, counted a
	// quiet period after the rollout ended.
	Restarted int `json:"restarted"`
	// Unexpected names Deployments that changed generation without using
	// the changed key, and users of it that did not.
	Unexpected []string `json:"unexpected,omitempty"`
	// LastAvailableSeconds runs from the edit until the last Deployment that
	// uses the changed key is rolled out and available.
	LastAvailableSeconds float64 `json:"lastAvailableSeconds"`
	// ReadySeconds runs from the edit until the AppConfig is Ready on the
	// new revision with every consumer up to date.
	ReadySeconds float64 `json:"readySeconds"`
	// Requests are the operator's requests from the edit until it was quiet.
	Requests requestCounts `json:"requests"`
	Writes   float64       `json:"writes"`
}

// configSummary sums up the trials at one maxConcurrent.
type configSummary struct {
	MaxConcurrent        int     `json:"maxConcurrent"`
	Trials               int     `json:"trials"`
	AllExact             bool    `json:"allExact"`
	LastAvailableSeconds float64 `json:"medianLastAvailableSeconds"`
	ReadySeconds         float64 `json:"medianReadySeconds"`
	Writes               float64 `json:"medianWrites"`
}

// configRollout is the JSON form of the measure.
type configRollout struct {
	Consumers       int     `json:"consumers"`
	Changed         int     `json:"changed"`
	DebounceSeconds int     `json:"debounceSeconds"`
	QuietSeconds    float64 `json:"quietSeconds"`
	// SetupSeconds runs from the first WebApp's creation until every one is
	// Ready, the AppConfig is Ready and every Deployment is rolled out;
	// SetupRequests are the operator's requests until it was quiet after.
	SetupSeconds  float64         `json:"setupSeconds"`
	SetupRequests requestCounts   `json:"setupRequests"`
	Trials        []configTrial   `json:"trials"`
	Summaries     []configSummary `json:"summaries"`
}

// configQuiet is how long after a rollout ended Deployments are checked
// again for late restarts.
const configQuiet = 5 * time.Second

// measureConfigRollout creates an AppConfig and its consumers, waits until
// every Deployment is available, then changes the key a few of them use,
// once per maxConcurrent per round, and counts and times the restarts.
func (b *bench) measureConfigRollout(ctx context.Context, res *results) error {
	n, hotUsers := b.cfg.ConfigConsumers, b.cfg.ConfigChanged
	nss, err := b.namespaces(ctx, "config", 1)
	if err != nil {
		return err
	}
	ns := nss[0]
	ac := &v1alpha1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configName},
		Spec: v1alpha1.AppConfigSpec{
			Application: configName, Environment: "dev",
			Data: map[string]string{configCommon: "common", configHot: "0"},
			Rollout: &v1alpha1.ConfigRollout{
				DebounceSeconds: new(int32(b.cfg.ConfigDebounce)),
				MaxConcurrent:   new(int32(b.cfg.ConfigMaxConcurrent[0])),
			},
		},
	}
	if err := b.c.Create(ctx, ac); err != nil {
		return fmt.Errorf("creating AppConfig: %w", err)
	}
	// The users of the hot key are spread evenly over the names, which is
	// the order the AppConfig rolls consumers out in.
	hot := map[string]bool{}
	step := n / hotUsers
	var objs []client.Object
	var keys []client.ObjectKey
	for i := range n {
		app := webAppScenario{}.New(ns, i, false).(*v1alpha1.WebApp)
		use := v1alpha1.ConfigUse{AppConfig: configName, Keys: []string{configCommon}}
		if i%step == 0 && len(hot) < hotUsers {
			use.Keys = append(use.Keys, configHot)
			hot[app.Name] = true
		}
		app.Spec.Config = []v1alpha1.ConfigUse{use}
		objs = append(objs, app)
		keys = append(keys, client.ObjectKeyFromObject(app))
	}
	b.logf("Creating %d WebApps that use AppConfig %s/%s, %d of them its key %s", n, ns, configName, hotUsers, configHot)
	reqBefore, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.createAll(ctx, objs); err != nil {
		return err
	}
	if _, err := b.ready.waitAll(ctx, keys, convergeTimeout); err != nil {
		return fmt.Errorf("consumers of AppConfig %s: %w", configName, err)
	}
	w, err := b.watchConfig(ctx, ns, hot)
	if err != nil {
		return err
	}
	if err := w.waitSettled(ctx, n, convergeTimeout); err != nil {
		return err
	}
	setup := time.Since(start)
	b.logf("%d consumers Ready and their Deployments available in %.1fs", n, setup.Seconds())
	if err := b.quiet(ctx); err != nil {
		return err
	}
	reqAfter, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return err
	}

	out := &configRollout{
		Consumers: n, Changed: hotUsers, DebounceSeconds: b.cfg.ConfigDebounce, QuietSeconds: configQuiet.Seconds(),
		SetupSeconds: setup.Seconds(), SetupRequests: reqAfter.minus(reqBefore),
	}
	res.ConfigRollout = out
	value := 0
	for _, mc := range b.cfg.ConfigMaxConcurrent {
		if err := b.patchConfig(ctx, ns, fmt.Sprintf(`{"spec":{"rollout":{"maxConcurrent":%d}}}`, mc)); err != nil {
			return err
		}
		if err := w.waitSettled(ctx, n, time.Minute); err != nil {
			return err
		}
		for range b.cfg.ConfigRounds {
			value++
			t, err := b.configTrial(ctx, w, ns, hot, value)
			if err != nil {
				return err
			}
			t.MaxConcurrent = mc
			out.Trials = append(out.Trials, t)
			b.logf("maxConcurrent=%d: %d Deployments restarted (want %d), last available %.1fs and AppConfig Ready %.1fs after the edit, %.0f operator writes",
				mc, t.Restarted, hotUsers, t.LastAvailableSeconds, t.ReadySeconds, t.Writes)
		}
	}
	return nil
}

// configTrial sets the hot key to value and measures the rollout.
func (b *bench) configTrial(ctx context.Context, w *configWatch, ns string, hot map[string]bool, value int) (configTrial, error) {
	var t configTrial
	if err := b.quiet(ctx); err != nil {
		return t, err
	}
	before, err := b.deploymentGenerations(ctx, ns)
	if err != nil {
		return t, err
	}
	cur, err := w.currentRevision(ctx)
	if err != nil {
		return t, err
	}
	reqBefore, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return t, err
	}
	w.arm(before, cur)
	start := time.Now()
	if err := b.patchConfig(ctx, ns, fmt.Sprintf(`{"spec":{"data":{%q:%q}}}`, configHot, strconv.Itoa(value))); err != nil {
		return t, err
	}
	lastAvailable, ready, err := w.waitRolledOut(ctx, convergeTimeout)
	if err != nil {
		return t, err
	}
	t.LastAvailableSeconds = lastAvailable.Sub(start).Seconds()
	t.ReadySeconds = ready.Sub(start).Seconds()

	// Restarts that come late, after the AppConfig said it was done, count.
	select {
	case <-ctx.Done():
		return t, ctx.Err()
	case <-time.After(configQuiet):
	}
	if err := b.quiet(ctx); err != nil {
		return t, err
	}
	after, err := b.deploymentGenerations(ctx, ns)
	if err != nil {
		return t, err
	}
	for name, gen := range after {
		changed := gen != before[name]
		if changed {
			t.Restarted++
		}
		switch {
		case changed && !hot[name]:
			t.Unexpected = append(t.Unexpected, name+" restarted but does not use "+configHot)
		case !changed && hot[name]:
			t.Unexpected = append(t.Unexpected, name+" uses "+configHot+" but did not restart")
		}
	}
	slices.Sort(t.Unexpected)
	reqAfter, err := scrapeRequests(ctx, b.operator)
	if err != nil {
		return t, err
	}
	t.Requests = reqAfter.minus(reqBefore)
	t.Writes, _ = t.Requests.writes()
	return t, nil
}

// patchConfig merge-patches the AppConfig.
func (b *bench) patchConfig(ctx context.Context, ns, patch string) error {
	ac := &v1alpha1.AppConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configName}}
	if err := b.c.Patch(ctx, ac, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching AppConfig %s with %s: %w", configName, patch, err)
	}
	return nil
}

// deploymentGenerations reads every Deployment's generation in ns from the
// API server.
func (b *bench) deploymentGenerations(ctx context.Context, ns string) (map[string]int64, error) {
	list := &appsv1.DeploymentList{}
	if err := b.c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing Deployments in %s: %w", ns, err)
	}
	gens := make(map[string]int64, len(list.Items))
	for i := range list.Items {
		gens[list.Items[i].Name] = list.Items[i].Generation
	}
	return gens, nil
}

// configWatch follows the AppConfig and its consumers' Deployments through
// informers and records when a trial's rollout ends.
type configWatch struct {
	ns  string
	hot map[string]bool
	// c reads from the bench's informers.
	c client.Reader

	mu sync.Mutex
	// armed: a trial is under way; baseline are the generations before it,
	// oldRevision the current revision before it.
	armed       bool
	baseline    map[string]int64
	oldRevision string
	availableAt map[string]time.Time
	readyAt     time.Time
}

// watchConfig starts following the AppConfig in ns and its consumers'
// Deployments; hot are the WebApps that use the key the trials change.
func (b *bench) watchConfig(ctx context.Context, ns string, hot map[string]bool) (*configWatch, error) {
	w := &configWatch{ns: ns, hot: hot, c: b.informers}
	deps, err := b.informers.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	_, err = deps.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observeDeployment,
		UpdateFunc: func(_, o any) { w.observeDeployment(o) },
	})
	if err != nil {
		return nil, err
	}
	acs, err := b.informers.GetInformer(ctx, &v1alpha1.AppConfig{})
	if err != nil {
		return nil, err
	}
	_, err = acs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observeAppConfig,
		UpdateFunc: func(_, o any) { w.observeAppConfig(o) },
	})
	return w, err
}

// arm starts a trial from the given generations and current revision.
func (w *configWatch) arm(baseline map[string]int64, oldRevision string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.baseline, w.oldRevision = true, baseline, oldRevision
	w.availableAt, w.readyAt = map[string]time.Time{}, time.Time{}
}

func (w *configWatch) observeDeployment(o any) {
	d, ok := o.(*appsv1.Deployment)
	if !ok || d.Namespace != w.ns || !rolledOut(d) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.availableAt[d.Name]; w.armed && !seen && d.Generation > w.baseline[d.Name] {
		w.availableAt[d.Name] = now
	}
}

func (w *configWatch) observeAppConfig(o any) {
	ac, ok := o.(*v1alpha1.AppConfig)
	if !ok || ac.Namespace != w.ns || ac.Name != configName {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed && w.readyAt.IsZero() && ac.Status.CurrentRevision != w.oldRevision && w.settled(ac, len(w.baseline)) == nil {
		w.readyAt = now
	}
}

// settled says why the AppConfig is not yet Ready on its latest revision
// with n consumers, every one up to date, and the users of the hot key on
// the current revision; nil when it is.
func (w *configWatch) settled(ac *v1alpha1.AppConfig, n int) error {
	st := ac.Status
	switch {
	case st.ObservedGeneration != ac.Generation:
		return fmt.Errorf("status is for generation %d, not %d", st.ObservedGeneration, ac.Generation)
	case st.CurrentRevision == "" || st.CurrentRevision != st.LatestRevision:
		return fmt.Errorf("current revision %q is not the latest, %q", st.CurrentRevision, st.LatestRevision)
	case !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady):
		return fmt.Errorf("not Ready: %+v", meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady))
	case len(st.Consumers) != n:
		return fmt.Errorf("%d consumers, want %d", len(st.Consumers), n)
	}
	for _, c := range st.Consumers {
		if c.State != v1alpha1.ConsumerUpToDate {
			return fmt.Errorf("consumer %s is %s", c.Name, c.State)
		}
		if w.hot[c.Name] && c.Revision != st.CurrentRevision {
			return fmt.Errorf("consumer %s runs revision %s, not %s", c.Name, c.Revision, st.CurrentRevision)
		}
	}
	return nil
}

func (w *configWatch) appConfig(ctx context.Context) (*v1alpha1.AppConfig, error) {
	ac := &v1alpha1.AppConfig{}
	err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: configName}, ac)
	return ac, err
}

func (w *configWatch) currentRevision(ctx context.Context) (string, error) {
	ac, err := w.appConfig(ctx)
	return ac.Status.CurrentRevision, err
}

// waitSettled waits until the AppConfig is settled with n consumers and
// their Deployments rolled out.
func (w *configWatch) waitSettled(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ac, err := w.appConfig(ctx)
		if err != nil {
			return err
		}
		why := w.settled(ac, n)
		if why == nil {
			why = w.deploymentsRolledOut(ctx, n)
		}
		if why == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("AppConfig %s not settled after %s: %w", configName, timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *configWatch) deploymentsRolledOut(ctx context.Context, n int) error {
	list := &appsv1.DeploymentList{}
	if err := w.c.List(ctx, list, client.InNamespace(w.ns)); err != nil {
		return err
	}
	if len(list.Items) != n {
		return fmt.Errorf("%d Deployments, want %d", len(list.Items), n)
	}
	for i := range list.Items {
		if !rolledOut(&list.Items[i]) {
			return fmt.Errorf("deployment %s is not rolled out", list.Items[i].Name)
		}
	}
	return nil
}

// waitRolledOut waits until every user of the hot key has rolled out a new
// generation and the AppConfig is settled on a new revision, and returns
// when the last Deployment was and when the AppConfig was.
func (w *configWatch) waitRolledOut(ctx context.Context, timeout time.Duration) (lastAvailable, ready time.Time, err error) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		var waiting []string
		lastAvailable, ready = time.Time{}, w.readyAt
		for name := range w.hot {
			at, ok := w.availableAt[name]
			if !ok {
				waiting = append(waiting, name)
			} else if at.After(lastAvailable) {
				lastAvailable = at
			}
		}
		w.mu.Unlock()
		if len(waiting) == 0 && !ready.IsZero() {
			w.mu.Lock()
			w.armed = false
			w.mu.Unlock()
			return lastAvailable, ready, nil
		}
		if time.Now().After(deadline) {
			why := "the AppConfig is settled"
			if ac, err := w.appConfig(ctx); err == nil {
				w.mu.Lock()
				n := len(w.baseline)
				w.mu.Unlock()
				if e := w.settled(ac, n); e != nil {
					why = e.Error()
				}
			}
			slices.Sort(waiting)
			return time.Time{}, time.Time{}, errors.New("rollout of " + configHot + " not done after " + timeout.String() +
				": Deployments not rolled out: " + strings.Join(waiting, ", ") + "; AppConfig: " + why)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rolledOut reports whether a Deployment's controller has seen its current
// generation and every replica is updated and available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want &&
		s.AvailableReplicas == want && s.Replicas == want
}
