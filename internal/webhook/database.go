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
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/engine"

	// The engines register themselves; the checks need them.
	_ "github.com/steward-dev/steward/internal/engine/mysql"
	_ "github.com/steward-dev/steward/internal/engine/postgres"
)

// DatabasePath is where the Database validator is served, the path
// controller-runtime derives from the kind and the one the webhook
// configurations name.
const DatabasePath = "/validate-steward-dev-v1alpha1-database"

// +kubebuilder:webhook:path=/validate-steward-dev-v1alpha1-database,mutating=false,failurePolicy=fail,sideEffects=None,groups=steward.dev,resources=databases,verbs=create;update,versions=v1alpha1,name=vdatabase.steward.dev,admissionReviewVersions=v1,timeoutSeconds=5,matchPolicy=Equivalent,serviceName=steward-webhook,serviceNamespace=steward-system

// databaseValidator rejects a Database whose spec.parameters give a
// setting the engine knows a value it would refuse: not a size, a
// duration, a number or a boolean where one is expected, not one of an
// enum's values, or out of the setting's range. The engine's rules are too
// many and too detailed for CEL, hence the webhook. Unknown settings are
// accepted. A Database being deleted is never held up.
var databaseValidator = specValidator[*v1alpha1.Database]{
	kind:     "Database",
	problems: DatabaseProblems,
	spec:     func(db *v1alpha1.Database) any { return db.Spec },
}

// SetupDatabaseWebhook registers the validator on the manager's webhook
// server at DatabasePath.
func SetupDatabaseWebhook(mgr ctrl.Manager) error {
	return register(mgr, &v1alpha1.Database{}, DatabasePath, databaseValidator)
}

// DatabaseProblems lists the parameters whose values the Database's engine
// would refuse, as engine.CheckParameters finds them, one error per
// parameter at spec.parameters.<name>, e.g.
//
//	spec.parameters.shared_buffers: Invalid value: "not-a-size" is not a size: use a number with kB, MB, GB or TB (e.g. 128MB)
//	spec.parameters.max_connections: Invalid value: -5 is out of range: between 1 and 262143
func DatabaseProblems(obj *v1alpha1.Database) field.ErrorList {
	return parameterProblems(obj.Spec.Engine, obj.Spec.Parameters, field.NewPath("spec", "parameters"))
}

// parameterProblems checks params for the engine named e, with each
// parameter's error at path.<name>. An unknown engine has none: the schema
// refuses it.
func parameterProblems(e v1alpha1.DatabaseEngine, params map[string]string, path *field.Path) field.ErrorList {
	eng, err := engine.Get(string(e))
	if err != nil {
		return nil
	}
	var errs field.ErrorList
	for _, p := range engine.CheckParameters(eng, params) {
		// The detail names the value itself, quoted when it is not of
		// the setting's type.
		errs = append(errs, field.Invalid(path.Child(p.Key), field.OmitValueType{}, p.Err.Error()))
	}
	return errs
}
