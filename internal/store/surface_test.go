package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// storeImport is the store's import path, which a file must import to call its methods directly.
const storeImport = "backoffice/internal/store"

// The store's exported methods are its own and those of the audit trail it embeds (*auditlog.Log),
// each declared in its package's own files: a file of either package, or one that imports it,
// calls them directly.
var storeSurfaces = []struct{ dir, receiver, path string }{
	{"internal/store", "Store", storeImport},
	{"internal/auditlog", "Log", "backoffice/internal/auditlog"},
}

// Every exported method of *Store has a caller in the service's own code: a method only tests
// call is a test hook in the production API, and belongs in export_test.go (or in an option of
// Open, when production has a use for it). See unusedStoreMethods for how a use is told.
func TestEveryStoreMethodHasAProductionCaller(t *testing.T) {
	files := moduleFiles(t, filepath.Join("..", ".."))
	if unused := unusedStoreMethods(files); len(unused) > 0 {
		t.Errorf("exported methods of *Store that only tests call: %v; unexport or remove them, or move them to export_test.go", unused)
	}
}

// The check itself, on sources made for it: a method only a test calls is reported; a call, a
// method value, a method expression and a consumer's interface each count as a use; a call from
// test support (internal/testdb) does not, nor a call in a file that does not import the store.
func TestUnusedStoreMethodsTellsEachKindOfUse(t *testing.T) {
	store := `package store
type Store struct{}
func (s *Store) Called() {}
func (s *Store) Valued() {}
func (s *Store) Expressed(int) {}
func (s *Store) Consumed(a, b int) (int, error) { return 0, nil }
func (s *Store) OnlyTests() {}
func (s *Store) OnlyTestSupport() {}
func (s *Store) SameNameElsewhere() {}
func (s *Store) WrongArity(a int) error { return nil }
func (s *Store) internal() {}
func (s Store) ByValue() {}
`
	files := map[string]string{
		"internal/store/store.go": store,
		"internal/auditlog/log.go": `package auditlog
type Log struct{}
func (s *Log) Embedded() {}
func (s *Log) EmbeddedOnlyTests() {}
func (s *Log) EmbeddedCalledInside() {}
func (s *Log) inside() { s.EmbeddedCalledInside() }
`,
		"internal/app/app.go": `package app
import "backoffice/internal/store"
func run(st *store.Store) {
	st.Called()
	st.Embedded()
	f := st.Valued
	g := (*store.Store).Expressed
	_, _ = f, g
}`,
		"internal/api/api.go": `package api
type Store interface {
	Consumed(a, b int) (int, error)
	WrongArity() error
}`,
		"internal/app/app_test.go": `package app
import "backoffice/internal/store"
func use(st *store.Store) { st.OnlyTests(); st.EmbeddedOnlyTests() }`,
		"internal/testdb/testdb.go": `package testdb
import "backoffice/internal/store"
func use(st *store.Store) { st.OnlyTestSupport() }`,
		"internal/push/push.go": `package push
type other struct{}
func (other) SameNameElsewhere() {}
func use(o other) { o.SameNameElsewhere() }`,
	}
	parsed := map[string]*ast.File{}
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
	}
	want := []string{"EmbeddedOnlyTests", "OnlyTestSupport", "OnlyTests", "SameNameElsewhere", "WrongArity"}
	if got := unusedStoreMethods(parsed); !slices.Equal(got, want) {
		t.Errorf("unused = %v, want %v", got, want)
	}
}

// unusedStoreMethods lists, sorted, the exported methods of *Store (declared in internal/store's
// own files, or of *auditlog.Log in internal/auditlog's: see storeSurfaces) that the service's
// code never uses. The service's code is every .go file of the
// module but tests: not *_test.go, nor test support (internal/testdb, and packages whose name
// ends in "test", such as oauthtest). It reads the syntax alone, so it decides by name, as
// precisely as the syntax allows:
//
//   - a file of package store (internal/store itself) or auditlog uses M by any selector .M;
//   - another file uses M by a selector .M (a call x.M(…), a method value x.M, a method
//     expression (*store.Store).M) only if it imports the store or auditlog: a file that cannot
//     name their types cannot be calling them directly;
//   - any file uses M by declaring an interface with a method M taking and returning as many
//     values as the store's M: a consumer's interface that *Store satisfies (api.Store,
//     push.Store, auth.Lookup), through which the method is called without the store's name.
//
// A same-named method of another type, called from a file that imports the store, still counts
// as a use: the check can miss a method nobody calls, never report one that is called.
func unusedStoreMethods(files map[string]*ast.File) []string {
	methods := map[string]*ast.FuncType{}
	for name, f := range files {
		surface, ok := surfaceOf(name)
		if !ok || isTestCode(name, f) {
			continue
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.IsExported() && isPointerTo(fn.Recv, surface.receiver) {
				methods[fn.Name.Name] = fn.Type
			}
		}
	}
	used := map[string]bool{}
	for name, f := range files {
		if isTestCode(name, f) {
			continue
		}
		_, inside := surfaceOf(name)
		selectors := inside || importsASurface(f)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if selectors {
					used[n.Sel.Name] = true
				}
			case *ast.InterfaceType:
				for _, m := range n.Methods.List {
					ft, ok := m.Type.(*ast.FuncType)
					for _, id := range m.Names {
						if st, known := methods[id.Name]; ok && known && sameArity(st, ft) {
							used[id.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	var unused []string
	for m := range methods {
		if !used[m] {
			unused = append(unused, m)
		}
	}
	slices.Sort(unused)
	return unused
}

// surfaceOf is the surface whose package the file is of (not of its sub-packages), if any.
func surfaceOf(name string) (surface struct{ dir, receiver, path string }, ok bool) {
	for _, s := range storeSurfaces {
		if filepath.ToSlash(filepath.Dir(name)) == s.dir {
			return s, true
		}
	}
	return surface, false
}

// importsASurface tells a file that imports the store or auditlog.
func importsASurface(f *ast.File) bool {
	for _, s := range storeSurfaces {
		if imports(f, s.path) {
			return true
		}
	}
	return false
}

// isTestCode tells a test file, or a file of a package that only tests use.
func isTestCode(name string, f *ast.File) bool {
	name = filepath.ToSlash(name)
	return strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "internal/testdb/") ||
		strings.HasSuffix(f.Name.Name, "test")
}

// isPointerTo tells a receiver list of *receiver.
func isPointerTo(recv *ast.FieldList, receiver string) bool {
	if recv == nil || len(recv.List) != 1 {
		return false
	}
	star, ok := recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == receiver
}

func imports(f *ast.File, path string) bool {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == path {
			return true
		}
	}
	return false
}

// sameArity tells whether two function types take and return as many values.
func sameArity(a, b *ast.FuncType) bool {
	return a.Params.NumFields() == b.Params.NumFields() && a.Results.NumFields() == b.Results.NumFields()
}

// moduleFiles parses every .go file under root (the module), keyed by its path from root;
// hidden directories and testdata are left out, as the go command leaves them out.
func moduleFiles(t *testing.T, root string) map[string]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[rel] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files[filepath.Join("internal", "store", "store.go")]; !ok {
		t.Fatalf("%s is not the module's root: no internal/store/store.go under it", root)
	}
	return files
}
