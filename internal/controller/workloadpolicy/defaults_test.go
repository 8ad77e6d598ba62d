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

package workloadpolicy_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steward-dev/steward/api/v1alpha1"
	"github.com/steward-dev/steward/internal/appstack"
)

// TestDefaults creates WebApps and AppStacks without runAsNonRoot and
// reads back what the API server stored: in a namespace whose policy
// requires non-root users, the MutatingAdmissionPolicy set
// podSecurityContext.runAsNonRoot and kept the rest; elsewhere nothing
// changed; an explicit false is kept, and refused. No operator runs: the
// defaults hold while Steward is down.
func TestDefaults(t *testing.T) {
	setup(t)
	ctx := context.Background()
	nonRootPod := func(extra *corev1.PodSecurityContext) *corev1.PodSecurityContext {
		p := extra.DeepCopy()
		if p == nil {
			p = &corev1.PodSecurityContext{}
		}
		p.RunAsNonRoot = ptr.To(true)
		return p
	}

	t.Run("webapp keeps its other fields", func(t *testing.T) {
		w := webApp(prodNS, "d1", func(w *v1alpha1.WebApp) {
			w.Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
			w.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
		})
		sent := w.DeepCopy()
		if err := k8s.Create(ctx, w); err != nil {
			t.Fatalf("refused: %v", err)
		}
		stored := getWebApp(t, w)
		if want := nonRootPod(sent.Spec.PodSecurityContext); !equality.Semantic.DeepEqual(stored.Spec.PodSecurityContext, want) {
			t.Errorf("stored podSecurityContext %+v, want %+v", *stored.Spec.PodSecurityContext, *want)
		}
		if !equality.Semantic.DeepEqual(stored.Spec.SecurityContext, sent.Spec.SecurityContext) {
			t.Errorf("stored securityContext %+v, want it unchanged: %+v", stored.Spec.SecurityContext, *sent.Spec.SecurityContext)
		}
	})

	t.Run("webapp without security contexts", func(t *testing.T) {
		w := webApp(prodNS, "d2", func(w *v1alpha1.WebApp) { w.Spec.SecurityContext = nil })
		if err := k8s.Create(ctx, w); err != nil {
			t.Fatalf("refused: %v", err)
		}
		stored := getWebApp(t, w)
		if want := nonRootPod(nil); !equality.Semantic.DeepEqual(stored.Spec.PodSecurityContext, want) || stored.Spec.SecurityContext != nil {
			t.Errorf("stored podSecurityContext %+v and securityContext %+v, want %+v and none", stored.Spec.PodSecurityContext, stored.Spec.SecurityContext, *want)
		}
	})

	t.Run("webapp that says false", func(t *testing.T) {
		for name, w := range map[string]*v1alpha1.WebApp{
			"spec.podSecurityContext": webApp(prodNS, "d3", func(w *v1alpha1.WebApp) {
				w.Spec.SecurityContext = nil
				w.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
			}),
			"spec.securityContext": webApp(prodNS, "d4", func(w *v1alpha1.WebApp) {
				w.Spec.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
			}),
		} {
			want := name + ".runAsNonRoot: Invalid value: false: " + nonRoot
			if err := k8s.Create(ctx, w); refusal(err) != want {
				t.Errorf("%s: got %v, want refused with %q", name, err, want)
			}
		}
	})

	t.Run("webapp where no policy requires non-root", func(t *testing.T) {
		for _, ns := range []string{devNS, stagingNS} {
			w := webApp(ns, "d5", func(w *v1alpha1.WebApp) {
				w.Spec.Replicas = ptr.To[int32](1)
				w.Spec.SecurityContext = nil
				w.Spec.PodSecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
			})
			sent := w.DeepCopy()
			if err := k8s.Create(ctx, w); err != nil {
				t.Fatalf("%s: refused: %v", ns, err)
			}
			stored := getWebApp(t, w)
			if !equality.Semantic.DeepEqual(stored.Spec.PodSecurityContext, sent.Spec.PodSecurityContext) || stored.Spec.SecurityContext != nil {
				t.Errorf("%s: stored podSecurityContext %+v, securityContext %+v, want them unchanged", ns, *stored.Spec.PodSecurityContext, stored.Spec.SecurityContext)
			}
		}
	})

	t.Run("appstack with one app as root", func(t *testing.T) {
		s := appStack(prodNS, "d6", func(s *v1alpha1.AppStack) {
			s.Spec.Apps[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}
			s.Spec.Apps[1].SecurityContext = nil
		})
		want := "spec.apps[api].securityContext.runAsNonRoot: Invalid value: false: " + nonRoot
		if err := k8s.Create(ctx, s); refusal(err) != want {
			t.Fatalf("got %v, want refused with %q", err, want)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.AppStack{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused AppStack: %v, want not found", err)
		}
	})

	t.Run("appstack with both apps unset", func(t *testing.T) {
		s := appStack(prodNS, "d7", func(s *v1alpha1.AppStack) {
			s.Spec.Apps[0].SecurityContext = nil
			s.Spec.Apps[1].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
			s.Spec.Apps[1].PodSecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
		})
		sent := s.DeepCopy()
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatalf("refused: %v", err)
		}
		stored := &v1alpha1.AppStack{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), stored); err != nil {
			t.Fatal(err)
		}
		for i, a := range stored.Spec.Apps {
			was := sent.Spec.Apps[i]
			if want := nonRootPod(was.PodSecurityContext); !equality.Semantic.DeepEqual(a.PodSecurityContext, want) {
				t.Errorf("app %s: stored podSecurityContext %+v, want %+v", a.Name, a.PodSecurityContext, *want)
			}
			if !equality.Semantic.DeepEqual(a.SecurityContext, was.SecurityContext) {
				t.Errorf("app %s: stored securityContext %+v, want it unchanged", a.Name, a.SecurityContext)
			}
		}
		// The stack's status.effective is computed from the stored spec:
		// it tells the truth, the pods run as non-root.
		want := "restricted: non-root, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp, with the app's overrides"
		found := 0
		for _, e := range appstack.Render(stored).Effective {
			for _, set := range e.Settings {
				if set.Name != "securityContext" {
					continue
				}
				found++
				if set.Value != want || set.Source != appstack.SourceSpec {
					t.Errorf("app %s: effective securityContext %q (%s), want %q (%s)", e.Component, set.Value, set.Source, want, appstack.SourceSpec)
				}
			}
		}
		if found != len(stored.Spec.Apps) {
			t.Errorf("status.effective has %d securityContext settings, want one per app (%d)", found, len(stored.Spec.Apps))
		}
	})
}

