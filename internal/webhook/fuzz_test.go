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
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appconfig"
	"github.com/steward-dev/steward/internal/appstack"
	stackctrl "github.com/steward-dev/steward/internal/controller/appstack"
	dbctrl "github.com/steward-dev/steward/internal/controller/database"
	"github.com/steward-dev/steward/internal/engine"
	"github.com/steward-dev/steward/internal/testenv/fuzzcheck"
)

// fuzzLines reads "KEY=VALUE" lines into data, and "ENV/KEY=VALUE" lines
// into the overrides of ENV; "\n" in a value is written as "\\n".
func fuzzLines(text string) (data map[string]string, overrides map[string]map[string]string) {
	data, overrides = map[string]string{}, map[string]map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		kv, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.ReplaceAll(value, `\n`, "\n")
		if env, key, ok := strings.Cut(kv, "/"); ok {
			if overrides[env] == nil {
				overrides[env] = map[string]string{}
			}
			overrides[env][key] = value
			continue
		}
		data[kv] = value
	}
	return data, overrides
}

// secretKeyPattern is the schema's pattern of a secretData key.
var secretKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fuzzSecretData are the comma-separated keys of secretKeys that the
// schema admits: names, in neither data nor an override.
func fuzzSecretData(secretKeys string, data map[string]string, overrides map[string]map[string]string) map[string]v1alpha1.SecretValueRef {
	secrets := map[string]v1alpha1.SecretValueRef{}
	for _, k := range strings.Split(secretKeys, ",") {
		if !secretKeyPattern.MatchString(k) {
			continue
		}
		if _, ok := data[k]; ok {
			continue
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(overrides)), func(o map[string]string) bool { _, ok := o[k]; return ok }) {
			continue
		}
		secrets[k] = v1alpha1.SecretValueRef{SecretName: "secrets", Key: strings.ToLower(k)}
	}
	return secrets
}

// checkValidator checks that the admission entry points agree with the
// problems found: a creation is refused, as Invalid, exactly when there are
// some; an update that keeps the spec and a deletion are always admitted.
func checkValidator[T client.Object](t *testing.T, v specValidator[T], obj, empty T, errs field.ErrorList) {
	t.Helper()
	ctx := context.Background()
	_, err := v.ValidateCreate(ctx, obj)
	if (err == nil) != (len(errs) == 0) {
		t.Fatalf("ValidateCreate returned %v for the problems %v", err, errs)
	}
	if err != nil && !apierrors.IsInvalid(err) {
		t.Fatalf("ValidateCreate returned %v, not an Invalid error", err)
	}
	if _, err := v.ValidateUpdate(ctx, obj, obj); err != nil {
		t.Fatalf("ValidateUpdate refused an unchanged spec: %v", err)
	}
	if _, err := v.ValidateUpdate(ctx, empty, obj); (err == nil) != (len(errs) == 0) {
		t.Fatalf("ValidateUpdate of a new spec returned %v for the problems %v", err, errs)
	}
	if _, err := v.ValidateDelete(ctx, obj); err != nil {
		t.Fatalf("ValidateDelete: %v", err)
	}
}

