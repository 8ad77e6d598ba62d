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

// Package appconfig reconciles AppConfigs: it renders each into immutable,
// content-hashed revisions (a ConfigMap, and a Secret for secret values),
// keeps "<application>-config" in step with the current revision, and rolls
// the new revision out to the consumers whose used keys changed, a few at a
// time, after a debounce window.
package appconfig

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/labels"
)

const (
	defaultDebounce      = 5 * time.Second
	defaultMaxConcurrent = 5
	defaultHistory       = 10
	// defaultResync is how often an AppConfig is looked at without an
	// event: the Secrets its secretData reads and plain Deployments and
	// StatefulSets that opt in are not watched.
	defaultResync = 2 * time.Minute
	// pollRollout is how often a plain consumer's rollout is looked at.
	pollRollout = 2 * time.Second
)

// Reconciler renders AppConfigs and rolls their revisions out.
type Reconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly: the Secrets secretData
	// names, and plain consumers, which the cache does not hold.
	APIReader client.Reader
	// Recorder emits events.
	Recorder events.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Resync is how often an AppConfig is looked at without an event;
	// defaultResync when zero.
	Resync time.Duration
}

// +kubebuilder:rbac:groups=steward.dev,resources=appconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=steward.dev,resources=appconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=steward.dev,resources=webapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return defaultResync
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile renders one AppConfig, moves its current revision, and rolls it
// out to the consumers whose keys changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := &v1alpha1.AppConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, ac); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ac.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the children carry owner references
	}
	st := ac.Status.DeepCopy()
	st.ObservedGeneration = ac.Generation
	now := r.now()
	res, err := r.reconcile(ctx, ac, st, now)
	if werr := r.writeStatus(ctx, ac, st); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	return res, err
}

// trouble is a problem that stops the AppConfig short of a rollout.
type trouble struct{ reason, message string }

