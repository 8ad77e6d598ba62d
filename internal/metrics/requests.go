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

package metrics

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// APIRequests counts the operator's requests to the API server by verb
// (get, list, watch, create, update, patch, apply, delete), resource
// (with its subresource, e.g. webapps/status) and HTTP status code.
var APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "steward_api_requests_total",
	Help: "Requests Steward sent to the Kubernetes API server, by verb, resource and code.",
}, []string{"verb", "resource", "code"})

func init() {
	mustRegister(APIRequests)
}

// CountRequests wraps a client transport so that every request is counted
// in APIRequests. Use it with rest.Config.Wrap.
func CountRequests(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{next: rt}
}

type countingTransport struct {
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	verb, resource := Classify(req)
	APIRequests.WithLabelValues(verb, resource, code).Inc()
	return resp, err
}

// IsWrite reports whether a verb changes state on the server.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "apply", "delete", "deletecollection":
		return true
	}
	return false
}

// Classify names the Kubernetes verb and resource of an API request, from
// its method and path: /api/v1/namespaces/ns/services/name or
// /apis/group/version/[namespaces/ns/]resource[/name[/subresource]].
func Classify(req *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(req.Method), "nonresource"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // namespaced resource, not a namespace itself
	}
	if len(parts) == 0 {
		return strings.ToLower(req.Method), "discovery"
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "apply"
		}
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}