// FuzzAppConfigProblems checks the AppConfig validator on any data,
// overrides, secret keys and environment: deterministic, bounded, with
// every problem under spec, and an AppConfig it admits one that renders
// in its environment and whose other environments' overrides are sound.
func FuzzAppConfigProblems(f *testing.F) {
	f.Add("LOG_LEVEL=debug\nDB_HOST=orders.${namespace}.svc\nDB_URL=postgresql://${DB_HOST}:5432/app\n"+
		"PUBLIC_URL=https://${application}.example.com\nCHECKOUT_URL=${PUBLIC_URL}/checkout\n"+
		"GREETING=Welcome to ${application} (${environment})\nprod/LOG_LEVEL=warn\nstaging/LOG_LEVEL=info",
		"PAYMENTS_TOKEN", "prod", "shop-ns", "shop")
	f.Add("A=${B}\nB=${A}\nC=${PAYMENTS_TOKEN}\nqa/X=1\ndev/Y=${Z}", "PAYMENTS_TOKEN", "dev", "ns", "app")
	f.Add("A=${\nB=${}\n1C=x\nnamespace=y\nD=$${E}", "", "staging", "ns", "app")
	f.Add("A=${B}${B}\nB=${C}${C}\nC=${D}${D}\nD=xxxxxxxx", "S", "test", "", "")
	f.Add(strings.Repeat("K=${K}\n", 3)+"a=1\nb=2\nc=3\nd=4\ne=5\nf=6\ng=7\nh=8\ni=9\nj=10\nk=11\nl=12\nm=13\nn=14\no=15\np=16\nq=17\nr=18\ns=19\nt=20\nu=21",
		"", "dev", "ns", "app")
	f.Fuzz(func(t *testing.T, text, secretKeys, env, namespace, application string) {
		data, overrides := fuzzLines(text)
		obj := &v1alpha1.AppConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "shop"},
			Spec: v1alpha1.AppConfigSpec{Application: application, Environment: env, Data: data,
				Overrides: overrides, SecretData: fuzzSecretData(secretKeys, data, overrides)},
		}
		errs := Problems(obj)
		if again := Problems(obj); !equality.Semantic.DeepEqual(errs, again) {
			t.Fatalf("Problems is not deterministic:\n%v\n%v", errs, again)
		}
		if len(errs) > maxErrors+1 {
			t.Fatalf("%d problems listed, more than %d", len(errs), maxErrors+1)
		}
		for _, e := range errs {
			if p := e.Field; p != "spec" && p != "spec.data" && !strings.HasPrefix(p, "spec.overrides.") {
				t.Fatalf("problem %v is not under spec.data or spec.overrides", e)
			}
			if e.Type == field.ErrorTypeForbidden && len(obj.Spec.SecretData) == 0 {
				t.Fatalf("problem %v names a secretData key, but there is none", e)
			}
		}
		checkValidator(t, appConfigValidator, obj, &v1alpha1.AppConfig{}, errs)
		if len(errs) > 0 {
			return
		}
		spec := appconfig.Spec{Data: data, Overrides: overrides}
		vars := appconfig.Vars{Namespace: namespace, Application: application}
		if _, err := appconfig.Render(spec, env, vars); err != nil {
			t.Fatalf("admitted, but does not render: %v", err)
		}
		for _, other := range appconfig.Environments {
			for _, fe := range appconfig.Validate(spec, other, vars) {
				if fe.Field == "overrides."+other {
					t.Fatalf("admitted, but the overrides of %s have a problem: %v", other, fe)
				}
			}
		}
	})
}

// fuzzEngines are the engines a Database names; "" is one the schema
// refuses, which the validator leaves to it.
var fuzzEngines = []v1alpha1.DatabaseEngine{v1alpha1.EnginePostgres, v1alpha1.EngineMySQL, v1alpha1.EngineMariaDB, ""}

// plainParameterKey is a parameter name every engine takes as written
// (MySQL reads "loose_x" as x), plainParameterValue a value on one line.
var (
	plainParameterKey   = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	plainParameterValue = regexp.MustCompile(`^[ -~]*$`)
)

// FuzzDatabaseProblems checks the Database validator on any parameters:
// deterministic, one problem at most per parameter, at its field; and a
// Database it admits is one whose configuration the reconciler renders,
// the same every time, and whose children build.
func FuzzDatabaseProblems(f *testing.F) {
	f.Add(uint8(0), uint8(0), "work_mem=8MB\nlog_min_duration_statement=500\nshared_preload_libraries=pg_stat_statements")
	f.Add(uint8(0), uint8(1), "shared_buffers=not-a-size\nmax_connections=-5\nWork_Mem=16mb")
	f.Add(uint8(1), uint8(0), "long_query_time=2\nslow_query_log=ON\ninnodb_buffer_pool_size=1GB")
	f.Add(uint8(2), uint8(1), "max-connections=10\nmax_connections=20\nsql_mode=ANSI")
	f.Add(uint8(0), uint8(2), "work_mem=4MB\nWORK_MEM=8MB")
	f.Add(uint8(3), uint8(0), "x=y")
	f.Fuzz(func(t *testing.T, engineChoice, versionChoice uint8, params string) {
		e := fuzzEngines[int(engineChoice)%len(fuzzEngines)]
		parameters, _ := fuzzLines(params)
		db := &v1alpha1.Database{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders", UID: "uid-orders"},
			Spec:       v1alpha1.DatabaseSpec{Engine: e, Parameters: parameters},
		}
		eng, engErr := engine.Get(string(e))
		if engErr == nil {
			versions := eng.Versions()
			db.Spec.Version = versions[int(versionChoice)%len(versions)]
		}
		errs := DatabaseProblems(db)
		if again := DatabaseProblems(db); !equality.Semantic.DeepEqual(errs, again) {
			t.Fatalf("DatabaseProblems is not deterministic:\n%v\n%v", errs, again)
		}
		seen := map[string]bool{}
		for _, err := range errs {
			key, ok := strings.CutPrefix(err.Field, "spec.parameters.")
			if _, set := parameters[key]; !ok || !set || seen[key] {
				t.Fatalf("problem %v is not at a parameter's field, once", err)
			}
			seen[key] = true
		}
		checkValidator(t, databaseValidator, db, &v1alpha1.Database{}, errs)
		if len(errs) > 0 || engErr != nil {
			return
		}
		files, err := eng.Render(dbctrl.Tuning(db))
		for range 3 {
			again, againErr := eng.Render(dbctrl.Tuning(db))
			if fmt.Sprint(err) != fmt.Sprint(againErr) || !maps.Equal(files, again) {
				t.Fatalf("Render is not deterministic: %v, then %v", err, againErr)
			}
		}
		plain := true
		for k, v := range parameters {
			plain = plain && plainParameterKey.MatchString(k) && !strings.HasPrefix(k, "loose_") &&
				plainParameterValue.MatchString(v) && !eng.Controlled(k)
		}
		if err != nil && plain {
			t.Fatalf("admitted, but the configuration does not render: %v", err)
		}
		dbctrl.ConfigMap(db, files)
		dbctrl.Services(db)
		dbctrl.StatefulSet(db, eng, "steward:test", resource.MustParse("1Gi"))
		dbctrl.PodDisruptionBudget(db)
	})
}

