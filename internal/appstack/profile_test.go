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

package appstack_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

var bucket = &v1alpha1.StackBackup{Destination: v1alpha1.BackupDestination{Type: v1alpha1.DestinationS3, Bucket: "backups"}}

// stack is the e-commerce stack in env, named shop in namespace team,
// with spec.backup.
func stack(env v1alpha1.StackEnvironment, mutate ...func(*v1alpha1.AppStack)) *v1alpha1.AppStack {
	s := &v1alpha1.AppStack{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"},
		Spec:       *shop(),
	}
	s.Spec.Environment = env
	s.Spec.Backup = bucket.DeepCopy()
	for _, m := range mutate {
		m(s)
	}
	return s
}

// effective returns a component's settings as "name=value (source)".
func effective(d appstack.Desired, component string) []string {
	for _, e := range d.Effective {
		if e.Component == component {
			var out []string
			for _, s := range e.Settings {
				out = append(out, fmt.Sprintf("%s=%s (%s)", s.Name, s.Value, s.Source))
			}
			return out
		}
	}
	return nil
}

func checkEffective(t *testing.T, d appstack.Desired, component string, want ...string) {
	t.Helper()
	if got := effective(d, component); !slices.Equal(got, want) {
		t.Errorf("%s effective\n%s\nwant\n%s", component, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRenderDatabaseProfiles(t *testing.T) {
	for _, tc := range []struct {
		env       v1alpha1.StackEnvironment
		replicas  int32
		storage   string
		keepDaily int32 // 0: no backups
	}{
		{v1alpha1.StackProduction, 3, "100Gi", 30},
		{v1alpha1.StackStaging, 2, "50Gi", 7},
		{v1alpha1.StackDevelopment, 1, "10Gi", 0},
	} {
		t.Run(string(tc.env), func(t *testing.T) {
			d := appstack.Render(stack(tc.env))
			db, ok := d.Databases["db"]
			if !ok {
				t.Fatal("no database db")
			}
			if db.Engine != v1alpha1.EnginePostgres || db.Version != "17" {
				t.Errorf("engine %s version %s, want postgres 17", db.Engine, db.Version)
			}
			if db.Replicas == nil || *db.Replicas != tc.replicas {
				t.Errorf("replicas %v, want %d", db.Replicas, tc.replicas)
			}
			if want := resource.MustParse(tc.storage); db.Storage.Size.Cmp(want) != 0 {
				t.Errorf("storage %s, want %s", db.Storage.Size.String(), tc.storage)
			}
			settings := []string{
				"version=17 (default)",
				fmt.Sprintf("replicas=%d (profile)", tc.replicas),
				fmt.Sprintf("storageSize=%s (profile)", tc.storage),
			}
			if tc.keepDaily == 0 {
				if db.Backup != nil {
					t.Errorf("backups %+v, want none", db.Backup)
				}
				settings = append(settings, "backups=off (profile)")
			} else {
				b := db.Backup
				if b == nil {
					t.Fatal("no backups")
				}
				if b.Enabled == nil || !*b.Enabled || b.Schedule != "0 2 * * *" ||
					b.Retention == nil || b.Retention.KeepDaily == nil || *b.Retention.KeepDaily != tc.keepDaily {
					t.Errorf("backups %+v, retention %+v", b, b.Retention)
				}
				if b.Destination.Bucket != "backups" || b.Destination.Prefix != "team/shop-db" {
					t.Errorf("destination %+v, want bucket backups, prefix team/shop-db", b.Destination)
				}
				settings = append(settings, "backups=on (profile)", "backupSchedule=0 2 * * * (profile)",
					fmt.Sprintf("backupRetention=keepDaily=%d (profile)", tc.keepDaily))
			}
			checkEffective(t, d, "db", settings...)
		})
	}
}

func TestRenderDatabaseExplicitValuesWin(t *testing.T) {
	d := appstack.Render(stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) {
		db := &s.Spec.Databases[0]
		db.Engine, db.Version = v1alpha1.EngineMySQL, "8.0"
		db.Replicas = new(int32(1))
		db.StorageSize = new(resource.MustParse("5Gi"))
		db.Backups = &v1alpha1.StackDatabaseBackups{Enabled: new(false)}
	}))
	db := d.Databases["db"]
	if db.Engine != v1alpha1.EngineMySQL || db.Version != "8.0" || *db.Replicas != 1 || db.Storage.Size.String() != "5Gi" || db.Backup != nil {
		t.Errorf("rendered %+v", db)
	}
	checkEffective(t, d, "db", "version=8.0 (spec)", "replicas=1 (spec)", "storageSize=5Gi (spec)", "backups=off (spec)")
}

func TestRenderBackups(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stack   *v1alpha1.AppStack
		want    []string // the backup settings in Effective
		backup  bool
		prefix  string
		retains string
	}{
		{name: "production without spec.backup", stack: stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) { s.Spec.Backup = nil }),
			want: []string{"backups=off: spec.backup has no destination (profile)"}},
		{name: "turned on without spec.backup", stack: stack(v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
			s.Spec.Backup = nil
			s.Spec.Databases[0].Backups = &v1alpha1.StackDatabaseBackups{Enabled: new(true)}
		}), want: []string{"backups=off: spec.backup has no destination (spec)"}},
		{name: "turned on in development", stack: stack(v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
			s.Spec.Databases[0].Backups = &v1alpha1.StackDatabaseBackups{Enabled: new(true)}
		}), backup: true, prefix: "team/shop-db", retains: "keepDaily=7",
			want: []string{"backups=on (spec)", "backupSchedule=0 2 * * * (default)", "backupRetention=keepDaily=7 (default)"}},
		{name: "schedule and retention set", stack: stack(v1alpha1.StackStaging, func(s *v1alpha1.AppStack) {
			s.Spec.Databases[0].Backups = &v1alpha1.StackDatabaseBackups{Schedule: "@hourly",
				Retention: &v1alpha1.BackupRetention{KeepLast: new(int32(5)), KeepWeekly: new(int32(4))}}
		}), backup: true, prefix: "team/shop-db", retains: "keepLast=5,keepWeekly=4",
			want: []string{"backups=on (profile)", "backupSchedule=@hourly (spec)", "backupRetention=keepLast=5,keepWeekly=4 (spec)"}},
		{name: "destination prefix set", stack: stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) {
			s.Spec.Backup.Destination.Prefix = "prod/shop"
		}), backup: true, prefix: "prod/shop", retains: "keepDaily=30",
			want: []string{"backups=on (profile)", "backupSchedule=0 2 * * * (profile)", "backupRetention=keepDaily=30 (profile)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := appstack.Render(tc.stack)
			got := effective(d, "db")[3:] // after version, replicas and storageSize
			if !slices.Equal(got, tc.want) {
				t.Errorf("effective %v, want %v", got, tc.want)
			}
			b := d.Databases["db"].Backup
			if !tc.backup {
				if b != nil {
					t.Errorf("backups %+v, want none", b)
				}
				return
			}
			if b == nil {
				t.Fatal("no backups")
			}
			if b.Destination.Prefix != tc.prefix {
				t.Errorf("prefix %q, want %q", b.Destination.Prefix, tc.prefix)
			}
			if got := d.Effective[0].Settings[5].Value; got != tc.retains {
				t.Errorf("retention %s, want %s", got, tc.retains)
			}
		})
	}
}

