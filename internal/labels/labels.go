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

// Package labels defines the labels Steward puts on the objects it manages.
// The operator's cache selects on ManagedBy, so every child must carry it.
package labels

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

const (
	// Name is the application's name.
	Name = "app.kubernetes.io/name"
	// Instance identifies this instance of the application.
	Instance = "app.kubernetes.io/instance"
	// Component is the role within the application: webapp, database, ...
	Component = "app.kubernetes.io/component"
	// ManagedByKey names the tool that manages the object.
	ManagedByKey = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByKey on every object Steward manages.
	ManagedBy = "steward"
	// WebApp selects the pods of one WebApp.
	WebApp = "steward.dev/webapp"
	// Cache selects the pods of one Cache.
	Cache = "steward.dev/cache"
)

// Common are the app.kubernetes.io labels of a child of the named object.
func Common(name, component string) map[string]string {
	return map[string]string{
		Name:         name,
		Instance:     name,
		Component:    component,
		ManagedByKey: ManagedBy,
	}
}

// ManagedSelector selects the objects Steward manages. The operator's cache
// watches owned kinds through it, so unrelated objects never enter memory.
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(ManagedByKey, selection.Equals, []string{ManagedBy})
	if err != nil {
		panic(err) // constant input
	}
	return labels.NewSelector().Add(*req)
}
