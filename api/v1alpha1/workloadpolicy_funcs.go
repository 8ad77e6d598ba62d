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

package v1alpha1

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const (
	// DefaultEnvironmentLabel is the namespace label that names a
	// namespace's environment, unless a WorkloadPolicy's
	// spec.environmentLabel names another.
	DefaultEnvironmentLabel = "steward.dev/environment"

	// WorkloadPolicyAdmission is the name of the ValidatingAdmissionPolicy
	// that enforces WorkloadPolicies, of the MutatingAdmissionPolicy that
	// sets their defaults, and of their bindings
	// (config/policy/workloadpolicy.yaml and workloadpolicy-defaults.yaml,
	// and the chart's templates of the same names). A refusal's message
	// starts with "ValidatingAdmissionPolicy 'workloadpolicies.steward.dev'
	// with binding 'workloadpolicies.steward.dev' denied request: ".
	WorkloadPolicyAdmission = "workloadpolicies.steward.dev"
)

// DatabaseSizeReplicas are the instances of each size preset, for a
// Database that does not set replicas.
var DatabaseSizeReplicas = map[DatabaseSize]int32{SizeSmall: 1, SizeMedium: 2, SizeLarge: 3}

// EnvironmentLabel is the key of the namespace label the policy reads:
// spec.environmentLabel, or DefaultEnvironmentLabel.
func (p *WorkloadPolicy) EnvironmentLabel() string {
	if p.Spec.EnvironmentLabel != "" {
		return p.Spec.EnvironmentLabel
	}
	return DefaultEnvironmentLabel
}

// AppliesTo says whether the policy governs the objects of a namespace
// with these labels.
func (p *WorkloadPolicy) AppliesTo(namespaceLabels map[string]string) bool {
	v, ok := namespaceLabels[p.EnvironmentLabel()]
	return ok && v == p.Spec.Environment
}

// Check lists what obj breaks of the policy, as the API server's
// ValidatingAdmissionPolicy words it and in its order: the replica counts,
// the images, the compute resources, the users. A refused request's
// message ends with the first of them. Check does not look at the
// namespace: see AppliesTo.
//
// At admission the API server sets the policy's defaults first (see
// Default): Check of the object Default changed is the verdict of
// admission. Check of an object as it stands (old nil) reports what it
// breaks as stored: an object made before the policy never got the
// defaults, and lacking runAsNonRoot breaks the runAsNonRoot rule.
//
// obj is a *WebApp, *Cache, *Database, *AppStack, or the
// *autoscalingv1.Scale of a `kubectl scale`; any other object breaks
// nothing. old is nil for a create, and for an object checked as it stands;
// for an update it is the object before, and then Check reports only what
// the update adds: a replica count that grows, an image that changed,
// resources or security contexts that changed and still break the policy.
func (p *WorkloadPolicy) Check(obj, old runtime.Object) field.ErrorList {
	now := subjectOf(obj)
	if now == nil {
		return nil
	}
	before := subjectOf(old)
	if before == nil {
		before = &subject{}
	}
	var errs field.ErrorList
	errs = append(errs, p.checkReplicas(now, before)...)
	errs = append(errs, p.checkImages(now, before)...)
	errs = append(errs, p.checkResources(now, before)...)
	errs = append(errs, p.checkNonRoot(now, before)...)
	return errs
}

// Default sets on obj what the API server's MutatingAdmissionPolicy sets
// before the ValidatingAdmissionPolicy reads it, and returns the fields it
// set. With runAsNonRoot: true, a WebApp, or an AppStack's app, that sets
// runAsNonRoot neither in its securityContext nor in its
// podSecurityContext gets podSecurityContext.runAsNonRoot true, its other
// podSecurityContext fields kept. A value the spec sets, false included,
// is left alone. For an update (old not nil), only a WebApp or an app
// whose security contexts changed gets it, as only those are checked
// again: an object made before the policy is not changed behind its
// owner's back. Default does not look at the namespace: see AppliesTo.
func (p *WorkloadPolicy) Default(obj, old runtime.Object) []*field.Path {
	if p.Spec.RunAsNonRoot == nil || !*p.Spec.RunAsNonRoot {
		return nil
	}
	spec := field.NewPath("spec")
	var set []*field.Path
	switch o := obj.(type) {
	case *WebApp:
		if o == nil {
			return nil
		}
		var before *WebAppSpec
		if w, ok := old.(*WebApp); ok && w != nil {
			before = &w.Spec
		}
		if defaultNonRoot(&o.Spec, before) {
			set = append(set, spec.Child("podSecurityContext", "runAsNonRoot"))
		}
	case *AppStack:
		if o == nil {
			return nil
		}
		before := map[string]*WebAppSpec{}
		if s, ok := old.(*AppStack); ok && s != nil {
			for i := range s.Spec.Apps {
				before[s.Spec.Apps[i].Name] = &s.Spec.Apps[i].WebAppSpec
			}
		}
		for i := range o.Spec.Apps {
			a := &o.Spec.Apps[i]
			if defaultNonRoot(&a.WebAppSpec, before[a.Name]) {
				set = append(set, spec.Child("apps").Key(a.Name).Child("podSecurityContext", "runAsNonRoot"))
			}
		}
	}
	return set
}

