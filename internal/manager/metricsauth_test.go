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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenReviews accepts one token, as the API server would.
type tokenReviews struct {
	token string
	calls int
}

func (f *tokenReviews) Create(_ context.Context, r *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	f.calls++
	if r.Spec.Token == f.token {
		r.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}}}
	}
	return r, nil
}

// accessReviews allows one user to get /metrics.
type accessReviews struct {
	calls int
	last  authzv1.SubjectAccessReviewSpec
}

func (f *accessReviews) Create(_ context.Context, r *authzv1.SubjectAccessReview, _ metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	f.calls++
	f.last = r.Spec
	n := r.Spec.NonResourceAttributes
	r.Status.Allowed = r.Spec.User == "system:serviceaccount:monitoring:prometheus" && n != nil && n.Path == "/metrics" && n.Verb == "get"
	return r, nil
}

// TestMetricsAuth checks the answers of the secure /metrics filter and
// that it asks the API server once per token and decision, not once per
// scrape. The e2e suite checks the same answers against a real API server.
func TestMetricsAuth(t *testing.T) {
	tokens, access := &tokenReviews{token: "scraper-token"}, &accessReviews{}
	a := &reviewer{tokens: tokens, access: access}
	filter, err := metricsAuthFilter(a)(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, auth string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		filter.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		path, auth string
		code       int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Basic c2NyYXBlcjp4", http.StatusUnauthorized},
		{"/metrics", "Bearer other-token", http.StatusUnauthorized},
		{"/metrics", "Bearer scraper-token", http.StatusOK},
		{"/metrics", "bearer scraper-token", http.StatusOK},
		{"/metrics", "Bearer ", http.StatusUnauthorized},
		{"/debug", "Bearer scraper-token", http.StatusForbidden},
		{"/metrics", "Bearer other-token", http.StatusUnauthorized},
	} {
		if code, body := get(tc.path, tc.auth); code != tc.code {
			t.Errorf("%s with %q: %d %q, want %d", tc.path, tc.auth, code, body, tc.code)
		}
	}
	// Two distinct tokens, each reviewed once; two decisions.
	if tokens.calls != 2 || access.calls != 2 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews, want 2 and 2", tokens.calls, access.calls)
	}
	if access.last.User != "system:serviceaccount:monitoring:prometheus" || len(access.last.Groups) != 1 {
		t.Errorf("the SubjectAccessReview asked for %+v, want the token's user and groups", access.last)
	}
	for k := range a.users.m {
		if strings.Contains(k, "scraper-token") {
			t.Error("the token itself is kept in the cache")
		}
	}
}
