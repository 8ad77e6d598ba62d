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

package appconfig

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
)

// observed is what one reconcile read of an AppConfig's inputs, its
// revisions and its consumers.
type observed struct {
	// secrets are the values spec.secretData names, by key.
	secrets map[string][]byte
	// problem is an input the user must fix: a Secret or key secretData
	// names that does not exist, or a hash-key Secret the AppConfig does
	// not control. Nothing else is read then.
	problem *conditions.Problem
	// hashKey is the key of the secret values' tokens, when there are
	// secret values. When newHashKey, it is a new random key whose Secret
	// does not exist yet.
	hashKey    []byte
	newHashKey bool

	// revisions are the revisions the status and spec.revision name, by
	// name; one whose ConfigMap does not exist is absent.
	revisions map[string]appconfig.Revision
	// revisionSecrets are the secret values of the current and the pinned
	// revision, by revision, when they have any.
	revisionSecrets map[string]map[string][]byte
	// configMaps and secretObjects are the AppConfig's ConfigMaps and
	// Secrets in the cache: its revisions, "<application>-config" and its
	// hash key.
	configMaps    []corev1.ConfigMap
	secretObjects []corev1.Secret
	// config and configSecret are the live "<application>-config"
	// ConfigMap and Secret, empty (no UID) when they do not exist; the
	// Secret is read from the cache only.
	config       *corev1.ConfigMap
	configSecret *corev1.Secret

	// consumers are the workloads that use the AppConfig, with the state
	// of their rollouts.
	consumers []consumer
}

// observe reads what the plan needs: the AppConfig's inputs, then, unless
// an input is a problem, its revisions and its consumers.
func (r *Reconciler) observe(ctx context.Context, ac *v1alpha1.AppConfig) (observed, error) {
	obs := observed{}
	if err := r.observeInputs(ctx, ac, &obs); err != nil || obs.problem != nil {
		return obs, err
	}
	if err := r.observeRevisions(ctx, ac, &obs); err != nil {
		return obs, err
	}
	var err error
	obs.consumers, err = r.consumers(ctx, ac)
	return obs, err
}

// observeInputs reads the values spec.secretData names and, when there
// are any, the key of their tokens.
func (r *Reconciler) observeInputs(ctx context.Context, ac *v1alpha1.AppConfig, obs *observed) error {
	var err error
	obs.secrets, obs.problem, err = r.readSecrets(ctx, ac)
	if err != nil || obs.problem != nil || len(obs.secrets) == 0 {
		return err
	}
	return r.readHashKey(ctx, ac, obs)
}

// readSecrets reads the values secretData names. A missing Secret or key is
// a problem that names them, never a value.
func (r *Reconciler) readSecrets(ctx context.Context, ac *v1alpha1.AppConfig) (map[string][]byte, *conditions.Problem, error) {
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
				return nil, &conditions.Problem{Reason: v1alpha1.ReasonSecretNotFound,
					Message: fmt.Sprintf("secretData %s: Secret %s does not exist", key, ref.SecretName)}, nil
			case err != nil:
				return nil, nil, fmt.Errorf("reading Secret %s for secretData %s: %w", ref.SecretName, key, err)
			}
			read[ref.SecretName] = s
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return nil, &conditions.Problem{Reason: v1alpha1.ReasonSecretNotFound,
				Message: fmt.Sprintf("secretData %s: Secret %s has no key %s", key, ref.SecretName, ref.Key)}, nil
		}
		out[key] = v
	}
	return out, nil, nil
}

// readHashKey reads the AppConfig's token key, or makes a new random one
// when its Secret does not exist; the plan creates that Secret. A Secret
// of its name that the AppConfig does not control, or that holds no key, is
// a name conflict.
func (r *Reconciler) readHashKey(ctx context.Context, ac *v1alpha1.AppConfig, obs *observed) error {
	s := &corev1.Secret{}
	err := r.get(ctx, client.ObjectKey{Namespace: ac.Namespace, Name: ac.HashKeyName()}, s)
	switch {
	case err == nil && (!metav1.IsControlledBy(s, ac) || len(s.Data[hashKeyField]) == 0):
		conflict := &apply.Conflict{Kind: "Secret", Name: ac.HashKeyName()}
		obs.problem = &conditions.Problem{Reason: v1alpha1.ReasonNameConflict, Message: conflict.Error()}
		return nil
	case err == nil:
		obs.hashKey = s.Data[hashKeyField]
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Secret %s: %w", ac.HashKeyName(), err)
	}
	obs.hashKey = make([]byte, 32)
	if _, err := rand.Read(obs.hashKey); err != nil {
		return fmt.Errorf("making the hash key of AppConfig %s: %w", ac.Name, err)
	}
	obs.newHashKey = true
	return nil
}