// defaultNonRoot sets w's podSecurityContext.runAsNonRoot to true when w
// sets runAsNonRoot nowhere and, against before (nil for a create or a new
// app), its security contexts changed. It says whether it did.
func defaultNonRoot(w, before *WebAppSpec) bool {
	if (w.SecurityContext != nil && w.SecurityContext.RunAsNonRoot != nil) ||
		(w.PodSecurityContext != nil && w.PodSecurityContext.RunAsNonRoot != nil) {
		return false
	}
	if before != nil && equality.Semantic.DeepEqual(before.SecurityContext, w.SecurityContext) &&
		equality.Semantic.DeepEqual(before.PodSecurityContext, w.PodSecurityContext) {
		return false
	}
	if w.PodSecurityContext == nil {
		w.PodSecurityContext = &corev1.PodSecurityContext{}
	}
	w.PodSecurityContext.RunAsNonRoot = ptr.To(true)
	return true
}

func (p *WorkloadPolicy) suffix() string {
	return " (policy " + p.Name + ")"
}

func (p *WorkloadPolicy) checkReplicas(now, before *subject) field.ErrorList {
	if p.Spec.MaxReplicas == nil {
		return nil
	}
	maxReplicas := *p.Spec.MaxReplicas
	detail := fmt.Sprintf("%s allows at most %d%s", p.Spec.Environment, maxReplicas, p.suffix())
	var errs field.ErrorList
	for _, c := range now.counts {
		if c.count > maxReplicas && c.count > before.count(c.key) {
			errs = append(errs, field.Invalid(c.path, c.value, c.detail+detail))
		}
	}
	return errs
}

func (p *WorkloadPolicy) checkImages(now, before *subject) field.ErrorList {
	if len(p.Spec.AllowedImages) == 0 {
		return nil
	}
	var allowed []string
	for _, r := range p.Spec.AllowedImages {
		if r.Prefix != "" {
			allowed = append(allowed, r.Prefix+"*")
		} else {
			allowed = append(allowed, r.Pattern)
		}
	}
	detail := p.Spec.Environment + " allows only images matching " + strings.Join(allowed, ", ") + p.suffix()
	var errs field.ErrorList
	for _, img := range now.images {
		if before.hasImage(img) || p.imageAllowed(img.image) {
			continue
		}
		errs = append(errs, field.Invalid(img.path, img.image, detail))
	}
	return errs
}

// imageAllowed says whether one of the policy's rules allows image. A
// pattern that does not compile allows nothing (the schema refuses such a
// pattern).
func (p *WorkloadPolicy) imageAllowed(image string) bool {
	for _, r := range p.Spec.AllowedImages {
		if r.Prefix != "" && strings.HasPrefix(image, r.Prefix) {
			return true
		}
		if r.Pattern != "" {
			if re, err := regexp.Compile(r.Pattern); err == nil && re.MatchString(image) {
				return true
			}
		}
	}
	return false
}

func (p *WorkloadPolicy) checkResources(now, before *subject) field.ErrorList {
	rule := p.Spec.RequireResources
	if rule == nil {
		return nil
	}
	var required []string
	for _, r := range rule.Requests {
		required = append(required, "requests."+string(r))
	}
	for _, r := range rule.Limits {
		required = append(required, "limits."+string(r))
	}
	detail := p.Spec.Environment + " requires " + strings.Join(required, ", ") + p.suffix()
	var errs field.ErrorList
	for _, h := range now.resources {
		missing := h.missing(rule)
		if len(missing) == 0 {
			continue
		}
		if o, ok := before.resourcesOf(h.key); ok && equality.Semantic.DeepEqual(o.resources, h.resources) {
			continue
		}
		kind, name, _ := strings.Cut(missing[0], ".")
		errs = append(errs, field.Required(h.path.Child("resources", kind, name), detail))
	}
	return errs
}

