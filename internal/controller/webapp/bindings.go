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

package webapp

import (
	"context"
	"fmt"
	"net"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/conditions"
	"github.com/steward-dev/steward/internal/fieldindex"
)

// Field indexes on WebApps, so a Database or Cache event finds the WebApps
// bound to it.
const (
	databaseRefIndex = "spec.database.ref"
	cacheRefIndex    = "spec.cache.ref"
)

// databaseEnv pairs each variable of a Database binding, without its prefix,
// with its key in the Database's credentials Secret.
var databaseEnv = []struct{ name, key string }{
	{"DATABASE_URL", "uri"},
	{"DB_HOST", "host"},
	{"DB_PORT", "port"},
	{"DB_USER", "username"},
	{"DB_PASSWORD", "password"},
	{"DB_NAME", "database"},
}

// cacheSecretEnv pairs each variable of a binding to a redis Cache that
// asks for a password with its key in the Cache's credentials Secret.
var cacheSecretEnv = []struct{ name, key string }{
	{"CACHE_PASSWORD", "password"},
	{"CACHE_URL", "uri"},
}

// Bindings are the objects a WebApp's bindings resolve to.
type Bindings struct {
	// Cache is the Cache spec.cache names, or nil.
	Cache *v1alpha1.Cache
	// Config are spec.config's uses, resolved to the revisions they run.
	Config []configUse
}

// bindingEnv lists the variables the WebApp's bindings inject. Database
// values are secretKeyRefs to the credentials Secret, never the values. A
// variable spec.env also sets is left out: spec.env wins.
func bindingEnv(app *v1alpha1.WebApp, b Bindings) []*corev1ac.EnvVarApplyConfiguration {
	own := map[string]bool{}
	for _, e := range app.Spec.Env {
		own[e.Name] = true
	}
	var env []*corev1ac.EnvVarApplyConfiguration
	add := func(e *corev1ac.EnvVarApplyConfiguration) {
		if !own[*e.Name] {
			env = append(env, e)
		}
	}
	if bind := app.Spec.Database; bind != nil {
		secret := credentialsName(app)
		for _, v := range databaseEnv {
			add(corev1ac.EnvVar().WithName(bind.Prefix + v.name).
				WithValueFrom(corev1ac.EnvVarSource().
					WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(v.key))))
		}
	}
	if bind := app.Spec.Cache; bind != nil && b.Cache != nil {
		host, port := cacheAddress(b.Cache)
		add(corev1ac.EnvVar().WithName(bind.Prefix + "CACHE_HOST").WithValue(host))
		add(corev1ac.EnvVar().WithName(bind.Prefix + "CACHE_PORT").WithValue(port))
		if b.Cache.RedisAuthEnabled() {
			secret := b.Cache.CredentialsName()
			for _, v := range cacheSecretEnv {
				add(corev1ac.EnvVar().WithName(bind.Prefix + v.name).
					WithValueFrom(corev1ac.EnvVarSource().
						WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(v.key))))
			}
		}
	}
	return env
}

// credentialsName is the credentials Secret of the WebApp's Database.
func credentialsName(app *v1alpha1.WebApp) string {
	return v1alpha1.DatabaseCredentialsName(app.Spec.Database.Ref)
}

// cacheAddress is the host and port clients of the Cache connect to.
func cacheAddress(c *v1alpha1.Cache) (host, port string) {
	endpoint := c.Endpoint()
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		panic(fmt.Sprintf("cache endpoint %q: %v", endpoint, err)) // Endpoint always has a port
	}
	return host, port
}

