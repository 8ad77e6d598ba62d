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

// Command funcsize prints, for each directory it is given, the longest
// function of its non-test Go files and the one with the most branches.
// Lines count from the func keyword to the closing brace; branches are
// if, for, range, case and select clauses, && and ||.
//
//	go run ./hack/funcsize internal/controller/*
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

type size struct {
	name            string
	lines, branches int
}

func main() {
	fmt.Printf("%-36s %-40s %6s   %-40s %8s\n", "package", "longest function", "lines", "most branches", "branches")
	for _, dir := range os.Args[1:] {
		longest, branchiest, err := measure(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%-36s %-40s %6d   %-40s %8d\n", dir, longest.name, longest.lines, branchiest.name, branchiest.branches)
	}
}

func measure(dir string) (longest, branchiest size, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return longest, branchiest, err
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return longest, branchiest, fmt.Errorf("parsing %s: %w", path, err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			s := size{
				name:     funcName(fn),
				lines:    fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1,
				branches: branches(fn.Body),
			}
			if s.lines > longest.lines {
				longest = s
			}
			if s.branches > branchiest.branches {
				branchiest = s
			}
		}
	}
	return longest, branchiest, nil
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func branches(body ast.Node) int {
	n := 0
	ast.Inspect(body, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt, *ast.CaseClause, *ast.CommClause:
			n++
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}