func (p *WorkloadPolicy) checkNonRoot(now, before *subject) field.ErrorList {
	if p.Spec.RunAsNonRoot == nil || !*p.Spec.RunAsNonRoot {
		return nil
	}
	detail := p.Spec.Environment + " runs containers as non-root only: set runAsNonRoot to true" + p.suffix()
	var errs field.ErrorList
	for _, u := range now.users {
		container, pod := u.runAsNonRoot()
		switch {
		case container != nil && *container, container == nil && pod != nil && *pod:
			continue
		}
		if o, ok := before.usersOf(u.key); ok &&
			equality.Semantic.DeepEqual(o.container, u.container) && equality.Semantic.DeepEqual(o.pod, u.pod) {
			continue
		}
		switch {
		case container != nil:
			errs = append(errs, field.Invalid(u.path.Child("securityContext", "runAsNonRoot"), false, detail))
		case pod != nil:
			errs = append(errs, field.Invalid(u.path.Child("podSecurityContext", "runAsNonRoot"), false, detail))
		default:
			errs = append(errs, field.Required(u.path.Child("securityContext", "runAsNonRoot"), detail))
		}
	}
	return errs
}

// subject is what the rules read of an object, in the order the
// ValidatingAdmissionPolicy reads it. key names a part of the object (the
// object itself, or an AppStack's component) so that an update compares it
// with the same part before.
type subject struct {
	counts    []replicaCount
	images    []namedImage
	resources []resourceHolder
	users     []podUser
}

type replicaCount struct {
	key   string
	path  *field.Path
	value any // the field's value: a count, or a Database's size
	// detail goes before the policy's words, e.g. "3 replicas, ".
	detail string
	count  int32
}

type namedImage struct {
	path  *field.Path
	image string
}

type resourceHolder struct {
	key       string
	path      *field.Path
	resources *corev1.ResourceRequirements
	// defaults are what Steward sets whatever the spec says: a Cache's
	// CPU and memory requests and memory limit, or a Database's size
	// preset when resources is nil.
	defaults corev1.ResourceRequirements
}

type podUser struct {
	key       string
	path      *field.Path
	container *corev1.SecurityContext
	pod       *corev1.PodSecurityContext
}

var (
	cacheDefaults = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: {}},
	}
	presetDefaults = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}},
	}
)

// missing lists the requests and limits the rule requires that h has
// neither set nor from Steward's defaults, as "requests.cpu".
func (h resourceHolder) missing(rule *ResourceRule) []string {
	var set corev1.ResourceRequirements
	if h.resources != nil {
		set = *h.resources
	}
	var missing []string
	for _, r := range rule.Requests {
		if _, ok := set.Requests[r]; !ok {
			if _, ok := h.defaults.Requests[r]; !ok {
				missing = append(missing, "requests."+string(r))
			}
		}
	}
	for _, r := range rule.Limits {
		if _, ok := set.Limits[r]; !ok {
			if _, ok := h.defaults.Limits[r]; !ok {
				missing = append(missing, "limits."+string(r))
			}
		}
	}
	return missing
}

// runAsNonRoot is the container's and the pod's runAsNonRoot, each nil
// when unset.
func (u podUser) runAsNonRoot() (container, pod *bool) {
	if u.container != nil {
		container = u.container.RunAsNonRoot
	}
	if u.pod != nil {
		pod = u.pod.RunAsNonRoot
	}
	return container, pod
}

func (s *subject) count(key string) int32 {
	for _, c := range s.counts {
		if c.key == key {
			return c.count
		}
	}
	return 0
}

func (s *subject) hasImage(img namedImage) bool {
	for _, o := range s.images {
		if o.path.String() == img.path.String() && o.image == img.image {
			return true
		}
	}
	return false
}

func (s *subject) resourcesOf(key string) (resourceHolder, bool) {
	for _, h := range s.resources {
		if h.key == key {
			return h, true
		}
	}
	return resourceHolder{}, false
}

func (s *subject) usersOf(key string) (podUser, bool) {
	for _, u := range s.users {
		if u.key == key {
			return u, true
		}
	}
	return podUser{}, false
}

// subjectOf reads obj, or returns nil for an object no rule reads (nil
// included).
func subjectOf(obj runtime.Object) *subject {
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *WebApp:
		if o == nil {
			return nil
		}
		s := &subject{}
		s.addWebApp("", spec, &o.Spec)
		return s
	case *Cache:
		if o == nil {
			return nil
		}
		s := &subject{}
		s.addCache("", spec, &o.Spec)
		return s
	case *Database:
		if o == nil {
			return nil
		}
		return databaseSubject(o)
	case *AppStack:
		if o == nil {
			return nil
		}
		return appStackSubject(o)
	case *autoscalingv1.Scale:
		if o == nil {
			return nil
		}
		return &subject{counts: []replicaCount{{path: spec.Child("replicas"), value: o.Spec.Replicas, count: o.Spec.Replicas}}}
	}
	return nil
}

