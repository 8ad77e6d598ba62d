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

package v1alpha1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	samplesDir  = filepath.Join("..", "..", "config", "samples")
	examplesDir = filepath.Join("..", "..", "docs", "examples")
)

// TestSamples creates every sample of config/samples, which the docs and the
// demo use, with strict field validation: a misspelt or unknown field fails
// as surely as a value the admission rules reject. Every sample file must be
// listed in the kustomization.
func TestSamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &kustomization); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(kustomization.Resources, name) {
			t.Errorf("%s is not listed in config/samples/kustomization.yaml", name)
		}
	}
	for _, file := range kustomization.Resources {
		raw, err := os.ReadFile(filepath.Join(samplesDir, file))
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		obj.SetNamespace(ns)
		if err := k8s.Create(context.Background(), obj, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

// TestExamples creates every object of docs/examples with strict field
// validation, as TestSamples does for config/samples. The examples are not
// applied by the demo: a Restore among them would run.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no examples in %s", examplesDir)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for i := 0; ; i++ {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s, document %d: %v", filepath.Base(f), i, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			obj.SetNamespace(ns)
			if err := k8s.Create(context.Background(), obj, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s, document %d: %v", filepath.Base(f), i, err)
			}
		}
	}
}
