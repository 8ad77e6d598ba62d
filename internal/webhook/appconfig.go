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

package webhook

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
)

// AppConfigPath is where the AppConfig validator is served, the path
// controller-runtime derives from the kind and the one the webhook
// configurations name.
const AppConfigPath = "/validate-steward-dev-v1alpha1-appconfig"

// maxErrors bounds the problems listed in one answer; the rest are counted.
const maxErrors = 20

// +kubebuilder:webhook:path=/validate-steward-dev-v1alpha1-appconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=steward.dev,resources=appconfigs,verbs=create;update,versions=v1alpha1,name=vappconfig.steward.dev,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=steward-webhook,serviceNamespace=steward-system

// appConfigValidator rejects an AppConfig whose data the reconciler could
// not render: an unknown reference, a reference cycle, an invalid key, an
// unterminated "${", data over the size limit, or a reference to a
// secretData key. CEL validation in the CRD cannot find cycles, hence the
// webhook.
var appConfigValidator = specValidator[*v1alpha1.AppConfig]{
	kind:     "AppConfig",
	problems: Problems,
	spec:     func(c *v1alpha1.AppConfig) any { return c.Spec },
}

// SetupAppConfigWebhook registers the validator on the manager's webhook
// server at AppConfigPath.
func SetupAppConfigWebhook(mgr ctrl.Manager) error {
	return register(mgr, &v1alpha1.AppConfig{}, AppConfigPath, appConfigValidator)
}

// Problems lists what is wrong with an AppConfig's data and overrides, as
// appconfig.Validate finds it, with a reference to a secretData key named
// as such. The overrides of the other environments are checked as if the
// AppConfig rendered them, so that a configuration promoted from dev to
// prod does not fail there for the first time. Each error's field is
// spec.data or spec.overrides.<environment> (spec for the whole spec), and
// its detail names the key and position, e.g.
//
//	spec.data: Invalid value: key "A", position 1: reference cycle A -> B -> A
func Problems(obj *v1alpha1.AppConfig) field.ErrorList {
	return problems(obj, field.NewPath("spec"))
}

// problems is Problems with the AppConfig's spec at base, e.g. spec.config
// for the AppConfig an AppStack renders.
func problems(obj *v1alpha1.AppConfig, base *field.Path) field.ErrorList {
	spec := appconfig.Spec{Data: obj.Spec.Data, Overrides: obj.Spec.Overrides}
	vars := appconfig.Vars{Namespace: obj.Namespace, Application: obj.Spec.Application}
	found := appconfig.Validate(spec, obj.Spec.Environment, vars)
	for _, env := range appconfig.Environments {
		if env == obj.Spec.Environment || spec.Overrides[env] == nil {
			continue
		}
		// Only what the overrides add: the data's own problems are
		// already listed, and would be again for every environment.
		for _, fe := range appconfig.Validate(spec, env, vars) {
			if fe.Field == "overrides."+env && !slices.Contains(found, fe) {
				found = append(found, fe)
			}
		}
	}
	slices.SortStableFunc(found, func(a, b appconfig.FieldError) int {
		return cmp.Or(cmp.Compare(fieldRank(a.Field), fieldRank(b.Field)), cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Position, b.Position))
	})
	var errs field.ErrorList
	for i, fe := range found {
		if i == maxErrors {
			errs = append(errs, field.Invalid(base, field.OmitValueType{},
				fmt.Sprintf("and %d more problems", len(found)-maxErrors)))
			break
		}
		path := base
		for _, f := range strings.Split(fe.Field, ".") {
			if f != "" {
				path = path.Child(f)
			}
		}
		if name, ok := secretReference(obj, fe); ok {
			errs = append(errs, field.Forbidden(path, detail(fe,
				fmt.Sprintf("${%s} refers to a secretData key: secret values are never rendered into the ConfigMap, so data cannot refer to them", name))))
			continue
		}
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, detail(fe, fe.Message)))
	}
	return errs
}

// fieldRank orders the whole spec first, then data, then the overrides.
func fieldRank(f string) int {
	switch f {
	case "":
		return 0
	case "data":
		return 1
	}
	return 2
}

// detail formats a problem without its field, which the error's path names:
// `key "A", position 1: reference cycle A -> B -> A`.
func detail(fe appconfig.FieldError, msg string) string {
	var b strings.Builder
	if fe.Key != "" || fe.Field == "data" {
		fmt.Fprintf(&b, "key %q", fe.Key)
		if fe.Position > 0 {
			fmt.Fprintf(&b, ", position %d", fe.Position)
		}
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

// secretReference tells whether fe is an unknown reference to a key of
// spec.secretData, and returns that key. appconfig.Validate knows nothing of
// secret keys, so it reports such a reference as unknown.
func secretReference(obj *v1alpha1.AppConfig, fe appconfig.FieldError) (string, bool) {
	if !strings.HasPrefix(fe.Message, "unknown reference ") || fe.Position < 1 {
		return "", false
	}
	values := obj.Spec.Data
	if env, ok := strings.CutPrefix(fe.Field, "overrides."); ok {
		values = obj.Spec.Overrides[env]
	}
	value, ok := values[fe.Key]
	if !ok || fe.Position > len(value) {
		return "", false
	}
	ref, ok := strings.CutPrefix(value[fe.Position-1:], "${")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(ref, "}")
	if !ok {
		return "", false
	}
	_, secret := obj.Spec.SecretData[name]
	return name, secret
}