// observeRevisions lists the AppConfig's ConfigMaps and Secrets, and reads
// the revisions the status and spec.revision name, with the secret values
// of those that can become current.
func (r *Reconciler) observeRevisions(ctx context.Context, ac *v1alpha1.AppConfig, obs *observed) error {
	in, sel := client.InNamespace(ac.Namespace), client.MatchingLabels{v1alpha1.LabelAppConfig: ac.Name}
	cms := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, cms, in, sel); err != nil {
		return fmt.Errorf("listing the ConfigMaps of AppConfig %s: %w", ac.Name, err)
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, in, sel); err != nil {
		return fmt.Errorf("listing the Secrets of AppConfig %s: %w", ac.Name, err)
	}
	obs.configMaps, obs.secretObjects = cms.Items, secrets.Items
	// "<application>-config" exists once the AppConfig rendered; its
	// Secret only while the current revision has secret values.
	config, err := lookUp(ctx, r, obs.configMaps, client.ObjectKey{Namespace: ac.Namespace, Name: ac.ConfigName()})
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", ac.ConfigName(), err)
	}
	obs.config = orEmpty(config)
	obs.configSecret = orEmpty(find(obs.secretObjects, ac.ConfigName()))

	obs.revisions = map[string]appconfig.Revision{}
	obs.revisionSecrets = map[string]map[string][]byte{}
	for _, name := range namedRevisions(ac) {
		key := client.ObjectKey{Namespace: ac.Namespace, Name: ac.RevisionName(name)}
		cm, err := lookUp(ctx, r, obs.configMaps, key)
		if err != nil {
			return fmt.Errorf("reading revision %s: %w", name, err)
		}
		if cm == nil {
			continue
		}
		rev := appconfig.ReadRevision(cm)
		obs.revisions[name] = rev
		if len(rev.SecretKeys) == 0 || (name != ac.Status.CurrentRevision && name != ac.Spec.Revision) {
			continue
		}
		s, err := lookUp(ctx, r, obs.secretObjects, key)
		if err != nil {
			return fmt.Errorf("reading the Secret of revision %s: %w", name, err)
		}
		if s != nil {
			obs.revisionSecrets[name] = s.Data
		}
	}
	return nil
}

// namedRevisions are the revisions the AppConfig's status and
// spec.revision name: current, pinned, and those its consumers run.
func namedRevisions(ac *v1alpha1.AppConfig) []string {
	names := []string{ac.Status.CurrentRevision, ac.Spec.Revision}
	for _, c := range ac.Status.Consumers {
		names = append(names, c.Revision)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	slices.Sort(names)
	return slices.Compact(names)
}

// object is a pointer to a Kubernetes object type T.
type object[T any] interface {
	*T
	client.Object
}

// find returns the item of items named name, or nil.
func find[T any, P object[T]](items []T, name string) P {
	for i := range items {
		if p := P(&items[i]); p.GetName() == name {
			return p
		}
	}
	return nil
}

// orEmpty returns obj, or an empty object of its type when it is nil.
func orEmpty[T any, P object[T]](obj P) P {
	if obj == nil {
		return P(new(T))
	}
	return obj
}

// lookUp returns the object of key among the listed ones, or reads it: a
// revision just created may not be in the cache yet. It returns nil when
// the object does not exist.
func lookUp[T any, P object[T]](ctx context.Context, r *Reconciler, listed []T, key client.ObjectKey) (P, error) {
	if p := find[T, P](listed, key.Name); p != nil {
		return p, nil
	}
	p := P(new(T))
	if err := r.get(ctx, key, p); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return p, nil
}
