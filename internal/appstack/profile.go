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

package appstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/steward-dev/steward/api/v1alpha1"
)

// Sources of an effective setting.
const (
	SourceSpec    = "spec"
	SourceProfile = "profile"
	SourceDefault = "default"
)

// Profile is an environment's defaults.
type Profile struct {
	// DatabaseReplicas and StorageSize default a database's instances and volume.
	DatabaseReplicas int32
	StorageSize      resource.Quantity
	// Backups turns database backups on, with this schedule and retention.
	Backups         bool
	BackupSchedule  string
	BackupKeepDaily int32
	// AppReplicas is the replica count of an app that sets neither
	// replicas nor autoscaling; 0 leaves the WebApp's default of 1.
	AppReplicas int32
}

// Profiles are the defaults of each environment.
var Profiles = map[v1alpha1.StackEnvironment]Profile{
	v1alpha1.StackProduction: {
		DatabaseReplicas: 3, StorageSize: resource.MustParse("100Gi"),
		Backups: true, BackupSchedule: "0 2 * * *", BackupKeepDaily: 30,
		AppReplicas: 2,
	},
	v1alpha1.StackStaging: {
		DatabaseReplicas: 2, StorageSize: resource.MustParse("50Gi"),
		Backups: true, BackupSchedule: "0 2 * * *", BackupKeepDaily: 7,
	},
	v1alpha1.StackDevelopment: {
		DatabaseReplicas: 1, StorageSize: resource.MustParse("10Gi"),
	},
}

// DefaultDatabaseVersions is the version of a database that sets none: the
// newest supported major of its engine.
var DefaultDatabaseVersions = map[v1alpha1.DatabaseEngine]string{
	v1alpha1.EnginePostgres: "17",
	v1alpha1.EngineMySQL:    "8.4",
	v1alpha1.EngineMariaDB:  "11.4",
}

// appConfigEnvironments maps a stack's environment to an AppConfig's.
var appConfigEnvironments = map[v1alpha1.StackEnvironment]string{
	v1alpha1.StackDevelopment: "dev",
	v1alpha1.StackStaging:     "staging",
	v1alpha1.StackProduction:  "prod",
}

// ObjectName is the Steward object of a component: <stack>-<component>.
func ObjectName(stack *v1alpha1.AppStack, component string) string {
	return stack.Name + "-" + component
}

// Desired is the spec of every object a stack asks for, by component name.
type Desired struct {
	Databases map[string]v1alpha1.DatabaseSpec
	Caches    map[string]v1alpha1.CacheSpec
	Apps      map[string]v1alpha1.WebAppSpec
	// Config is the AppConfig's spec, or nil.
	Config *v1alpha1.AppConfigSpec
	// Effective lists the profile-governed settings of each component, in
	// the order of the spec.
	Effective []v1alpha1.StackEffective
}

// Render derives each component's spec from the stack's spec and its
// environment's profile. Values set in a component always win. Bindings and
// the configuration are translated to the names of the stack's objects.
func Render(stack *v1alpha1.AppStack) Desired {
	p := Profiles[stack.Spec.Environment]
	d := Desired{
		Databases: map[string]v1alpha1.DatabaseSpec{},
		Caches:    map[string]v1alpha1.CacheSpec{},
		Apps:      map[string]v1alpha1.WebAppSpec{},
	}
	for _, db := range stack.Spec.Databases {
		spec, eff := renderDatabase(stack, db, p)
		d.Databases[db.Name] = spec
		d.Effective = append(d.Effective, v1alpha1.StackEffective{Component: db.Name, Settings: eff})
	}
	for _, c := range stack.Spec.Caches {
		d.Caches[c.Name] = *c.CacheSpec.DeepCopy()
	}
	if cfg := stack.Spec.Config; cfg != nil {
		d.Config = &v1alpha1.AppConfigSpec{
			Application: stack.Name,
			Environment: appConfigEnvironments[stack.Spec.Environment],
			Data:        cfg.Data,
			SecretData:  cfg.SecretData,
		}
	}
	for _, a := range stack.Spec.Apps {
		spec, eff := renderApp(stack, a, p)
		d.Apps[a.Name] = spec
		d.Effective = append(d.Effective, v1alpha1.StackEffective{Component: a.Name, Settings: eff})
	}
	return d
}

