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
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	ctrlappconfig "github.com/steward-dev/steward/internal/controller/appconfig"
)

func (c *cli) configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with AppConfigs",
	}
	cmd.AddCommand(c.configDiffCommand())
	return cmd
}

func (c *cli) configDiffCommand() *cobra.Command {
	var file, out string
	cmd := &cobra.Command{
		Use:   "diff APPCONFIG -f NEW.yaml",
		Short: "Show the keys a new AppConfig spec changes and exactly which workloads would restart",
		Long: `Renders the AppConfig of NEW.yaml (the whole object, or the spec as kubectl
apply would send it) as the operator would, and compares it with the
revision its consumers run: the keys that change, and, for each consumer,
whether it would restart, keep running (the keys it uses are unchanged), or
be blocked (it uses a key the new revision lacks). The operator's own
functions decide (internal/controller/appconfig: renderSpec, assess), so
the answer is the operator's. Nothing is changed.

Secret values are compared by their tokens, as the operator does, which
needs read access to the Secrets the spec names; they are never printed.
The consumers are those of the AppConfig's status.`,
		Example: `  kubectl steward config diff shop-config -f shop-config.yaml
  kustomize build overlays/prod | yq 'select(.kind == "AppConfig")' | kubectl steward config diff shop-config -f -`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: c.completeNames(kindAppConfig),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, outputJSON, outputYAML); err != nil {
				return err
			}
			if file == "" {
				return fmt.Errorf("-f NEW.yaml is required (- reads stdin)")
			}
			if err := c.setUp(); err != nil {
				return err
			}
			next, err := readAppConfig(c.streams.In, file)
			if err != nil {
				return err
			}
			d, err := c.configDiff(commandContext(cmd), args[0], next)
			if err != nil {
				return err
			}
			if out != outputHuman {
				return printStructured(c.streams.Out, out, d)
			}
			printConfigDiff(c.streams.Out, d)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The new AppConfig, as YAML or JSON (- for stdin)")
	addOutputFlag(cmd, &out, outputJSON, outputYAML)
	return cmd
}

// readAppConfig reads an AppConfig from a file, or stdin for "-".
func readAppConfig(stdin io.Reader, file string) (*v1alpha1.AppConfig, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the new AppConfig: %w", err)
	}
	ac := &v1alpha1.AppConfig{}
	if err := yaml.UnmarshalStrict(b, ac); err != nil {
		return nil, fmt.Errorf("reading the new AppConfig from %s: %w", file, err)
	}
	if ac.Kind != "" && ac.Kind != "AppConfig" {
		return nil, fmt.Errorf("%s holds a %s, not an AppConfig", file, ac.Kind)
	}
	return ac, nil
}

// configDiff is what an AppConfig change does.
type configDiff struct {
	AppConfig string `json:"appConfig"`
	// CurrentRevision is the revision the consumers move to now.
	CurrentRevision string `json:"currentRevision"`
	// NewRevision is the revision the new spec renders; TargetRevision the
	// one the consumers would move to: NewRevision, or the pinned one.
	NewRevision    string `json:"newRevision"`
	TargetRevision string `json:"targetRevision"`
	// Keys are the keys whose values differ between the current revision
	// and the target.
	Keys      []keyChange       `json:"keys"`
	Consumers []consumerOutcome `json:"consumers"`
	// Restarts are the workloads that would restart, as KIND/NAME.
	Restarts []string `json:"restarts"`
}

