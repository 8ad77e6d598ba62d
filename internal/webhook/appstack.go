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
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// AppStackPath is where the AppStack validator is served, the path
// controller-runtime derives from the kind and the one the webhook
// configurations name.
const AppStackPath = "/validate-steward-dev-v1alpha1-appstack"

// +kubebuilder:webhook:path=/validate-steward-dev-v1alpha1-appstack,mutating=false,failurePolicy=fail,sideEffects=None,groups=steward.dev,resources=appstacks,verbs=create;update,versions=v1alpha1,name=vappstack.steward.dev,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=steward-webhook,serviceNamespace=steward-system

// appStackValidator rejects an AppStack whose components depend on each
// other in a cycle, depend on a component the stack lacks, whose
// databases' parameters the Database webhook would reject, or whose
// spec.config data the AppConfig it renders would reject. CEL validation in
// the CRD checks most references but cannot find cycles, hence the webhook.
var appStackValidator = specValidator[*v1alpha1.AppStack]{
	kind:     "AppStack",
	problems: StackProblems,
	spec:     func(s *v1alpha1.AppStack) any { return s.Spec },
}

// SetupAppStackWebhook registers the validator on the manager's webhook
// server at AppStackPath.
func SetupAppStackWebhook(mgr ctrl.Manager) error {
	return register(mgr, &v1alpha1.AppStack{}, AppStackPath, appStackValidator)
}

// StackProblems lists what is wrong with an AppStack: a dependency cycle or
// a dependency on a component the stack lacks, as appstack.NewGraph finds
// it; then the parameter values each Database's engine would refuse, as
// DatabaseProblems finds them for a Database, under
// spec.databases[<name>].parameters; then the problems of the AppConfig
// spec.config renders, as Problems finds them for an AppConfig, under
// spec.config. For example
//
//	spec.apps[backend].dependsOn: Invalid value: "frontend": dependency cycle: backend -> frontend -> backend
//	spec.databases[db].parameters.work_mem: Invalid value: "lots" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)
//	spec.config.data: Invalid value: key "URL", position 8: unknown reference ${HOSTT}
func StackProblems(obj *v1alpha1.AppStack) field.ErrorList {
	var errs field.ErrorList
	if _, err := appstack.NewGraph(&obj.Spec); err != nil {
		errs = append(errs, graphProblem(&obj.Spec, err))
	}
	d := appstack.Render(obj)
	for _, db := range obj.Spec.Databases {
		spec := d.Databases[db.Name]
		path := field.NewPath("spec", "databases").Key(db.Name).Child("parameters")
		errs = append(errs, parameterProblems(spec.Engine, spec.Parameters, path)...)
	}
	if d.Config != nil {
		cfg := &v1alpha1.AppConfig{Spec: *d.Config}
		cfg.Namespace, cfg.Name = obj.Namespace, appstack.ObjectName(obj, appstack.ConfigComponent)
		errs = append(errs, problems(cfg, field.NewPath("spec", "config"))...)
	}
	return errs
}

// graphProblem turns an error of appstack.NewGraph into a field error on
// the most precise field: the reference that closes a cycle or names an
// unknown component.
func graphProblem(spec *v1alpha1.AppStackSpec, err error) *field.Error {
	var cycle *appstack.CycleError
	if errors.As(err, &cycle) && len(cycle.Cycle) > 1 {
		from, to := cycle.Cycle[0], cycle.Cycle[1]
		return field.Invalid(referencePath(spec, from, to), to, err.Error())
	}
	var unknown *appstack.UnknownError
	if errors.As(err, &unknown) {
		path := field.NewPath("spec")
		for _, f := range strings.Split(unknown.Field, ".") {
			path = path.Child(f)
		}
		// The path names the field; the detail need not repeat it.
		return field.Invalid(path, unknown.Name, strings.TrimPrefix(err.Error(), unknown.Field+": "))
	}
	return field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())
}

// referencePath is the field through which component from depends on
// component to: its dependsOn, or an app's database or cache binding, or
// the app itself for its implied dependency on the configuration.
func referencePath(spec *v1alpha1.AppStackSpec, from, to string) *field.Path {
	root := field.NewPath("spec")
	for _, d := range spec.Databases {
		if d.Name == from {
			return root.Child("databases").Key(from).Child("dependsOn")
		}
	}
	for _, c := range spec.Caches {
		if c.Name == from {
			return root.Child("caches").Key(from).Child("dependsOn")
		}
	}
	for _, a := range spec.Apps {
		if a.Name != from {
			continue
		}
		app := root.Child("apps").Key(from)
		switch {
		case slices.Contains(a.DependsOn, to):
			return app.Child("dependsOn")
		case a.Database != nil && a.Database.Ref == to:
			return app.Child("database", "ref")
		case a.Cache != nil && a.Cache.Ref == to:
			return app.Child("cache", "ref")
		}
		return app
	}
	return root
}