func setting(name, value, source string) v1alpha1.EffectiveSetting {
	return v1alpha1.EffectiveSetting{Name: name, Value: value, Source: source}
}

func renderDatabase(stack *v1alpha1.AppStack, db v1alpha1.StackDatabase, p Profile) (v1alpha1.DatabaseSpec, []v1alpha1.EffectiveSetting) {
	spec := v1alpha1.DatabaseSpec{
		Engine:         db.Engine,
		Version:        db.Version,
		Size:           db.Size,
		Resources:      db.Resources.DeepCopy(),
		DatabaseName:   db.DatabaseName,
		Owner:          db.Owner,
		Parameters:     db.Parameters,
		DeletionPolicy: db.DeletionPolicy,
		Storage:        v1alpha1.DatabaseStorage{StorageClassName: db.StorageClassName},
	}
	if spec.Engine == "" {
		spec.Engine = v1alpha1.EnginePostgres
	}
	var eff []v1alpha1.EffectiveSetting
	if spec.Version == "" {
		spec.Version = DefaultDatabaseVersions[spec.Engine]
		eff = append(eff, setting("version", spec.Version, SourceDefault))
	} else {
		eff = append(eff, setting("version", spec.Version, SourceSpec))
	}

	replicas, src := p.DatabaseReplicas, SourceProfile
	if db.Replicas != nil {
		replicas, src = *db.Replicas, SourceSpec
	}
	spec.Replicas = &replicas
	eff = append(eff, setting("replicas", strconv.Itoa(int(replicas)), src))

	size, src := p.StorageSize.DeepCopy(), SourceProfile
	if db.StorageSize != nil {
		size, src = db.StorageSize.DeepCopy(), SourceSpec
	}
	spec.Storage.Size = &size
	eff = append(eff, setting("storageSize", size.String(), src))

	on, src := p.Backups, SourceProfile
	b := db.Backups
	if b != nil && b.Enabled != nil {
		on, src = *b.Enabled, SourceSpec
	}
	switch {
	case on && stack.Spec.Backup == nil:
		eff = append(eff, setting("backups", "off: spec.backup has no destination", src))
	case on:
		schedule, ssrc := p.BackupSchedule, SourceProfile
		if b != nil && b.Schedule != "" {
			schedule, ssrc = b.Schedule, SourceSpec
		}
		if schedule == "" {
			schedule, ssrc = "0 2 * * *", SourceDefault
		}
		retention, rsrc := &v1alpha1.BackupRetention{KeepDaily: new(p.BackupKeepDaily)}, SourceProfile
		if b != nil && b.Retention != nil {
			retention, rsrc = b.Retention.DeepCopy(), SourceSpec
		} else if p.BackupKeepDaily == 0 {
			retention, rsrc = &v1alpha1.BackupRetention{KeepDaily: new(int32(7))}, SourceDefault
		}
		dest := *stack.Spec.Backup.Destination.DeepCopy()
		if dest.Prefix == "" {
			dest.Prefix = stack.Namespace + "/" + ObjectName(stack, db.Name)
		}
		spec.Backup = &v1alpha1.DatabaseBackup{
			Enabled: new(true), Schedule: schedule, Retention: retention, Destination: dest,
		}
		eff = append(eff, setting("backups", "on", src),
			setting("backupSchedule", schedule, ssrc),
			setting("backupRetention", describeRetention(retention), rsrc))
	default:
		eff = append(eff, setting("backups", "off", src))
	}
	return spec, eff
}

