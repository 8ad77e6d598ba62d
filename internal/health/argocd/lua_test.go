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

package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// kinds are Steward's kinds; each has its own key in argocd-cm.
var kinds = []string{"WebApp", "Database", "Cache", "Backup", "Restore", "AppConfig", "AppStack"}

const (
	// chartDir is the Helm chart, and scriptFile the script in it, as its
	// template reads it with .Files.Get.
	chartDir   = "../../../charts/steward"
	scriptFile = "files/argocd/health.lua"
	// snippetFile is the script as a merge patch for argocd-cm.
	snippetFile = "../../../config/argocd/argocd-cm-health.yaml"
)

// healthKey is the argocd-cm key of a kind's health script.
func healthKey(kind string) string {
	return "resource.customizations.health.steward.dev_" + kind
}

// scripts are the argocd-cm keys and their scripts, as the chart renders
// them: the chart's one script under every kind's key.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(chartDir, scriptFile))
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for _, kind := range kinds {
		data[healthKey(kind)] = string(script)
	}
	return data
}

// health is what a script returns: one of Argo CD's health statuses and a
// message.
type health struct {
	Status, Message string
}

// argoHealthStatuses are the statuses Argo CD accepts from a script; it
// turns any other into Unknown.
var argoHealthStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// evaluate runs a health script as Argo CD's controller does (util/lua in
// argo-cd): gopher-lua without its standard libraries except package, base
// and table (Argo CD adds a reduced os library, which the script does not
// use), the object as the global obj, one second at most, and a table
// with status and message as the result.
func evaluate(script string, obj map[string]any) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return health{}, fmt.Errorf("opening the Lua library %q: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, fmt.Errorf("running the script: %w", err)
	}
	result, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	status, ok := result.RawGetString("status").(lua.LString)
	if !ok || !argoHealthStatuses[string(status)] {
		return health{}, fmt.Errorf("the script returned the status %v, which Argo CD turns into Unknown", result.RawGetString("status"))
	}
	var message string
	switch m := result.RawGetString("message").(type) {
	case lua.LString:
		message = string(m)
	case *lua.LNilType:
	default:
		return health{}, fmt.Errorf("the script returned the message %v (%s), not a string", m, m.Type())
	}
	return health{Status: string(status), Message: message}, nil
}

// toLua converts an object decoded from JSON, as Argo CD's cache holds it
// (integers as int64), into Lua values the way Argo CD does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetString(k, toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