func (r *Reconciler) reconcile(ctx context.Context, ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, now time.Time) (ctrl.Result, error) {
	spec := appconfig.Spec{Data: ac.Spec.Data, Overrides: ac.Spec.Overrides}
	vars := appconfig.Vars{Namespace: ac.Namespace, Application: ac.Spec.Application}
	if errs := appconfig.Validate(spec, ac.Spec.Environment, vars); len(errs) > 0 {
		msg := (&appconfig.ValidationError{Errors: errs}).Error()
		r.setTrouble(ac, st, trouble{v1alpha1.ReasonInvalidSpec, "Invalid configuration: " + strings.ReplaceAll(msg, "\n", "; ")})
		return ctrl.Result{}, nil // a spec change brings the next event
	}
	values, err := appconfig.Render(spec, ac.Spec.Environment, vars)
	if err != nil {
		return ctrl.Result{}, err // Validate found nothing: a bug
	}
	secrets, tr, err := r.readSecrets(ctx, ac)
	if err != nil {
		return ctrl.Result{}, err
	}
	if tr != nil {
		r.setTrouble(ac, st, *tr)
		return ctrl.Result{RequeueAfter: min(30*time.Second, r.resync())}, nil
	}

	latest, err := r.render(ctx, ac, st, values, secrets, now)
	if err != nil {
		if reason, ok := apply.UserError(err); ok {
			r.setTrouble(ac, st, trouble{reason, err.Error()})
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
		return ctrl.Result{}, err
	}

	// The revision consumers move to: the pinned one, or the latest once it
	// has been unchanged for the debounce window. The first revision needs no
	// debounce: nothing runs yet.
	var requeue time.Duration
	target := st.CurrentRevision
	switch {
	case ac.Spec.Revision != "":
		if !hasRevision(st, ac.Spec.Revision) {
			r.setTrouble(ac, st, trouble{v1alpha1.ReasonRevisionNotFound, fmt.Sprintf(
				"Pinned revision %s is not kept; kept revisions: %s", ac.Spec.Revision, strings.Join(revisionNames(st), ", "))})
			return ctrl.Result{}, r.prune(ctx, ac, st)
		}
		target = ac.Spec.Revision
	case target == "":
		target = latest
	case target != latest:
		wait := st.LatestRevisionTime.Add(debounce(ac)).Sub(now)
		if wait <= 0 {
			target = latest
		} else {
			requeue = wait
		}
	}
	if target != st.CurrentRevision {
		log.FromContext(ctx).Info("Current revision changed", "from", st.CurrentRevision, "to", target)
		st.CurrentRevision = target
	}

	targetCM := &corev1.ConfigMap{}
	if err := r.get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.RevisionName(target)}, targetCM); err != nil {
		return ctrl.Result{}, fmt.Errorf("reading revision %s: %w", target, err)
	}
	if err := r.applyCurrent(ctx, ac, targetCM); err != nil {
		if reason, ok := apply.UserError(err); ok {
			r.setTrouble(ac, st, trouble{reason, err.Error()})
			return ctrl.Result{RequeueAfter: time.Minute}, nil
		}
		return ctrl.Result{}, err
	}

	poll, err := r.rollOut(ctx, ac, st, target, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.prune(ctx, ac, st); err != nil {
		return ctrl.Result{}, err
	}
	setRolloutStatus(ac, st, latest, requeue > 0)

	next := r.resync()
	if requeue > 0 {
		next = min(next, requeue)
	}
	if poll {
		next = min(next, pollRollout)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func debounce(ac *v1alpha1.AppConfig) time.Duration {
	if ro := ac.Spec.Rollout; ro != nil && ro.DebounceSeconds != nil {
		return time.Duration(*ro.DebounceSeconds) * time.Second
	}
	return defaultDebounce
}

func maxConcurrent(ac *v1alpha1.AppConfig) int {
	if ro := ac.Spec.Rollout; ro != nil && ro.MaxConcurrent != nil {
		return int(*ro.MaxConcurrent)
	}
	return defaultMaxConcurrent
}

func historyLimit(ac *v1alpha1.AppConfig) int {
	if ac.Spec.RevisionHistoryLimit != nil {
		return int(*ac.Spec.RevisionHistoryLimit)
	}
	return defaultHistory
}

// readSecrets reads the values secretData names. A missing Secret or key is
// a trouble that names them, never a value.
func (r *Reconciler) readSecrets(ctx context.Context, ac *v1alpha1.AppConfig) (map[string][]byte, *trouble, error) {
	if len(ac.Spec.SecretData) == 0 {
		return nil, nil, nil
	}
	out := map[string][]byte{}
	read := map[string]*corev1.Secret{}
	for _, key := range slices.Sorted(maps.Keys(ac.Spec.SecretData)) {
		ref := ac.Spec.SecretData[key]
		s, ok := read[ref.SecretName]
		if !ok {
			s = &corev1.Secret{}
			err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ref.SecretName}, s)
			switch {
			case apierrors.IsNotFound(err):
				return nil, &trouble{v1alpha1.ReasonSecretNotFound, fmt.Sprintf("secretData %s: Secret %s does not exist", key, ref.SecretName)}, nil
			case err != nil:
				return nil, nil, fmt.Errorf("reading Secret %s for secretData %s: %w", ref.SecretName, key, err)
			}
			read[ref.SecretName] = s
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return nil, &trouble{v1alpha1.ReasonSecretNotFound, fmt.Sprintf("secretData %s: Secret %s has no key %s", key, ref.SecretName, ref.Key)}, nil
		}
		out[key] = v
	}
	return out, nil, nil
}