// stackName is the schema's pattern of a component's name.
var stackName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// fuzzAppStack reads a stack from lines "d NAME DEP...", "c NAME DEP..."
// and "a NAME DEP...", a database, a cache and an app with their
// dependsOn; an app's "db=REF" and "cache=REF" are its bindings. The
// schema's checks on names (pattern, length, uniqueness, not "config") are
// applied by leaving a component out. params are the first database's
// parameters, config the data of spec.config (none when empty).
func fuzzAppStack(layout, params, config string, production bool) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", UID: "uid-shop"},
		Spec:       v1alpha1.AppStackSpec{Environment: v1alpha1.StackDevelopment},
	}
	if production {
		s.Spec.Environment = v1alpha1.StackProduction
	}
	taken := map[string]bool{}
	for _, line := range strings.Split(layout, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || taken[f[1]] || f[1] == appstack.ConfigComponent || !stackName.MatchString(f[1]) ||
			len(f[1]) > 30 || len(s.Name)+1+len(f[1]) > 40 {
			continue
		}
		name, deps := f[1], f[2:]
		switch f[0] {
		case "d":
			s.Spec.Databases = append(s.Spec.Databases, v1alpha1.StackDatabase{Name: name, DependsOn: deps})
		case "c":
			s.Spec.Caches = append(s.Spec.Caches, v1alpha1.StackCache{Name: name, DependsOn: deps,
				CacheSpec: v1alpha1.CacheSpec{Engine: v1alpha1.EngineRedis}})
		case "a":
			a := v1alpha1.StackApp{Name: name, WebAppSpec: v1alpha1.WebAppSpec{Image: "shop/" + name + ":1", Port: 8080}}
			for _, d := range deps {
				switch {
				case strings.HasPrefix(d, "db="):
					a.Database = &v1alpha1.WebAppBinding{Ref: strings.TrimPrefix(d, "db=")}
				case strings.HasPrefix(d, "cache="):
					a.Cache = &v1alpha1.WebAppBinding{Ref: strings.TrimPrefix(d, "cache=")}
				case d == "expose":
					a.Expose = &v1alpha1.StackExpose{Path: "/" + name}
				default:
					a.DependsOn = append(a.DependsOn, d)
				}
			}
			s.Spec.Apps = append(s.Spec.Apps, a)
		default:
			continue
		}
		taken[name] = true
	}
	if len(s.Spec.Databases) > 0 {
		s.Spec.Databases[0].Parameters, _ = fuzzLines(params)
	}
	if config != "" {
		data, _ := fuzzLines(config)
		s.Spec.Config = &v1alpha1.StackConfig{Data: data}
	}
	if slices.ContainsFunc(s.Spec.Apps, func(a v1alpha1.StackApp) bool { return a.Expose != nil }) {
		s.Spec.Ingress = &v1alpha1.StackIngress{Host: "shop.example.com", TLSSecretName: "shop-tls"}
	}
	return s
}