// keyChange is one key whose value changes. Old and New are empty for a
// secret key: secret values are never shown.
type keyChange struct {
	Key    string `json:"key"`
	Change string `json:"change"`
	Secret bool   `json:"secret,omitempty"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

// consumerOutcome is what the change does to one consumer.
type consumerOutcome struct {
	Kind string   `json:"kind"`
	Name string   `json:"name"`
	Keys []string `json:"keys,omitempty"`
	// Runs is the revision it runs; State where the operator's assess puts
	// it against the target.
	Runs  string                 `json:"runs"`
	State v1alpha1.ConsumerState `json:"state"`
	// Restarts is true when the change rolls it out.
	Restarts bool   `json:"restarts"`
	Why      string `json:"why"`
}

// The changes of a key.
const (
	keyAdded   = "added"
	keyRemoved = "removed"
	keyChanged = "changed"
)

func (c *cli) configDiff(ctx context.Context, name string, next *v1alpha1.AppConfig) (*configDiff, error) {
	r, err := parseRef(name, kindAppConfig)
	if err != nil {
		return nil, err
	}
	live := &v1alpha1.AppConfig{}
	if err := c.get(ctx, kindAppConfig, r.name, live); err != nil {
		return nil, err
	}
	if next.Name != "" && next.Name != live.Name {
		return nil, fmt.Errorf("the new AppConfig is %q, not %q", next.Name, live.Name)
	}
	if next.Spec.Application != live.Spec.Application {
		return nil, fmt.Errorf("spec.application cannot change (%q to %q): it names the rendered ConfigMaps", live.Spec.Application, next.Spec.Application)
	}
	ac := live.DeepCopy()
	ac.Spec = next.Spec
	newRev, err := c.renderRevision(ctx, ac)
	if err != nil {
		return nil, err
	}
	d := &configDiff{AppConfig: ac.Name, CurrentRevision: live.Status.CurrentRevision, NewRevision: ctrlappconfig.RevisionNameOf(newRev)}
	d.TargetRevision = d.NewRevision
	if pin := ac.Spec.Revision; pin != "" {
		if !slices.ContainsFunc(live.Status.Revisions, func(r v1alpha1.ConfigRevision) bool { return r.Name == pin }) {
			return nil, fmt.Errorf("spec.revision: revision %s is not kept (kubectl steward status appconfig/%s lists them): the operator would refuse the change", pin, ac.Name)
		}
		d.TargetRevision = pin
	}
	revs, err := c.readRevisions(ctx, live)
	if err != nil {
		return nil, err
	}
	if _, ok := revs[d.NewRevision]; !ok {
		revs[d.NewRevision] = newRev
	}
	if cur, ok := revs[d.CurrentRevision]; ok {
		d.Keys = keyChanges(cur, revs[d.TargetRevision])
	}
	for _, entry := range live.Status.Consumers {
		o, err := c.consumerOutcome(ctx, live, entry, revs, d.TargetRevision)
		if err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		d.Consumers = append(d.Consumers, *o)
		if o.Restarts {
			d.Restarts = append(d.Restarts, o.Kind+"/"+o.Name)
		}
	}
	return d, nil
}

// renderRevision renders the spec into a revision, as a reconcile does:
// the values by the operator's renderSpec, and a token per secret value
// under the AppConfig's hash key.
func (c *cli) renderRevision(ctx context.Context, ac *v1alpha1.AppConfig) (appconfig.Revision, error) {
	values, problem, err := ctrlappconfig.RenderSpec(ac)
	if err != nil {
		return appconfig.Revision{}, err
	}
	if problem != nil {
		return appconfig.Revision{}, fmt.Errorf("the operator would refuse the new AppConfig (%s): %s", problem.Reason, problem.Message)
	}
	secrets, err := c.secretValues(ctx, ac)
	if err != nil {
		return appconfig.Revision{}, err
	}
	var tokens map[string]string
	if len(secrets) > 0 {
		key, err := c.hashKey(ctx, ac)
		if err != nil {
			return appconfig.Revision{}, err
		}
		tokens = ctrlappconfig.Tokens(key, secrets)
	}
	return appconfig.NewRevision(values, tokens), nil
}

// secretValues reads the values the spec's secretData names. They stay in
// memory, to be hashed.
func (c *cli) secretValues(ctx context.Context, ac *v1alpha1.AppConfig) (map[string][]byte, error) {
	out := map[string][]byte{}
	read := map[string]*corev1.Secret{}
	for _, key := range slices.Sorted(maps.Keys(ac.Spec.SecretData)) {
		ref := ac.Spec.SecretData[key]
		s, ok := read[ref.SecretName]
		if !ok {
			s = &corev1.Secret{}
			if err := c.c.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ref.SecretName}, s); err != nil {
				return nil, fmt.Errorf("secretData %s: %w", key, apiError(err, "get", core("secrets"), "secret", ac.Namespace, ref.SecretName))
			}
			read[ref.SecretName] = s
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("secretData %s: Secret %s has no key %s: the operator would refuse the change", key, ref.SecretName, ref.Key)
		}
		out[key] = v
	}
	return out, nil
}

// hashKey is the AppConfig's token key, or a new random one when it has
// none yet, as a reconcile would make: every secret key then changes.
func (c *cli) hashKey(ctx context.Context, ac *v1alpha1.AppConfig) ([]byte, error) {
	s := &corev1.Secret{}
	err := c.c.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.HashKeyName()}, s)
	switch {
	case err == nil:
		return ctrlappconfig.HashKey(s), nil
	case !isNotFound(err):
		return nil, apiError(err, "get", core("secrets"), "secret", ac.Namespace, ac.HashKeyName())
	}
	key := make([]byte, 32)
	_, err = rand.Read(key)
	return key, err
}

// readRevisions reads the revisions the status names: the current one, the
// kept ones and those the consumers run.
func (c *cli) readRevisions(ctx context.Context, ac *v1alpha1.AppConfig) (map[string]appconfig.Revision, error) {
	names := []string{ac.Status.CurrentRevision}
	for _, r := range ac.Status.Revisions {
		names = append(names, r.Name)
	}
	for _, cs := range ac.Status.Consumers {
		names = append(names, cs.Revision)
	}
	revs := map[string]appconfig.Revision{}
	for _, name := range names {
		if _, done := revs[name]; done || name == "" {
			continue
		}
		cm := &corev1.ConfigMap{}
		err := c.c.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.RevisionName(name)}, cm)
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			return nil, apiError(err, "get", core("configmaps"), "configmap", ac.Namespace, ac.RevisionName(name))
		}
		revs[name] = appconfig.ReadRevision(cm)
	}
	return revs, nil
}

// keyChanges are the keys whose values differ between two revisions.
func keyChanges(from, to appconfig.Revision) []keyChange {
	out := []keyChange{}
	for _, k := range from.Changed(to, nil) {
		ch := keyChange{Key: k, Change: keyChanged, Secret: from.IsSecret(k) || to.IsSecret(k)}
		switch {
		case !from.Has(k):
			ch.Change = keyAdded
		case !to.Has(k):
			ch.Change = keyRemoved
		}
		if !ch.Secret {
			ch.Old, ch.New = from.Data[k], to.Data[k]
		}
		out = append(out, ch)
	}
	return out
}

// consumerOutcome is what the operator's assess decides for one consumer
// of the status against the target revision; nil when its workload is
// gone.
func (c *cli) consumerOutcome(ctx context.Context, ac *v1alpha1.AppConfig, entry v1alpha1.ConfigConsumer,
	revs map[string]appconfig.Revision, target string) (*consumerOutcome, error) {
	pc, err := c.previewConsumer(ctx, ac, entry)
	if err != nil || pc == nil {
		return nil, err
	}
	next := ctrlappconfig.Assess(*pc, entry, revs, target, c.now())
	o := &consumerOutcome{Kind: entry.Kind, Name: entry.Name, Keys: entry.Keys, Runs: entry.Revision, State: next.State}
	runs := revs[o.Runs]
	switch next.State {
	case v1alpha1.ConsumerPending:
		o.Restarts = true
		o.Why = "keys " + strings.Join(runs.Changed(revs[target], pc.Keys), ", ") + " changed"
		if entry.Revision == target {
			o.Why = "it opted in or changed the keys it uses"
		}
	case v1alpha1.ConsumerUpToDate:
		o.Why = "the keys it uses do not change"
	case v1alpha1.ConsumerBlocked:
		o.Why = fmt.Sprintf("blocked: it %s; it keeps running %s", next.Message, orDash(o.Runs))
	case v1alpha1.ConsumerRollingOut:
		o.Why = "it is rolling out already"
	case v1alpha1.ConsumerFailed:
		o.Why = "its rollout failed: " + next.Message
	}
	return o, nil
}

// previewConsumer reads a consumer's workload as the reconciler's
// consumers does; nil when it is gone.
func (c *cli) previewConsumer(ctx context.Context, ac *v1alpha1.AppConfig, entry v1alpha1.ConfigConsumer) (*ctrlappconfig.PreviewConsumer, error) {
	pc := &ctrlappconfig.PreviewConsumer{Kind: entry.Kind, Name: entry.Name, Keys: entry.Keys}
	key := client.ObjectKey{Namespace: ac.Namespace, Name: entry.Name}
	var workload client.Object
	var owner metav1.Object
	switch entry.Kind {
	case v1alpha1.ConsumerKindWebApp:
		app := &v1alpha1.WebApp{}
		if err := c.c.Get(ctx, key, app); err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, apiError(err, "get", kindWebApp.resource(), "webapp", ac.Namespace, entry.Name)
		}
		workload, owner = &appsv1.Deployment{}, app
	case v1alpha1.ConsumerKindDeployment:
		workload, pc.Plain = &appsv1.Deployment{}, true
	case v1alpha1.ConsumerKindStatefulSet:
		workload, pc.Plain = &appsv1.StatefulSet{}, true
	default:
		return nil, nil
	}
	err := c.c.Get(ctx, key, workload)
	switch {
	case isNotFound(err) && owner != nil:
		pc.Absent = true
		return pc, nil
	case isNotFound(err):
		return nil, nil
	case err != nil:
		resource := strings.ToLower(entry.Kind) + "s"
		return nil, apiError(err, "get", appsv1.SchemeGroupVersion.WithResource(resource).GroupResource(), strings.ToLower(entry.Kind), ac.Namespace, entry.Name)
	}
	if owner != nil && !metav1.IsControlledBy(workload, owner) {
		pc.Absent = true
		return pc, nil
	}
	var tmpl *corev1.PodTemplateSpec
	switch w := workload.(type) {
	case *appsv1.Deployment:
		tmpl = &w.Spec.Template
	case *appsv1.StatefulSet:
		tmpl = &w.Spec.Template
	}
	pc.Hash = tmpl.Annotations[v1alpha1.AppConfigAnnotation(ac.Name)]
	pc.Healthy, pc.Failed = ctrlappconfig.WorkloadRollout(workload)
	return pc, nil
}

func printConfigDiff(w io.Writer, d *configDiff) {
	if d.TargetRevision == d.CurrentRevision {
		fmt.Fprintf(w, "appconfig/%s: the new spec renders revision %s, the current one: no key changes.\n", d.AppConfig, d.TargetRevision)
	} else {
		fmt.Fprintf(w, "appconfig/%s: revision %s -> %s\n", d.AppConfig, orDash(d.CurrentRevision), d.TargetRevision)
		if d.TargetRevision != d.NewRevision {
			fmt.Fprintf(w, "(pinned by spec.revision; the new spec renders %s)\n", d.NewRevision)
		}
	}
	if len(d.Keys) > 0 {
		fmt.Fprintln(w, "\nKeys:")
		t := newTable(w, "  ", "CHANGE", "KEY", "OLD", "NEW")
		for _, k := range d.Keys {
			if k.Secret {
				t.row("  ", k.Change, k.Key, "(secret)", "(secret)")
				continue
			}
			t.row("  ", k.Change, k.Key, oneLine(k.Old, 40), oneLine(k.New, 40))
		}
		t.flush()
	}
	if len(d.Consumers) == 0 {
		fmt.Fprintln(w, "\nNo consumers: nothing restarts.")
		return
	}
	fmt.Fprintln(w, "\nConsumers:")
	t := newTable(w, "  ", "KIND", "NAME", "KEYS", "RESTARTS", "WHY")
	for _, o := range d.Consumers {
		keys := "all"
		if len(o.Keys) > 0 {
			keys = strings.Join(o.Keys, ",")
		}
		t.row("  ", o.Kind, o.Name, keys, yesNo(o.Restarts), o.Why)
	}
	t.flush()
	switch len(d.Restarts) {
	case 0:
		fmt.Fprintln(w, "\nNothing restarts.")
	default:
		fmt.Fprintf(w, "\n%d workload(s) restart: %s.\nThe operator rolls them out after spec.rollout.debounceSeconds, spec.rollout.maxConcurrent at a time.\n",
			len(d.Restarts), strings.Join(d.Restarts, ", "))
	}
}