// render creates the revision of the rendered values unless it exists, and
// records it as the latest. It returns the latest revision's name.
func (r *Reconciler) render(ctx context.Context, ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, values map[string]string, secrets map[string][]byte, now time.Time) (string, error) {
	tokens, err := r.tokens(ctx, ac, secrets)
	if err != nil {
		return "", err
	}
	rev := appconfig.NewRevision(values, tokens)
	name := rev.Hash(nil)[:10]

	tokensJSON, err := json.Marshal(tokens)
	if err != nil {
		return "", err
	}
	l := labels.Common(ac.Spec.Application, "appconfig")
	l[v1alpha1.LabelAppConfig] = ac.Name
	l[v1alpha1.LabelRevision] = name
	cm := corev1ac.ConfigMap(ac.RevisionName(name), ac.Namespace).
		WithLabels(l).
		WithOwnerReferences(ownerReference(ac)).
		WithData(values).
		WithImmutable(true)
	if len(tokens) > 0 {
		cm.WithAnnotations(map[string]string{v1alpha1.AnnotationSecretTokens: string(tokensJSON)})
	}
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	if err := applier.Apply(ctx, cm, &corev1.ConfigMap{}, ac.UID); err != nil {
		return "", err
	}
	if len(secrets) > 0 {
		s := corev1ac.Secret(ac.RevisionName(name), ac.Namespace).
			WithLabels(l).
			WithOwnerReferences(ownerReference(ac)).
			WithType(corev1.SecretTypeOpaque).
			WithData(secrets).
			WithImmutable(true)
		if err := applier.Apply(ctx, s, &corev1.Secret{}, ac.UID); err != nil {
			return "", err
		}
	}
	if !hasRevision(st, name) {
		st.Revisions = append([]v1alpha1.ConfigRevision{{
			Name: name, Created: metav1.NewTime(now), Keys: int32(len(values) + len(secrets)),
		}}, st.Revisions...)
		r.Recorder.Eventf(ac, nil, corev1.EventTypeNormal, v1alpha1.EventRevisionCreated, "Render",
			"Rendered revision %s with %d keys", name, len(values)+len(secrets))
	}
	if st.LatestRevision != name {
		st.LatestRevision = name
		t := metav1.NewTime(now)
		st.LatestRevisionTime = &t
	}
	return name, nil
}

// tokens gives each secret key its token: an HMAC of the key and value
// under the AppConfig's hash key, so that equal values always get equal
// tokens, whatever the cache has seen, and the value cannot be guessed from
// the token without the key.
func (r *Reconciler) tokens(ctx context.Context, ac *v1alpha1.AppConfig, secrets map[string][]byte) (map[string]string, error) {
	tokens := map[string]string{}
	if len(secrets) == 0 {
		return tokens, nil
	}
	key, err := r.hashKey(ctx, ac)
	if err != nil {
		return nil, err
	}
	for k, v := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(k))
		mac.Write([]byte{0})
		mac.Write(v)
		tokens[k] = hex.EncodeToString(mac.Sum(nil))[:32]
	}
	return tokens, nil
}

const hashKeyField = "key"

// hashKey returns the AppConfig's token key, creating it once.
func (r *Reconciler) hashKey(ctx context.Context, ac *v1alpha1.AppConfig) ([]byte, error) {
	key := client.ObjectKey{Namespace: ac.Namespace, Name: ac.HashKeyName()}
	s := &corev1.Secret{}
	err := r.get(ctx, key, s)
	if err == nil {
		if !metav1.IsControlledBy(s, ac) || len(s.Data[hashKeyField]) == 0 {
			return nil, &apply.Conflict{Kind: "Secret", Name: key.Name}
		}
		return s.Data[hashKeyField], nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	l := labels.Common(ac.Spec.Application, "appconfig")
	l[v1alpha1.LabelAppConfig] = ac.Name
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: ac.Namespace, Labels: l,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "AppConfig", Name: ac.Name, UID: ac.UID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Type:      corev1.SecretTypeOpaque,
		Data:      map[string][]byte{hashKeyField: b},
		Immutable: new(true),
	}
	if err := r.Client.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return r.hashKey(ctx, ac) // another reconcile made it
		}
		return nil, fmt.Errorf("creating Secret %s: %w", key.Name, err)
	}
	return b, nil
}