// describeRetention summarizes a retention policy, e.g. "keepDaily=30".
func describeRetention(r *v1alpha1.BackupRetention) string {
	var parts []string
	add := func(name string, v *int32) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", name, *v))
		}
	}
	add("keepLast", r.KeepLast)
	add("keepDaily", r.KeepDaily)
	add("keepWeekly", r.KeepWeekly)
	add("keepMonthly", r.KeepMonthly)
	if r.MaxAge != nil {
		parts = append(parts, "maxAge="+r.MaxAge.Duration.String())
	}
	return strings.Join(parts, ",")
}

func renderApp(stack *v1alpha1.AppStack, a v1alpha1.StackApp, p Profile) (v1alpha1.WebAppSpec, []v1alpha1.EffectiveSetting) {
	spec := *a.WebAppSpec.DeepCopy()
	if spec.Database != nil {
		spec.Database.Ref = ObjectName(stack, spec.Database.Ref)
	}
	if spec.Cache != nil {
		spec.Cache.Ref = ObjectName(stack, spec.Cache.Ref)
	}
	if stack.Spec.Config != nil {
		name := ObjectName(stack, ConfigComponent)
		spec.Config = slices.DeleteFunc(spec.Config, func(u v1alpha1.ConfigUse) bool { return u.AppConfig == name })
		spec.Config = append(spec.Config, v1alpha1.ConfigUse{AppConfig: name, Keys: a.ConfigKeys, As: v1alpha1.ConfigAsEnv})
	}
	var eff []v1alpha1.EffectiveSetting
	switch {
	case spec.Autoscaling != nil:
		eff = append(eff, setting("replicas", fmt.Sprintf("autoscaled %d-%d", spec.Autoscaling.MinReplicas, spec.Autoscaling.MaxReplicas), SourceSpec))
	case spec.Replicas != nil:
		eff = append(eff, setting("replicas", strconv.Itoa(int(*spec.Replicas)), SourceSpec))
	case p.AppReplicas > 0:
		spec.Replicas = new(p.AppReplicas)
		eff = append(eff, setting("replicas", strconv.Itoa(int(p.AppReplicas)), SourceProfile))
	default:
		eff = append(eff, setting("replicas", "1", SourceDefault))
	}
	lowest := int32(1)
	switch {
	case spec.Autoscaling != nil:
		lowest = spec.Autoscaling.MinReplicas
	case spec.Replicas != nil:
		lowest = *spec.Replicas
	}
	pdb := "none: a single replica"
	if lowest > 1 {
		pdb = "maxUnavailable=1"
	}
	src := SourceDefault
	if p.AppReplicas > 1 && spec.Autoscaling == nil && a.Replicas == nil {
		src = SourceProfile
	}
	eff = append(eff, setting("podDisruptionBudget", pdb, src))
	eff = append(eff, securitySetting(spec))
	if m := stack.Spec.Monitoring; m != nil && m.Enabled {
		path := m.Path
		if path == "" {
			path = "/metrics"
		}
		eff = append(eff, setting("metrics", path, SourceSpec))
	}
	return spec, eff
}

// securitySetting says what the app's pods run with: Steward's defaults (no
// privilege escalation, every capability dropped, RuntimeDefault seccomp),
// and non-root only where the spec asks for it, since the pods otherwise
// run as the image's user, which may be root.
func securitySetting(spec v1alpha1.WebAppSpec) v1alpha1.EffectiveSetting {
	nonRoot := (spec.PodSecurityContext != nil && spec.PodSecurityContext.RunAsNonRoot != nil && *spec.PodSecurityContext.RunAsNonRoot) ||
		(spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot)
	value := "no privilege escalation, all capabilities dropped, RuntimeDefault seccomp"
	if nonRoot {
		value = "restricted: non-root, " + value
	} else {
		value += "; runs as the image's user (runAsNonRoot not set)"
	}
	src := SourceDefault
	if spec.PodSecurityContext != nil || spec.SecurityContext != nil {
		value += ", with the app's overrides"
		src = SourceSpec
	}
	return setting("securityContext", value, src)
}
