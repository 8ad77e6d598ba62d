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

package manager

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long the answers of the API server to /metrics's reviews are kept,
// as the API server's own delegated authentication keeps them: a
// Prometheus that scrapes every 15 s costs a TokenReview a minute and a
// SubjectAccessReview every five.
const (
	tokenTTL   = time.Minute
	allowTTL   = 5 * time.Minute
	denyTTL    = 30 * time.Second
	reviewWait = 10 * time.Second
	// maxRemembered bounds each cache: callers with ever new tokens make
	// it forget everything rather than grow.
	maxRemembered = 1024
)

// metricsAuth is the filter of /metrics when it is secure: the caller
// presents a bearer token that the API server authenticates (a
// TokenReview), and the user it belongs to must be allowed to get the
// non-resource URL asked for (a SubjectAccessReview), as for the API
// server's own /metrics. It answers 401 without a valid token and 403
// without the permission. controller-runtime's filter does the same
// through k8s.io/apiserver, whose authenticators, authorizers, CEL and
// tracing would more than double what this binary links; this one uses
// the two reviews only.
func metricsAuth(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return metricsAuthFilter(&reviewer{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews()}), nil
}

// metricsAuthFilter is metricsAuth's filter, asking a.
func metricsAuthFilter(a *reviewer) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			user, ok, err := a.authenticate(req)
			if err != nil {
				log.Error(err, "Authenticating a /metrics request")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			}
			if !ok {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			allowed, err := a.authorize(req, user)
			if err != nil {
				log.Error(err, "Authorizing a /metrics request", "user", user.Username)
				http.Error(w, "Authorization for user "+user.Username+" failed", http.StatusInternalServerError)
				return
			}
			if !allowed {
				http.Error(w, "Authorization denied for user "+user.Username, http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}
}

type reviewer struct {
	tokens interface {
		Create(context.Context, *authnv1.TokenReview, metav1.CreateOptions) (*authnv1.TokenReview, error)
	}
	access interface {
		Create(context.Context, *authzv1.SubjectAccessReview, metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
	}

	users     remembered[authnv1.UserInfo] // by the token's SHA-256; a zero Username is a refused token
	decisions remembered[bool]             // by user, groups, verb and path
}

// authenticate returns the user the request's bearer token belongs to, and
// false when it has none or the API server does not accept it.
func (a *reviewer) authenticate(req *http.Request) (authnv1.UserInfo, bool, error) {
	// The scheme is case-insensitive (RFC 9110), as the API server reads it.
	scheme, token, _ := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if token = strings.TrimSpace(token); !strings.EqualFold(scheme, "Bearer") || token == "" {
		return authnv1.UserInfo{}, false, nil
	}
	// The cache is keyed by the token's hash: the token itself is kept
	// nowhere.
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if user, ok := a.users.recall(key); ok {
		return user, user.Username != "", nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewWait)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, false, fmt.Errorf("TokenReview: %w", err)
	}
	user := authnv1.UserInfo{}
	if review.Status.Authenticated {
		user = review.Status.User
	}
	a.users.remember(key, user, tokenTTL)
	return user, user.Username != "", nil
}

// authorize reports whether user may use the request's method, as a verb,
// on its path.
func (a *reviewer) authorize(req *http.Request, user authnv1.UserInfo) (bool, error) {
	verb := strings.ToLower(req.Method)
	key := strings.Join([]string{user.Username, user.UID, strings.Join(user.Groups, ","), verb, req.URL.Path}, "\x00")
	if allowed, ok := a.decisions.recall(key); ok {
		return allowed, nil
	}
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewWait)
	defer cancel()
	review, err := a.access.Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: req.URL.Path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	a.decisions.remember(key, allowed, ttl)
	return allowed, nil
}

// remembered is a cache of answers that expire.
type remembered[T any] struct {
	mu sync.Mutex
	m  map[string]answer[T]
}

type answer[T any] struct {
	value   T
	expires time.Time
}

func (r *remembered[T]) recall(key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.m[key]
	if !ok || time.Now().After(got.expires) {
		var zero T
		return zero, false
	}
	return got.value, true
}

func (r *remembered[T]) remember(key string, value T, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRemembered {
		r.m = map[string]answer[T]{}
	}
	r.m[key] = answer[T]{value: value, expires: time.Now().Add(ttl)}
}