// applyCurrent makes "<application>-config" (and its Secret) hold the
// current revision's values, for the consumers that read it by name.
func (r *Reconciler) applyCurrent(ctx context.Context, ac *v1alpha1.AppConfig, revCM *corev1.ConfigMap) error {
	l := labels.Common(ac.Spec.Application, "appconfig")
	l[v1alpha1.LabelAppConfig] = ac.Name
	l[v1alpha1.LabelRevision] = revCM.Labels[v1alpha1.LabelRevision]
	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	cm := corev1ac.ConfigMap(ac.ConfigName(), ac.Namespace).
		WithLabels(l).
		WithOwnerReferences(ownerReference(ac)).
		WithData(revCM.Data)
	live := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.ConfigName()}, live); client.IgnoreNotFound(err) != nil {
		return err
	}
	if err := applier.Apply(ctx, cm, live, ac.UID); err != nil {
		return err
	}
	rev := appconfig.ReadRevision(revCM)
	liveSecret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.ConfigName()}, liveSecret); client.IgnoreNotFound(err) != nil {
		return err
	}
	if len(rev.SecretKeys) == 0 {
		return applier.Delete(ctx, liveSecret, ac.UID)
	}
	revSecret := &corev1.Secret{}
	if err := r.get(ctx, client.ObjectKeyFromObject(revCM), revSecret); err != nil {
		return fmt.Errorf("reading the Secret of revision %s: %w", revCM.Labels[v1alpha1.LabelRevision], err)
	}
	s := corev1ac.Secret(ac.ConfigName(), ac.Namespace).
		WithLabels(l).
		WithOwnerReferences(ownerReference(ac)).
		WithType(corev1.SecretTypeOpaque).
		WithData(revSecret.Data)
	return applier.Apply(ctx, s, liveSecret, ac.UID)
}

// get reads a child from the cache, or from the API server when the cache
// does not have it yet: a revision just created may not be cached.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	return err
}