// resolveBindings reads the objects the WebApp binds to from the cache. It
// returns what the WebApp waits for when one does not exist, or is not
// Ready while the Deployment does not carry its binding yet. A Deployment
// already bound keeps running and being reconciled while its Database or
// Cache is briefly not Ready, for example during its own rollout.
func (r *Reconciler) resolveBindings(ctx context.Context, app *v1alpha1.WebApp) (Bindings, *conditions.Problem, error) {
	var b Bindings
	if app.Spec.Database == nil && app.Spec.Cache == nil {
		return b, nil, nil
	}
	dep := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(app), dep); client.IgnoreNotFound(err) != nil {
		return b, nil, fmt.Errorf("reading Deployment %s: %w", app.Name, err)
	}

	if bind := app.Spec.Database; bind != nil {
		db := &v1alpha1.Database{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: bind.Ref}, db)
		switch {
		case apierrors.IsNotFound(err):
			return b, &conditions.Problem{
				Reason:  v1alpha1.ReasonDatabaseNotFound,
				Message: fmt.Sprintf("Database %s does not exist", bind.Ref),
			}, nil
		case err != nil:
			return b, nil, fmt.Errorf("reading Database %s: %w", bind.Ref, err)
		}
		bound := hasEnv(dep, bind.Prefix+"DATABASE_URL", func(e corev1.EnvVar) bool {
			return e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == credentialsName(app)
		})
		if why, ok := notReady(db.Status.Conditions, db.Generation, db.Status.ObservedGeneration); !ok && !bound {
			return b, &conditions.Problem{
				Reason:  v1alpha1.ReasonWaitingForDatabase,
				Message: fmt.Sprintf("Waiting for Database %s to be Ready (%s)", bind.Ref, why),
			}, nil
		}
	}

	if bind := app.Spec.Cache; bind != nil {
		c := &v1alpha1.Cache{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: bind.Ref}, c)
		switch {
		case apierrors.IsNotFound(err):
			return b, &conditions.Problem{
				Reason:  v1alpha1.ReasonCacheNotFound,
				Message: fmt.Sprintf("Cache %s does not exist", bind.Ref),
			}, nil
		case err != nil:
			return b, nil, fmt.Errorf("reading Cache %s: %w", bind.Ref, err)
		}
		host, _ := cacheAddress(c)
		bound := hasEnv(dep, bind.Prefix+"CACHE_HOST", func(e corev1.EnvVar) bool { return e.Value == host })
		if why, ok := notReady(c.Status.Conditions, c.Generation, c.Status.ObservedGeneration); !ok && !bound {
			return b, &conditions.Problem{
				Reason:  v1alpha1.ReasonWaitingForCache,
				Message: fmt.Sprintf("Waiting for Cache %s to be Ready (%s)", bind.Ref, why),
			}, nil
		}
		b.Cache = c
	}
	return b, nil, nil
}

// notReady says why an object is not Ready, or reports true when it is:
// its Ready condition is True for its current generation.
func notReady(conds []metav1.Condition, generation, observed int64) (string, bool) {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	switch {
	case c == nil:
		return "no Ready condition yet", false
	case c.Status != metav1.ConditionTrue:
		return fmt.Sprintf("Ready is %s: %s", c.Status, c.Reason), false
	case observed != generation:
		return "its status is not up to date with its spec", false
	}
	return "", true
}

// hasEnv reports whether the Deployment's app container has the variable
// and it passes check.
func hasEnv(dep *appsv1.Deployment, name string, check func(corev1.EnvVar) bool) bool {
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return check(e)
			}
		}
	}
	return false
}

// databaseBindings and cacheBindings are the field indexes of WebApps by
// the Database and the Cache they bind, which the Database and Cache
// watches use.
func databaseBindings(indexer client.FieldIndexer) *fieldindex.Index {
	return fieldindex.New(indexer, &v1alpha1.WebApp{}, databaseRefIndex, func(o client.Object) []string {
		if b := o.(*v1alpha1.WebApp).Spec.Database; b != nil {
			return []string{b.Ref}
		}
		return nil
	})
}

func cacheBindings(indexer client.FieldIndexer) *fieldindex.Index {
	return fieldindex.New(indexer, &v1alpha1.WebApp{}, cacheRefIndex, func(o client.Object) []string {
		if b := o.(*v1alpha1.WebApp).Spec.Cache; b != nil {
			return []string{b.Ref}
		}
		return nil
	})
}

// boundWebApps maps a Database or Cache to the WebApps bound to it.
func boundWebApps(reader client.Reader, index *fieldindex.Index) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &v1alpha1.WebAppList{}
		if err := index.List(ctx, reader, list, obj.GetNamespace(), obj.GetName()); err != nil {
			log.FromContext(ctx).Error(err, "Listing bound WebApps", "index", index.Field(), "name", obj.GetName())
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

// readinessChanged lets through the events that can change what a bound
// WebApp does: creation, deletion, and a change of the Ready condition or
// of the generation.
func readinessChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldGen, newGen := e.ObjectOld.GetGeneration(), e.ObjectNew.GetGeneration()
			return oldGen != newGen || readyState(e.ObjectOld) != readyState(e.ObjectNew)
		},
	}
}

// readyState summarizes a Database's or Cache's readiness for readinessChanged.
func readyState(obj client.Object) string {
	var conds []metav1.Condition
	var gen, observed int64
	switch o := obj.(type) {
	case *v1alpha1.Database:
		conds, gen, observed = o.Status.Conditions, o.Generation, o.Status.ObservedGeneration
	case *v1alpha1.Cache:
		conds, gen, observed = o.Status.Conditions, o.Generation, o.Status.ObservedGeneration
	}
	why, ok := notReady(conds, gen, observed)
	return strconv.FormatBool(ok) + why
}