// TestDefaultsOfExistingObjects labels a namespace production after a
// WebApp and an AppStack without runAsNonRoot were created in it: updates
// that leave their security contexts alone do not default them (they keep
// running as they did, and Check still reports them), one that changes a
// security context does, and a new app of the stack gets the default.
func TestDefaultsOfExistingObjects(t *testing.T) {
	setup(t)
	ctx := context.Background()
	ns := namespace(t, "legacy-defaults", nil)
	app := webApp(ns, "legacy", func(w *v1alpha1.WebApp) { w.Spec.SecurityContext = nil })
	stack := appStack(ns, "legacy", func(s *v1alpha1.AppStack) { s.Spec.Apps[0].SecurityContext = nil })
	for _, o := range []client.Object{app, stack} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %T before the policy: %v", o, err)
		}
	}
	var nsObj corev1.Namespace
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{v1alpha1.DefaultEnvironmentLabel: "production"}
	if err := k8s.Update(ctx, &nsObj); err != nil {
		t.Fatal(err)
	}
	waitDefaulted(t, ns)

	app = getWebApp(t, app)
	app.Labels = map[string]string{"team": "shop"}
	app.Spec.Replicas = ptr.To[int32](1)
	if err := k8s.Update(ctx, app); err != nil {
		t.Fatalf("updating the WebApp's labels and replicas: %v", err)
	}
	app = getWebApp(t, app)
	if app.Spec.PodSecurityContext != nil || app.Spec.SecurityContext != nil {
		t.Errorf("an update that left the security contexts alone set podSecurityContext %+v, securityContext %+v", app.Spec.PodSecurityContext, app.Spec.SecurityContext)
	}
	want := "spec.securityContext.runAsNonRoot: Required value: " + nonRoot
	if errs := production.Check(app, nil); len(errs) == 0 || errs[0].Error() != want {
		t.Errorf("the WebApp as it stands breaks %v, want %s", errs, want)
	}

	app.Spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	if err := k8s.Update(ctx, app); err != nil {
		t.Fatalf("updating the WebApp's security context: %v", err)
	}
	if app = getWebApp(t, app); app.Spec.PodSecurityContext == nil || !ptr.Deref(app.Spec.PodSecurityContext.RunAsNonRoot, false) {
		t.Errorf("an update of the security context stored podSecurityContext %+v, want runAsNonRoot true", app.Spec.PodSecurityContext)
	}

	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stack), stack); err != nil {
		t.Fatal(err)
	}
	added := goodApp()
	added.SecurityContext = nil
	stack.Spec.Apps = append(stack.Spec.Apps, v1alpha1.StackApp{Name: "admin", WebAppSpec: added})
	if err := k8s.Update(ctx, stack); err != nil {
		t.Fatalf("adding an app to the AppStack: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(stack), stack); err != nil {
		t.Fatal(err)
	}
	for _, a := range stack.Spec.Apps {
		got := a.PodSecurityContext != nil && ptr.Deref(a.PodSecurityContext.RunAsNonRoot, false)
		if want := a.Name == "admin"; got != want {
			t.Errorf("app %s: podSecurityContext %+v, want runAsNonRoot set: %v", a.Name, a.PodSecurityContext, want)
		}
	}
}

func getWebApp(t *testing.T, w *v1alpha1.WebApp) *v1alpha1.WebApp {
	t.Helper()
	stored := &v1alpha1.WebApp{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(w), stored); err != nil {
		t.Fatal(err)
	}
	return stored
}