// FuzzStackProblems checks the AppStack validator: deterministic, a graph
// problem exactly when NewGraph fails, and an AppStack it admits is one
// whose components all build, in dependency order, as objects with valid
// names and labels owned by the stack, that their own validators admit.
func FuzzStackProblems(f *testing.F) {
	f.Add("d orders\nc sessions\na backend db=orders cache=sessions expose\na frontend backend expose",
		"work_mem=8MB", "LOG_LEVEL=info\nPUBLIC_URL=https://ecommerce.example.com\nAPI_URL=${PUBLIC_URL}/api", true)
	f.Add("d db frontend\nc cache\na backend db=db cache=cache\na frontend backend", "", "HOST=${application}.${namespace}.svc", false)
	f.Add("d db\na web db=db", "shared_buffers=lots\nmax_connections=-5", "URL=https://${HOSTT}/", false)
	f.Add("a a b\na b c\na c a", "", "", true)
	f.Add("a web missing\nc cache cache", "", "A=${B}\nB=${A}", false)
	f.Fuzz(func(t *testing.T, layout, params, config string, production bool) {
		stack := fuzzAppStack(layout, params, config, production)
		errs := StackProblems(stack)
		if again := StackProblems(stack); !equality.Semantic.DeepEqual(errs, again) {
			t.Fatalf("StackProblems is not deterministic:\n%v\n%v", errs, again)
		}
		_, graphErr := appstack.NewGraph(&stack.Spec)
		graphProblems := 0
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.databases[") || !strings.Contains(e.Field, "].parameters.") {
				if !strings.HasPrefix(e.Field, "spec.config") {
					graphProblems++
				}
			}
		}
		if (graphErr != nil) != (graphProblems == 1) || graphProblems > 1 {
			t.Fatalf("NewGraph returned %v; the problems are %v", graphErr, errs)
		}
		checkValidator(t, appStackValidator, stack, &v1alpha1.AppStack{}, errs)
		if len(errs) > 0 {
			return
		}
		checkStackObjects(t, stack)
	})
}

// checkStackObjects builds every object of an admitted stack.
func checkStackObjects(t *testing.T, stack *v1alpha1.AppStack) {
	t.Helper()
	g, err := appstack.NewGraph(&stack.Spec)
	if err != nil {
		t.Fatalf("admitted, but NewGraph: %v", err)
	}
	for _, monitors := range []bool{false, true} {
		d := stackctrl.Render(stack, monitors)
		for _, name := range g.Order() {
			obj := stackctrl.Component(stack, g.Node(name), d)
			checkObjectMeta(t, obj, stack)
			switch o := obj.(type) {
			case *v1alpha1.Database:
				if errs := DatabaseProblems(o); len(errs) > 0 {
					t.Fatalf("admitted, but the Database webhook refuses %s: %v", o.Name, errs)
				}
			case *v1alpha1.AppConfig:
				if errs := Problems(o); len(errs) > 0 {
					t.Fatalf("admitted, but the AppConfig webhook refuses %s: %v", o.Name, errs)
				}
			case *v1alpha1.WebApp:
				if o.Spec.Replicas != nil && o.Spec.Autoscaling != nil {
					t.Fatalf("WebApp %s sets replicas and autoscaling", o.Name)
				}
			}
		}
	}
	if in := stackctrl.Ingress(stack); in != nil {
		if errs := validation.IsDNS1123Subdomain(*in.Name); len(errs) > 0 {
			t.Fatalf("Ingress name %q: %v", *in.Name, errs)
		}
		if len(in.Spec.Rules) != 1 || len(in.Spec.Rules[0].HTTP.Paths) == 0 {
			t.Fatalf("Ingress rules %+v", in.Spec.Rules)
		}
	}
}

// checkObjectMeta checks a component's name, labels and owner.
func checkObjectMeta(t *testing.T, obj client.Object, stack *v1alpha1.AppStack) {
	t.Helper()
	if errs := validation.IsDNS1123Label(obj.GetName()); len(errs) > 0 {
		t.Fatalf("object name %q: %v", obj.GetName(), errs)
	}
	if err := fuzzcheck.Labels(obj.GetLabels()); err != nil {
		t.Fatalf("%s: %v", obj.GetName(), err)
	}
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != stack.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Fatalf("%s: owner references %+v", obj.GetName(), refs)
	}
}