func ownerReference(ac *v1alpha1.AppConfig) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("AppConfig").
		WithName(ac.Name).
		WithUID(ac.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func hasRevision(st *v1alpha1.AppConfigStatus, name string) bool {
	return slices.ContainsFunc(st.Revisions, func(r v1alpha1.ConfigRevision) bool { return r.Name == name })
}

func revisionNames(st *v1alpha1.AppConfigStatus) []string {
	names := make([]string, len(st.Revisions))
	for i, r := range st.Revisions {
		names[i] = r.Name
	}
	return names
}

// prune deletes the revisions that are neither among the newest
// revisionHistoryLimit, nor current, latest, pinned, nor run by a consumer.
func (r *Reconciler) prune(ctx context.Context, ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus) error {
	keep := map[string]bool{st.CurrentRevision: true, st.LatestRevision: true, ac.Spec.Revision: true}
	for _, c := range st.Consumers {
		keep[c.Revision] = true
	}
	sort.SliceStable(st.Revisions, func(i, j int) bool { return st.Revisions[i].Created.After(st.Revisions[j].Created.Time) })
	for i, rev := range st.Revisions {
		if i < historyLimit(ac) {
			keep[rev.Name] = true
		}
	}
	st.Revisions = slices.DeleteFunc(st.Revisions, func(rev v1alpha1.ConfigRevision) bool { return !keep[rev.Name] })

	applier := apply.Applier{Client: r.Client, Reader: r.APIReader}
	sel := client.MatchingLabels{v1alpha1.LabelAppConfig: ac.Name}
	cms := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, cms, client.InNamespace(ac.Namespace), sel); err != nil {
		return err
	}
	for i := range cms.Items {
		if rev := cms.Items[i].Labels[v1alpha1.LabelRevision]; cms.Items[i].Name == ac.RevisionName(rev) && !keep[rev] {
			if err := applier.Delete(ctx, &cms.Items[i], ac.UID); err != nil {
				return err
			}
		}
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(ac.Namespace), sel); err != nil {
		return err
	}
	for i := range secrets.Items {
		if rev := secrets.Items[i].Labels[v1alpha1.LabelRevision]; secrets.Items[i].Name == ac.RevisionName(rev) && !keep[rev] {
			if err := applier.Delete(ctx, &secrets.Items[i], ac.UID); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeStatus patches the status subresource when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus) error {
	if equality.Semantic.DeepEqual(ac.Status, *st) {
		return nil
	}
	orig := ac.DeepCopy()
	ac.Status = *st
	if err := r.Client.Status().Patch(ctx, ac, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing status of AppConfig %s: %w", ac.Name, err)
	}
	return nil
}

// setTrouble reports a problem that stops the AppConfig before a rollout.
// Consumers keep running the revisions they run.
func (r *Reconciler) setTrouble(ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, t trouble) {
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != t.reason || c.Message != t.message {
		r.Recorder.Eventf(ac, nil, corev1.EventTypeWarning, t.reason, "Render", "%s", t.message)
	}
	st.Phase = v1alpha1.AppConfigDegraded
	if t.reason == v1alpha1.ReasonInvalidSpec {
		st.Phase = v1alpha1.AppConfigPending
	}
	conditions.Set(&st.Conditions, ac.Generation,
		conditions.False(t.reason, t.message),
		conditions.False(t.reason, "Nothing is rolled out until this is fixed"),
		conditions.True(t.reason, t.message))
}

// setRolloutStatus sets the phase and conditions from the consumers' states.
func setRolloutStatus(ac *v1alpha1.AppConfig, st *v1alpha1.AppConfigStatus, latest string, debouncing bool) {
	counts := map[v1alpha1.ConsumerState]int{}
	var failed, blocked []string
	for _, c := range st.Consumers {
		counts[c.State]++
		switch c.State {
		case v1alpha1.ConsumerFailed:
			failed = append(failed, fmt.Sprintf("%s %s: %s", c.Kind, c.Name, c.Message))
		case v1alpha1.ConsumerBlocked:
			blocked = append(blocked, fmt.Sprintf("%s %s: %s", c.Kind, c.Name, c.Message))
		}
	}
	moving := counts[v1alpha1.ConsumerPending] + counts[v1alpha1.ConsumerRollingOut]
	total := len(st.Consumers)
	upToDate := counts[v1alpha1.ConsumerUpToDate]

	degraded := conditions.False(v1alpha1.ReasonRolledOut, "No consumer's rollout failed")
	switch {
	case len(failed) > 0:
		degraded = conditions.True(v1alpha1.ReasonRolloutFailed, "Rollout failed: "+strings.Join(failed, "; "))
	case len(blocked) > 0:
		degraded = conditions.True(v1alpha1.ReasonConsumerBlocked, strings.Join(blocked, "; "))
	}
	progressing := conditions.False(v1alpha1.ReasonRolledOut, fmt.Sprintf("%d of %d consumers run revision %s or one equal in the keys they use", upToDate, total, st.CurrentRevision))
	switch {
	case moving > 0:
		progressing = conditions.True(v1alpha1.ReasonRollingOut, fmt.Sprintf("Rolling out revision %s: %d of %d consumers up to date, %d rolling out, %d waiting",
			st.CurrentRevision, upToDate, total, counts[v1alpha1.ConsumerRollingOut], counts[v1alpha1.ConsumerPending]))
	case debouncing:
		progressing = conditions.True(v1alpha1.ReasonDebouncing, fmt.Sprintf("Revision %s rolls out when the configuration has been unchanged for %s", latest, debounce(ac)))
	}
	ready := conditions.True(v1alpha1.ReasonRolledOut, fmt.Sprintf("Revision %s is rolled out to %d consumers", st.CurrentRevision, total))
	switch {
	case degraded.Status == metav1.ConditionTrue:
		ready = conditions.False(degraded.Reason, degraded.Message)
	case progressing.Status == metav1.ConditionTrue:
		ready = conditions.False(progressing.Reason, progressing.Message)
	case ac.Spec.Revision != "" && ac.Spec.Revision != latest:
		ready = conditions.True(v1alpha1.ReasonPinned, fmt.Sprintf("Pinned to revision %s, rolled out to %d consumers; the spec renders revision %s", st.CurrentRevision, total, latest))
	}
	conditions.Set(&st.Conditions, ac.Generation, ready, progressing, degraded)
	switch {
	case degraded.Status == metav1.ConditionTrue:
		st.Phase = v1alpha1.AppConfigDegraded
	case moving > 0:
		st.Phase = v1alpha1.AppConfigRollingOut
	case debouncing:
		st.Phase = v1alpha1.AppConfigPending
	default:
		st.Phase = v1alpha1.AppConfigReady
	}
}
