// Package surface holds no code: its tests keep what the module's packages export free of
// mutable state. An exported package variable is a seam: any importer, a test most often, can
// swap it under every other user in the process.
package surface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// No package of the module declares an exported variable, but for sentinel errors: a value
// callers read is a constant, a function (returning a copy where it is a slice or a map), or an
// option of what uses it; what tests need changed goes through a parameter, an option or the
// package's export_test.go. Embedded files follow the same rule: their variable stays unexported
// and a function hands out the content.
func TestNoExportedPackageVariable(t *testing.T) {
	files := moduleSources(t, filepath.Join("..", ".."))
	if got := exportedVariables(files); len(got) > 0 {
		t.Errorf("exported package variables (make each a constant, a function or an option; see this test's doc):\n%s", strings.Join(got, "\n"))
	}
}

// The check itself, on sources made for it: every form of exported variable is reported, in a
// block or alone, several names at once, a value or none; sentinel errors, unexported and blank
// names, test files and testdata are not.
func TestExportedVariablesTellsSentinelsFromSeams(t *testing.T) {
	files := parseSources(t, map[string]string{
		"internal/a/a.go": `package a
import ("errors"; "fmt"; "embed"; "other")
var ErrPlain = errors.New("plain")
var ErrWrapped = fmt.Errorf("wrapped: %w", ErrPlain)
var ErrAlias = other.ErrThing
var (
	ErrGrouped = errors.New("grouped")
	Table      = map[string]int{"x": 1}
)
var List = []string{"a"}
var Answer = &other.Error{Code: "x"}
var ErrNotSentinel = &other.Error{Code: "x"}
var ErrAliasOfSeam = other.Seam
var Counter int
var One, two, Three = 1, 2, 3
//go:embed x
var Files embed.FS
var hidden = []string{"h"}
var _ = List
const Constant = 1
func F() {}
`,
		"internal/a/a_test.go":         "package a\nvar InTests = 1\n",
		"internal/a/testdata/t.go":     "package t\nvar InTestdata = 1\n",
		"internal/a/.hidden/h.go":      "package h\nvar InHidden = 1\n",
		"client/client.go":             "package client\nvar InClient = []int{1}\n",
		"cmd/backoffice/main.go":       "package main\nvar InMain = 1\n",
		"internal/b/b.go":              "package b\nfunc F() { var Local = 1; _ = Local }\n",
		"internal/c/notgo.txt":         "var NotGo = 1",
		"internal/d/sentinels.go":      "package d\nimport \"errors\"\nvar ErrOnly = errors.New(\"only\")\n",
		"internal/d/errors_grouped.go": "package d\nimport \"errors\"\nvar (\n\tErrOne = errors.New(\"one\")\n\tErrTwo = errors.New(\"two\")\n)\n",
		"internal/e/e.go":              "package e\nvar ErrNoValue error\n",
	})
	want := []string{
		"client/client.go: InClient",
		"cmd/backoffice/main.go: InMain",
		"internal/a/a.go: Answer",
		"internal/a/a.go: Counter",
		"internal/a/a.go: ErrAliasOfSeam",
		"internal/a/a.go: ErrNotSentinel",
		"internal/a/a.go: Files",
		"internal/a/a.go: List",
		"internal/a/a.go: One",
		"internal/a/a.go: Table",
		"internal/a/a.go: Three",
		"internal/e/e.go: ErrNoValue",
	}
	if diff := cmp.Diff(want, exportedVariables(files)); diff != "" {
		t.Errorf("exported variables (-want +got):\n%s", diff)
	}
}

// exportedVariables lists, as "path: Name" in order, every exported package variable of the
// non-test files that is not a sentinel error.
func exportedVariables(files map[string]*ast.File) []string {
	var out []string
	for path, f := range files {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.IsExported() && !sentinelError(name.Name, valueAt(vs, i)) {
						out = append(out, filepath.ToSlash(path)+": "+name.Name)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// valueAt is the expression the i-th name of vs is given, or nil.
func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// sentinelError tells an error variable made once to be matched with errors.Is: named Err…, made
// by errors.New or fmt.Errorf, or another package's sentinel under this package's name. Its
// value has no field to change; that it could be reassigned is the price of the idiom every Go
// caller expects (io.EOF).
func sentinelError(name string, value ast.Expr) bool {
	if !strings.HasPrefix(name, "Err") {
		return false
	}
	switch v := value.(type) {
	case *ast.CallExpr:
		fun := qualified(v.Fun)
		return fun == "errors.New" || fun == "fmt.Errorf"
	case *ast.SelectorExpr:
		return strings.HasPrefix(v.Sel.Name, "Err")
	}
	return false
}

// qualified spells a package-qualified name (pkg.Name), or "" for any other expression.
func qualified(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return pkg.Name + "." + sel.Sel.Name
}

// moduleSources parses every non-test Go file of the module at root, by path relative to it;
// as the go command does, it skips testdata and folders whose name starts with "." or "_".
func moduleSources(t *testing.T, root string) map[string]*ast.File {
	t.Helper()
	sources := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		sources[filepath.ToSlash(rel)] = string(src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sources["internal/surface/variables_test.go"]; !ok {
		t.Fatalf("%s is not the module's root: no internal/surface/variables_test.go under it", root)
	}
	return parseSources(t, sources)
}

// parseSources parses the Go files of sources, by path, leaving out test files and what the go
// command leaves out of a package (testdata, folders starting with "." or "_").
func parseSources(t *testing.T, sources map[string]string) map[string]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for path, src := range sources {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || ignoredByGo(path) {
			continue
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[path] = f
	}
	return files
}

// ignoredByGo reports whether a folder on path is one the go command does not build.
func ignoredByGo(path string) bool {
	dirs := strings.Split(path, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if d == "testdata" || strings.HasPrefix(d, ".") || strings.HasPrefix(d, "_") {
			return true
		}
	}
	return false
}