// addWebApp adds a WebApp's spec, or an AppStack app's, under key and path.
func (s *subject) addWebApp(key string, path *field.Path, w *WebAppSpec) {
	if w.Replicas != nil {
		s.counts = append(s.counts, replicaCount{key: key + "replicas", path: path.Child("replicas"), value: *w.Replicas, count: *w.Replicas})
	}
	if a := w.Autoscaling; a != nil {
		s.counts = append(s.counts, replicaCount{key: key + "autoscaling", path: path.Child("autoscaling", "maxReplicas"), value: a.MaxReplicas, count: a.MaxReplicas})
	}
	s.images = append(s.images, namedImage{path: path.Child("image"), image: w.Image})
	s.resources = append(s.resources, resourceHolder{key: key, path: path, resources: w.Resources})
	s.users = append(s.users, podUser{key: key, path: path, container: w.SecurityContext, pod: w.PodSecurityContext})
}

// addCache adds a Cache's spec, or an AppStack cache's, under key and path.
func (s *subject) addCache(key string, path *field.Path, c *CacheSpec) {
	if c.Replicas != nil {
		s.counts = append(s.counts, replicaCount{key: key + "replicas", path: path.Child("replicas"), value: *c.Replicas, count: *c.Replicas})
	}
	if c.Image != "" {
		s.images = append(s.images, namedImage{path: path.Child("image"), image: c.Image})
	}
	s.resources = append(s.resources, resourceHolder{key: key, path: path, resources: c.Resources, defaults: cacheDefaults})
}

func databaseSubject(db *Database) *subject {
	spec := field.NewPath("spec")
	s := &subject{}
	if db.Spec.Replicas != nil {
		s.counts = append(s.counts, replicaCount{key: "replicas", path: spec.Child("replicas"), value: *db.Spec.Replicas, count: *db.Spec.Replicas})
	} else {
		size := db.Spec.Size
		if size == "" {
			size = SizeSmall
		}
		n := DatabaseSizeReplicas[size]
		s.counts = append(s.counts, replicaCount{key: "replicas", path: spec.Child("size"), value: string(size), detail: fmt.Sprintf("%d replicas, ", n), count: n})
	}
	if db.Spec.Image != "" {
		s.images = append(s.images, namedImage{path: spec.Child("image"), image: db.Spec.Image})
	}
	h := resourceHolder{path: spec, resources: db.Spec.Resources}
	if db.Spec.Resources == nil {
		h.defaults = presetDefaults
	}
	s.resources = append(s.resources, h)
	return s
}

// appStackSubject reads an AppStack's components as they are written: the
// objects the AppStack creates from them, with its profile's defaults
// filled in, are checked again when they are created.
func appStackSubject(st *AppStack) *subject {
	spec := field.NewPath("spec")
	s := &subject{}
	apps := &subject{}
	for i := range st.Spec.Apps {
		a := &st.Spec.Apps[i]
		apps.addWebApp("apps/"+a.Name+"/", spec.Child("apps").Key(a.Name), &a.WebAppSpec)
	}
	caches := &subject{}
	for i := range st.Spec.Caches {
		c := &st.Spec.Caches[i]
		caches.addCache("caches/"+c.Name+"/", spec.Child("caches").Key(c.Name), &c.CacheSpec)
	}
	var dbCounts []replicaCount
	var dbResources []resourceHolder
	for _, d := range st.Spec.Databases {
		path := spec.Child("databases").Key(d.Name)
		key := "databases/" + d.Name + "/"
		if d.Replicas != nil {
			dbCounts = append(dbCounts, replicaCount{key: key + "replicas", path: path.Child("replicas"), value: *d.Replicas, count: *d.Replicas})
		}
		h := resourceHolder{key: key, path: path, resources: d.Resources}
		if d.Resources == nil {
			h.defaults = presetDefaults
		}
		dbResources = append(dbResources, h)
	}
	// The order of the ValidatingAdmissionPolicy: every app's replicas,
	// then every app's autoscaling, then the caches', then the databases'.
	for _, c := range apps.counts {
		if strings.HasSuffix(c.key, "/replicas") {
			s.counts = append(s.counts, c)
		}
	}
	for _, c := range apps.counts {
		if strings.HasSuffix(c.key, "/autoscaling") {
			s.counts = append(s.counts, c)
		}
	}
	s.counts = append(s.counts, caches.counts...)
	s.counts = append(s.counts, dbCounts...)
	s.images = slices.Concat(apps.images, caches.images)
	s.resources = slices.Concat(apps.resources, caches.resources, dbResources)
	s.users = apps.users
	return s
}
