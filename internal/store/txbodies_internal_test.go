package store

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// txRunners are the store's functions that run a body in a transaction: the body is given the
// transaction alone (*sqltx.Tx), and must not capture the store.
var txRunners = map[string]bool{"tx": true, "inTx": true, "snapshot": true, "loadTx": true}

// TestTransactionBodiesCannotReachTheStore holds the rule the types cannot: a function given to
// tx (and inTx, snapshot, loadTx) gets a *sqltx.Tx, which cannot reach the store's read
// cache, its pool or RecordAudit, but a closure could still capture the store from the code
// around it, and a write on the pool or an audit through the writer there waits for the
// transaction itself. So no body may name a *Store: what it needs of the store (the engine, the
// audit chain, the clock) is taken before the transaction begins.
func TestTransactionBodiesCannotReachTheStore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range storeInTxBodies(t, fset, name, src) {
			t.Errorf("%s: a transaction's body reaches the store (take what it needs before the transaction)", p)
		}
	}
}

// TestTheBodyCheckCatchesAStoreInABody proves the check above: it finds each way a body could
// reach the store.
func TestTheBodyCheckCatchesAStoreInABody(t *testing.T) {
	src := `package store
func (s *Store) a(ctx context.Context) error {
	return s.tx(ctx, func(q *sqltx.Tx) error { return s.RecordAudit(ctx, e) })
}
func (s *Store) b(ctx context.Context) error {
	return s.snapshot(ctx, func(q *sqltx.Tx) error { _, err := s.q().Exec(ctx, "x"); return err })
}
func c(ctx context.Context, st *Store) error {
	return st.tx(ctx, func(q *sqltx.Tx) error { return st.signer.x() })
}
func (s *Store) d(ctx context.Context) error {
	other := s
	return s.inTx(ctx, nil, func(q *sqltx.Tx) error { return other.write(ctx) })
}
func (s *Store) e(ctx context.Context) error {
	return s.tx(ctx, s.body)
}
func (s *Store) fine(ctx context.Context) error {
	chain := s.chain()
	return s.tx(ctx, func(q *sqltx.Tx) error { return chain.Append(ctx, q, nil) })
}
`
	got := storeInTxBodies(t, token.NewFileSet(), "x.go", []byte(src))
	if len(got) != 5 {
		t.Fatalf("found %d of 5: %v", len(got), got)
	}
}

// storeInTxBodies lists where, in the Go source src, the body given to a transaction names a
// variable that holds a *Store: the receiver or a parameter of that type, or a variable set from
// one of those.
func storeInTxBodies(t *testing.T, fset *token.FileSet, name string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		stores := storeNames(fn)
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !txRunners[sel.Sel.Name] {
				return true
			}
			body := call.Args[len(call.Args)-1]
			ast.Inspect(body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && stores[id.Name] {
					found = append(found, fmt.Sprintf("%s (%s)", fset.Position(id.Pos()), id.Name))
				}
				return true
			})
			return true
		})
	}
	return found
}

// storeNames are the names that hold a *Store in fn: its receiver and parameters of that type,
// and any variable assigned from one of them.
func storeNames(fn *ast.FuncDecl) map[string]bool {
	names := map[string]bool{}
	add := func(fields *ast.FieldList) {
		if fields == nil {
			return
		}
		for _, fd := range fields.List {
			if isStorePtr(fd.Type) {
				for _, n := range fd.Names {
					names[n.Name] = true
				}
			}
		}
	}
	add(fn.Recv)
	add(fn.Type.Params)
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, r := range as.Rhs {
			if id, ok := r.(*ast.Ident); ok && names[id.Name] {
				if l, ok := as.Lhs[i].(*ast.Ident); ok {
					names[l.Name] = true
				}
			}
		}
		return true
	})
	return names
}

func isStorePtr(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Store"
}
