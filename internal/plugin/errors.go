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
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Readable errors. The API server's own say what failed in its terms
// ("databases.steward.dev \"x\" is forbidden: User \"bob\" cannot get
// resource ..."); these say it in the command's: which object was not
// found where, which verb on which resource was refused, and that the CRDs
// are missing when the cluster does not know Steward's kinds.

// core names a built-in resource of the core group, e.g. pods.
func core(resource string) schema.GroupResource { return schema.GroupResource{Resource: resource} }

// forbiddenUser finds the user a Forbidden error names, forbiddenVerb the
// verb it refused (the request's own: an exec over WebSocket is a get).
var (
	forbiddenUser = regexp.MustCompile(`User "([^"]*)"`)
	forbiddenVerb = regexp.MustCompile(`cannot (\S+) resource`)
)

// apiError makes err, from verb on an object of resource named what (e.g.
// "database", "pod") in namespace ns, readable. name is empty for a list.
func apiError(err error, verb string, resource schema.GroupResource, what, ns, name string) error {
	where := ""
	if ns != "" {
		where = fmt.Sprintf(" in namespace %q", ns)
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) && name != "":
		return &readableError{msg: fmt.Sprintf("%s %q not found%s", what, name, where), err: err}
	case isForbidden(err):
		if m := forbiddenVerb.FindStringSubmatch(err.Error()); m != nil {
			verb = m[1]
		}
		user := ""
		if m := forbiddenUser.FindStringSubmatch(err.Error()); m != nil {
			user = fmt.Sprintf(" (user %q)", m[1])
		}
		object := ""
		if name != "" {
			object = fmt.Sprintf(" %q", name)
		}
		return &readableError{msg: fmt.Sprintf("forbidden: you may not %s %s%s%s%s (RBAC needs the verb %q on %q)",
			verb, resource, object, where, user, verb, resource), err: err}
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && resource.Group != "":
		return fmt.Errorf("the cluster does not know %s: are Steward's CRDs installed? (%w)", resource, err)
	}
	object := resource.String()
	if name != "" {
		object = fmt.Sprintf("%s %q", what, name)
	}
	return fmt.Errorf("%s %s%s: %w", verb, object, where, err)
}

// readableError says in the command's terms what the API server refused;
// it wraps the API server's error, so that apierrors.IsNotFound and
// IsForbidden still tell what it is.
type readableError struct {
	msg string
	err error
}

func (e *readableError) Error() string { return e.msg }

func (e *readableError) Unwrap() error { return e.err }

// isForbidden reports whether err is the API server's refusal, also of an
// exec or a port forward, which comes as the failed upgrade's message.
func isForbidden(err error) bool {
	return apierrors.IsForbidden(err) || strings.Contains(err.Error(), " is forbidden: User ")
}

// isNotFound reports whether err is an object that does not exist.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