func TestRenderDatabaseVersionDefaults(t *testing.T) {
	for engine, want := range map[v1alpha1.DatabaseEngine]string{
		"": "17", v1alpha1.EnginePostgres: "17", v1alpha1.EngineMySQL: "8.4", v1alpha1.EngineMariaDB: "11.4",
	} {
		d := appstack.Render(stack(v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) { s.Spec.Databases[0].Engine = engine }))
		db := d.Databases["db"]
		if db.Version != want {
			t.Errorf("engine %q: version %q, want %q", engine, db.Version, want)
		}
		if engine == "" && db.Engine != v1alpha1.EnginePostgres {
			t.Errorf("no engine rendered as %q, want postgres", db.Engine)
		}
	}
}

func TestRenderApps(t *testing.T) {
	d := appstack.Render(stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) {
		s.Spec.Apps[0].ConfigKeys = []string{"LOG_LEVEL"}
		// A use of another AppConfig stays; one of the stack's is replaced.
		s.Spec.Apps[1].Config = []v1alpha1.ConfigUse{{AppConfig: "shared"}, {AppConfig: "shop-config", As: v1alpha1.ConfigAsFiles}}
	}))
	backend, frontend := d.Apps["backend"], d.Apps["frontend"]
	if backend.Database == nil || backend.Database.Ref != "shop-db" || backend.Cache == nil || backend.Cache.Ref != "shop-cache" {
		t.Errorf("backend bindings %+v %+v, want shop-db and shop-cache", backend.Database, backend.Cache)
	}
	wantUses := []v1alpha1.ConfigUse{{AppConfig: "shared"}, {AppConfig: "shop-config", As: v1alpha1.ConfigAsEnv}}
	if !equality.Semantic.DeepEqual(backend.Config, wantUses) {
		t.Errorf("backend config %+v, want %+v", backend.Config, wantUses)
	}
	wantUses = []v1alpha1.ConfigUse{{AppConfig: "shop-config", Keys: []string{"LOG_LEVEL"}, As: v1alpha1.ConfigAsEnv}}
	if !equality.Semantic.DeepEqual(frontend.Config, wantUses) {
		t.Errorf("frontend config %+v, want %+v", frontend.Config, wantUses)
	}
	want := v1alpha1.AppConfigSpec{Application: "shop", Environment: "prod", Data: map[string]string{"LOG_LEVEL": "info"}}
	if d.Config == nil || !equality.Semantic.DeepEqual(*d.Config, want) {
		t.Errorf("config %+v, want %+v", d.Config, want)
	}

	// Without spec.config the apps use no AppConfig of the stack's.
	d = appstack.Render(stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) { s.Spec.Config = nil }))
	if d.Config != nil || d.Apps["frontend"].Config != nil {
		t.Errorf("config %+v, frontend uses %+v, want none", d.Config, d.Apps["frontend"].Config)
	}
}

