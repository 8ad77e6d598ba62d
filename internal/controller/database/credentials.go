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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/apply"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/password"
)

// reconcileCredentials applies the owner's credentials Secret and the
// superuser Secret. A password is generated once, when its Secret does not
// exist, and read back from the Secret ever after: a reconcile, an operator
// restart or a re-created Database keeps it. A Secret left by a deleted
// Database of the same name (deletion policy Retain) is adopted.
//
// The two Secrets are read, and then applied, at the same time: a new
// Database's first reconcile waits for each step once, not twice.
func (r *Reconciler) reconcileCredentials(ctx context.Context, db *v1alpha1.Database, applier apply.Applier) (*conditions.Problem, error) {
	var owner, super *corev1.Secret
	err := apply.Together(
		func() (err error) { owner, err = r.existingSecret(ctx, db, db.CredentialsName()); return err },
		func() (err error) { super, err = r.existingSecret(ctx, db, db.SuperuserName()); return err },
	)
	if err != nil {
		return conflictProblem(err)
	}

	username, pass := db.Spec.Owner, string(owner.Data["password"])
	if ref := db.Spec.CredentialsSecretRef; ref != nil {
		var p *conditions.Problem
		if username, pass, p, err = r.userCredentials(ctx, db, ref.Name); p != nil || err != nil {
			return p, err
		}
	}
	if pass == "" {
		pass = password.New()
	}
	superPassword := string(super.Data["password"])
	if superPassword == "" {
		superPassword = password.New()
	}
	replPassword := string(super.Data["replication-password"])
	if replPassword == "" {
		replPassword = password.New()
	}

	secrets := []struct {
		live *corev1.Secret
		data map[string][]byte
	}{
		{owner, CredentialsData(db, username, pass)},
		{super, SuperuserData(db, superPassword, replPassword)},
	}
	fns := make([]func() error, len(secrets))
	for i, s := range secrets {
		fns[i] = func() error {
			adopting := s.live.UID != "" && !isControlledBy(s.live, db)
			err := applier.Apply(ctx, Secret(db, s.live.Name, s.data), s.live, db.UID)
			if err == nil && adopting {
				r.Recorder.Eventf(db, s.live, corev1.EventTypeNormal, v1alpha1.EventAdopted, "Adopt",
					"Adopted Secret %s kept from an earlier Database of this name", s.live.Name)
			}
			return err
		}
	}
	return conflictProblem(apply.Together(fns...))
}

// existingSecret reads a credentials Secret, from the cache or, when the
// cache does not have it, from the API server: a password must never be
// generated anew because the cache lags. A Secret of that name that belongs
// to something else is an apply.Conflict. A missing Secret is returned empty,
// with its name set.
func (r *Reconciler) existingSecret(ctx context.Context, db *v1alpha1.Database, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: db.Namespace, Name: name}
	err := r.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, s)
	}
	switch {
	case apierrors.IsNotFound(err):
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace}}, nil
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	if isControlledBy(s, db) {
		return s, nil
	}
	// Left by an earlier Database of this name: labelled as its, and
	// released by the finalizer (no controller).
	if s.Labels[v1alpha1.LabelDatabase] == db.Name && metav1.GetControllerOf(s) == nil {
		return s, nil
	}
	return nil, &apply.Conflict{Kind: "Secret", Name: name}
}

// userCredentials reads the owner's password from the Secret the user
// named. A username there must be spec.owner: the owner's name is checked at
// admission and cannot change. Neither value is ever reported.
func (r *Reconciler) userCredentials(ctx context.Context, db *v1alpha1.Database, name string) (string, string, *conditions.Problem, error) {
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return "", "", &conditions.Problem{Reason: v1alpha1.ReasonCredentialsNotFound,
			Message: fmt.Sprintf("Secret %s named by spec.credentialsSecretRef does not exist", name)}, nil
	case err != nil:
		return "", "", nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	user, pass := string(s.Data["username"]), string(s.Data["password"])
	if pass == "" {
		return "", "", &conditions.Problem{Reason: v1alpha1.ReasonCredentialsNotFound,
			Message: fmt.Sprintf("Secret %s named by spec.credentialsSecretRef needs the key password", name)}, nil
	}
	if user != "" && user != db.Spec.Owner {
		return "", "", &conditions.Problem{Reason: v1alpha1.ReasonCredentialsNotFound, Message: fmt.Sprintf(
			"Secret %s named by spec.credentialsSecretRef has a username other than spec.owner %s; remove it or make them equal",
			name, db.Spec.Owner)}, nil
	}
	return db.Spec.Owner, pass, nil, nil
}

func conflictProblem(err error) (*conditions.Problem, error) {
	if reason, ok := apply.UserError(err); ok {
		return &conditions.Problem{Reason: reason, Message: err.Error()}, nil
	}
	return nil, err
}

func isControlledBy(obj metav1.Object, db *v1alpha1.Database) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == db.UID
}