func TestRenderConfigEnvironment(t *testing.T) {
	for env, want := range map[v1alpha1.StackEnvironment]string{
		v1alpha1.StackDevelopment: "dev", v1alpha1.StackStaging: "staging", v1alpha1.StackProduction: "prod",
	} {
		if got := appstack.Render(stack(env)).Config.Environment; got != want {
			t.Errorf("%s: AppConfig environment %q, want %q", env, got, want)
		}
	}
}

func TestRenderAppReplicas(t *testing.T) {
	autoscaling := func(min int32) *v1alpha1.Autoscaling {
		return &v1alpha1.Autoscaling{MinReplicas: min, MaxReplicas: 5}
	}
	for _, tc := range []struct {
		name     string
		env      v1alpha1.StackEnvironment
		mutate   func(*v1alpha1.StackApp)
		replicas *int32
		want     []string
	}{
		{name: "production profile", env: v1alpha1.StackProduction, replicas: new(int32(2)),
			want: []string{"replicas=2 (profile)", "podDisruptionBudget=maxUnavailable=1 (profile)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "explicit 1 in production", env: v1alpha1.StackProduction,
			mutate: func(a *v1alpha1.StackApp) { a.Replicas = new(int32(1)) }, replicas: new(int32(1)),
			want: []string{"replicas=1 (spec)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "explicit 3 in development", env: v1alpha1.StackDevelopment,
			mutate: func(a *v1alpha1.StackApp) { a.Replicas = new(int32(3)) }, replicas: new(int32(3)),
			want: []string{"replicas=3 (spec)", "podDisruptionBudget=maxUnavailable=1 (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "autoscaling in production", env: v1alpha1.StackProduction,
			mutate: func(a *v1alpha1.StackApp) { a.Autoscaling = autoscaling(1) },
			want:   []string{"replicas=autoscaled 1-5 (spec)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "autoscaling from 2", env: v1alpha1.StackStaging,
			mutate: func(a *v1alpha1.StackApp) { a.Autoscaling = autoscaling(2) },
			want:   []string{"replicas=autoscaled 2-5 (spec)", "podDisruptionBudget=maxUnavailable=1 (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "staging leaves the WebApp's default", env: v1alpha1.StackStaging,
			want: []string{"replicas=1 (default)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		{name: "development", env: v1alpha1.StackDevelopment,
			want: []string{"replicas=1 (default)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)"}},
		// Non-root is claimed only where the spec sets it.
		{name: "runAsNonRoot set by the app", env: v1alpha1.StackDevelopment,
			mutate: func(a *v1alpha1.StackApp) {
				a.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(101))}
			},
			want: []string{"replicas=1 (default)", "podDisruptionBudget=none: a single replica (default)", "securityContext=restricted: non-root, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp, with the app's overrides (spec)"}},
		{name: "an override that is not non-root", env: v1alpha1.StackDevelopment,
			mutate: func(a *v1alpha1.StackApp) {
				a.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: new(true)}
			},
			want: []string{"replicas=1 (default)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set), with the app's overrides (spec)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := appstack.Render(stack(tc.env, func(s *v1alpha1.AppStack) {
				if tc.mutate != nil {
					tc.mutate(&s.Spec.Apps[1])
				}
			}))
			got := d.Apps["backend"].Replicas
			if (got == nil) != (tc.replicas == nil) || (got != nil && *got != *tc.replicas) {
				t.Errorf("replicas %v, want %v", got, tc.replicas)
			}
			checkEffective(t, d, "backend", tc.want...)
		})
	}
}

func TestRenderMonitoring(t *testing.T) {
	d := appstack.Render(stack(v1alpha1.StackDevelopment, func(s *v1alpha1.AppStack) {
		s.Spec.Monitoring = &v1alpha1.StackMonitoring{Enabled: true}
	}))
	checkEffective(t, d, "frontend", "replicas=1 (default)", "podDisruptionBudget=none: a single replica (default)", "securityContext=no privilege escalation, all capabilities dropped, RuntimeDefault seccomp; runs as the image's user (runAsNonRoot not set) (default)", "metrics=/metrics (spec)")
}

func TestRenderEffectiveFollowsTheSpec(t *testing.T) {
	d := appstack.Render(stack(v1alpha1.StackProduction))
	var got []string
	for _, e := range d.Effective {
		got = append(got, e.Component)
	}
	// Databases, then apps, each in spec order; caches and the
	// configuration have no profile-governed settings.
	if want := []string{"db", "frontend", "backend"}; !slices.Equal(got, want) {
		t.Errorf("effective components %v, want %v", got, want)
	}
}

func TestRenderLeavesTheStackAlone(t *testing.T) {
	s := stack(v1alpha1.StackProduction, func(s *v1alpha1.AppStack) {
		s.Spec.Apps[1].Config = []v1alpha1.ConfigUse{{AppConfig: "shop-config"}}
	})
	before := s.DeepCopy()
	appstack.Render(s)
	if !equality.Semantic.DeepEqual(s, before) {
		t.Errorf("Render changed the stack:\n%+v\nwas\n%+v", s.Spec, before.Spec)
	}
}
