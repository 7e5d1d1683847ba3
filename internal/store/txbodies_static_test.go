package store_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The rule of a transaction's body, checked on the type-checked code (docs/architecture.md,
// "Transactions"). Go cannot keep a closure from capturing the store, so this test is what keeps
// a body from calling back into it.
//
// A body is a function given a transaction's handle: a function whose parameters include
// *sqltx.Tx, or a pointer to a struct of this module that holds one (bulkload's Bulk and
// Snapshot). It may be given, and may capture, only values from which the connection pool cannot
// be reached. A type reaches the pool when it is database/sql's DB, Conn or Stmt, or holds one:
//   - through a pointer, an array, a slice, a map's keys or values, a channel's elements, or the
//     fields of a struct (unexported ones too: the type's methods use them);
//   - as an interface with methods that some type of the program reaching the pool implements
//     (the empty interface has nothing to call: a body that asserts it to a type reaching the
//     pool breaks the rule there);
//   - as a function, when some function value of its type made in the program captures a value
//     reaching the pool, or is a method value of one (a function's captures are not in its type,
//     so every function of the type answers for it).
//
// The walk stops at the handle: *sqltx.Tx runs everything in its transaction, which is what a
// body is for. Types from outside this module are taken at their word: only database/sql's are
// the pool. The program is the module's code, tests apart.
//
// Every function literal that is a body is checked (its captured variables, package variables
// included, its parameters and its type assertions), and every named function or method value
// passed where a runner takes a body (its parameters, and a method value's receiver).

const (
	modulePath = "backoffice"
	sqltxPath  = modulePath + "/internal/sqltx"
)

// poolTypes are database/sql's types whose methods run on the pool.
var poolTypes = []string{"DB", "Conn", "Stmt"}

// bodyRule checks the bodies of the packages it was made of.
type bodyRule struct {
	fset    *token.FileSet
	named   []*types.Named // every named type of the program, for the interfaces
	funcs   []funcValue    // every function value the program makes, for the function types
	reaches map[types.Type]bool
	// visiting are the types being walked, visitingSig the function types.
	visiting    map[types.Type]bool
	visitingSig map[string]bool
	// bySig is reaches for function types, which go/types does not share between identical ones.
	bySig map[string]step
	// via is, for a type that reaches the pool, the next step on its way there.
	via map[types.Type]step
}

// step is a type on the way to the pool, and how it is held.
type step struct {
	how  string
	next types.Type
}

// funcValue is a function value made in the program: a literal and what it captures, or a
// method value and its receiver.
type funcValue struct {
	pos      token.Pos
	sig      *types.Signature
	captured []*types.Var
	recv     types.Type
}

func newBodyRule(fset *token.FileSet, pkgs []*packages.Package) *bodyRule {
	r := &bodyRule{fset: fset, reaches: map[types.Type]bool{}, bySig: map[string]step{}, via: map[types.Type]step{},
		visiting: map[types.Type]bool{}, visitingSig: map[string]bool{}}
	seen := map[*types.Package]bool{}
	var add func(p *types.Package)
	add = func(p *types.Package) {
		if seen[p] {
			return
		}
		seen[p] = true
		scope := p.Scope()
		for _, name := range scope.Names() {
			if tn, ok := scope.Lookup(name).(*types.TypeName); ok {
				if n, ok := tn.Type().(*types.Named); ok && n.TypeParams() == nil {
					r.named = append(r.named, n)
				}
			}
		}
		for _, imp := range p.Imports() {
			add(imp)
		}
	}
	for _, p := range pkgs {
		add(p.Types)
		for _, f := range p.Syntax {
			r.funcs = append(r.funcs, funcValues(p.TypesInfo, f)...)
		}
	}
	return r
}

// funcValues are the function values file makes.
func funcValues(info *types.Info, file *ast.File) []funcValue {
	var out []funcValue
	called := map[ast.Expr]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			called[ast.Unparen(n.Fun)] = true
		case *ast.FuncLit:
			out = append(out, funcValue{pos: n.Pos(), sig: info.TypeOf(n).(*types.Signature), captured: captures(info, n)})
		case *ast.SelectorExpr:
			if sel := info.Selections[n]; sel != nil && sel.Kind() == types.MethodVal && !called[n] {
				out = append(out, funcValue{pos: n.Pos(), sig: info.TypeOf(n).(*types.Signature), recv: sel.Recv()})
			}
		}
		return true
	})
	return out
}

// captures are the variables lit uses that are declared outside it, fields apart.
func captures(info *types.Info, lit *ast.FuncLit) []*types.Var {
	var out []*types.Var
	seen := map[*types.Var]bool{}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		v, ok := info.Uses[id].(*types.Var)
		if ok && !v.IsField() && !seen[v] && (v.Pos() < lit.Pos() || v.Pos() >= lit.End()) {
			seen[v] = true
			out = append(out, v)
		}
		return true
	})
	return out
}

// isHandle tells a transaction's handle: *sqltx.Tx, or a pointer to a struct of this module
// holding one.
func isHandle(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	if isTx(t) {
		return true
	}
	n, ok := p.Elem().(*types.Named)
	if !ok || !inModule(n) {
		return false
	}
	s, ok := n.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for f := range s.Fields() {
		if isHandle(f.Type()) {
			return true
		}
	}
	return false
}

// isTx tells *sqltx.Tx.
func isTx(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := p.Elem().(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == sqltxPath && n.Obj().Name() == "Tx"
}

// isBody tells a function type that takes a transaction's handle.
func isBody(t types.Type) bool {
	sig, ok := t.Underlying().(*types.Signature)
	if !ok {
		return false
	}
	for p := range sig.Params().Variables() {
		if isHandle(p.Type()) {
			return true
		}
	}
	return false
}

func inModule(n *types.Named) bool {
	p := n.Obj().Pkg()
	return p != nil && (p.Path() == modulePath || strings.HasPrefix(p.Path(), modulePath+"/"))
}

// reachesPool tells whether a value of type t reaches the pool (see the rule above).
func (r *bodyRule) reachesPool(t types.Type) bool {
	if v, ok := r.reaches[t]; ok {
		return v
	}
	if r.visiting[t] {
		return false // a type that holds itself reaches the pool only by another way
	}
	r.visiting[t] = true
	v := r.walk(t)
	delete(r.visiting, t)
	r.settle(func() { r.reaches[t] = v }, v)
	return v
}

// settle keeps a result: a type found to reach the pool, or one found not to by a walk that
// passed no type still being walked (whose answer was taken as no while it was).
func (r *bodyRule) settle(keep func(), reaches bool) {
	if reaches || len(r.visiting) == 0 && len(r.visitingSig) == 0 {
		keep()
	}
}

func (r *bodyRule) walk(t types.Type) bool {
	if isTx(t) {
		return false // the handle
	}
	through := func(how string, u types.Type) bool {
		if !r.reachesPool(u) {
			return false
		}
		r.via[t] = step{how, u}
		return true
	}
	switch t := t.(type) {
	case *types.Alias:
		return through("", types.Unalias(t))
	case *types.Named:
		if pkg := t.Obj().Pkg(); pkg != nil && pkg.Path() == "database/sql" && slices.Contains(poolTypes, t.Obj().Name()) {
			return true
		}
		if _, ok := t.Underlying().(*types.Interface); !ok && !inModule(t) {
			return false
		}
		return through("=", t.Underlying())
	case *types.Pointer:
		return through("", t.Elem())
	case *types.Slice:
		return through("", t.Elem())
	case *types.Array:
		return through("", t.Elem())
	case *types.Chan:
		return through("", t.Elem())
	case *types.Map:
		return through("", t.Key()) || through("", t.Elem())
	case *types.Struct:
		for f := range t.Fields() {
			if through("field "+f.Name()+" ", f.Type()) {
				return true
			}
		}
		return false
	case *types.Signature:
		how, u := r.madeReachingPool(t)
		return u != nil && through(how, u)
	case *types.Interface:
		u := r.implementedByPool(t)
		return u != nil && through("implemented by ", u)
	case *types.TypeParam:
		return through("", t.Constraint())
	}
	return false
}

// where is pos as file:line.
func (r *bodyRule) where(pos token.Pos) string { return bodyLine(r.fset, pos) }

// path is how t reaches the pool, step by step.
func (r *bodyRule) path(t types.Type) string {
	var steps []string
	for {
		s, ok := r.via[t]
		if !ok || len(steps) > 20 {
			return strings.Join(steps, " → ")
		}
		if _, named := s.next.(*types.Named); named || s.how != "" && s.how != "=" {
			steps = append(steps, s.how+s.next.String())
		}
		t = s.next
	}
}

// madeReachingPool finds, for a function type, a value of it made in the program that captures a
// value reaching the pool, or is a method value of one: how, and that value's type.
func (r *bodyRule) madeReachingPool(sig *types.Signature) (string, types.Type) {
	key := types.TypeString(sig, nil)
	if v, ok := r.bySig[key]; ok {
		return v.how, v.next
	}
	if r.visitingSig[key] {
		return "", nil // see reachesPool
	}
	r.visitingSig[key] = true
	how, t := r.madeReaching(sig)
	delete(r.visitingSig, key)
	r.settle(func() { r.bySig[key] = step{how, t} }, t != nil)
	return how, t
}

func (r *bodyRule) madeReaching(sig *types.Signature) (string, types.Type) {
	for _, f := range r.funcs {
		if !types.Identical(f.sig, sig) {
			continue
		}
		if f.recv != nil && r.reachesPool(f.recv) {
			return "a method value at " + r.where(f.pos) + " of ", f.recv
		}
		for _, v := range f.captured {
			if r.reachesPool(v.Type()) {
				return "a function at " + r.where(f.pos) + " capturing " + v.Name() + " ", v.Type()
			}
		}
	}
	return "", nil
}

// implementedByPool finds a named type of the program reaching the pool that implements iface,
// as a value or through a pointer.
func (r *bodyRule) implementedByPool(iface *types.Interface) types.Type {
	if iface.Empty() {
		return nil
	}
	for _, n := range r.named {
		if _, ok := n.Underlying().(*types.Interface); ok {
			continue
		}
		for _, t := range []types.Type{n, types.NewPointer(n)} {
			if types.Implements(t, iface) && r.reachesPool(t) {
				return t
			}
		}
	}
	return nil
}

// violations are the bodies in pkgs breaking the rule, a line each: file:line: what.
func (r *bodyRule) violations(pkgs []*packages.Package) []string {
	var out []string
	report := func(pos token.Pos, format string, args ...any) {
		out = append(out, r.where(pos)+": "+fmt.Sprintf(format, args...))
	}
	for _, pkg := range pkgs {
		info := pkg.TypesInfo
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					if isBody(info.TypeOf(n)) {
						r.checkLiteral(info, n, report)
					}
				case *ast.CallExpr:
					r.checkNamedBodies(info, n, report)
				}
				return true
			})
		}
	}
	return out
}

// checkLiteral checks a body written in place: its parameters, what it captures, and what it
// asserts an interface to.
func (r *bodyRule) checkLiteral(info *types.Info, lit *ast.FuncLit, report func(token.Pos, string, ...any)) {
	r.checkParams(info.TypeOf(lit).(*types.Signature), lit.Pos(), "body", report)
	for _, v := range captures(info, lit) {
		if r.reachesPool(v.Type()) {
			report(firstUse(info, lit, v), "a transaction's body captures %s (%s), which reaches the connection pool: %s", v.Name(), v.Type(), r.path(v.Type()))
		}
	}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if a, ok := n.(*ast.TypeAssertExpr); ok && a.Type != nil && r.reachesPool(info.TypeOf(a.Type)) {
			report(a.Pos(), "a transaction's body asserts a value to %s, which reaches the connection pool", info.TypeOf(a.Type))
		}
		if c, ok := n.(*ast.CaseClause); ok {
			for _, e := range c.List {
				if tv, ok := info.Types[e]; ok && tv.IsType() && r.reachesPool(tv.Type) {
					report(e.Pos(), "a transaction's body switches a value to %s, which reaches the connection pool", tv.Type)
				}
			}
		}
		return true
	})
}

// firstUse is where lit first uses v.
func firstUse(info *types.Info, lit *ast.FuncLit, v *types.Var) token.Pos {
	pos := lit.Pos()
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && info.Uses[id] == v && pos == lit.Pos() {
			pos = id.Pos()
		}
		return pos == lit.Pos()
	})
	return pos
}

// checkNamedBodies checks the named functions and method values call passes where a body is
// taken.
func (r *bodyRule) checkNamedBodies(info *types.Info, call *ast.CallExpr, report func(token.Pos, string, ...any)) {
	sig, ok := info.TypeOf(call.Fun).(*types.Signature)
	if !ok {
		return
	}
	for i, arg := range call.Args {
		if i >= sig.Params().Len() || !isBody(sig.Params().At(i).Type()) {
			continue
		}
		var id *ast.Ident
		switch a := ast.Unparen(arg).(type) {
		case *ast.Ident:
			id = a
		case *ast.SelectorExpr:
			id = a.Sel
			if sel := info.Selections[a]; sel != nil && sel.Kind() == types.MethodVal && r.reachesPool(sel.Recv()) {
				report(arg.Pos(), "a method value of %s, which reaches the connection pool, is a transaction's body", sel.Recv())
			}
		}
		if id == nil {
			continue
		}
		if fn, ok := info.Uses[id].(*types.Func); ok {
			r.checkParams(fn.Type().(*types.Signature), arg.Pos(), fn.Name(), report)
		}
	}
}

// checkParams checks what a body is given.
func (r *bodyRule) checkParams(sig *types.Signature, pos token.Pos, name string, report func(token.Pos, string, ...any)) {
	for p := range sig.Params().Variables() {
		if r.reachesPool(p.Type()) {
			report(pos, "%s is given %s (%s), which reaches the connection pool: %s", name, p.Name(), p.Type(), r.path(p.Type()))
		}
	}
}

// loadBodies loads and type-checks patterns, from dir.
func loadBodies(t *testing.T, dir string, patterns ...string) (*token.FileSet, []*packages.Package) {
	t.Helper()
	fset := token.NewFileSet()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedImports,
		Dir:  dir,
		Fset: fset,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the packages do not type-check")
	}
	return fset, pkgs
}

// No transaction's body of the service can reach the connection pool: every body of the module's
// packages keeps the rule.
func TestTransactionBodiesReachNoPool(t *testing.T) {
	fset, pkgs := loadBodies(t, ".", modulePath+"/...")
	if v := newBodyRule(fset, pkgs).violations(pkgs); len(v) > 0 {
		t.Errorf("transaction bodies that reach the connection pool (docs/architecture.md, \"Transactions\"):\n%s", strings.Join(v, "\n"))
	}
}

// The check names each body of testdata/txbodies that breaks the rule, at its line marked "want",
// and no other.
func TestTransactionBodiesCheckFindsBreaks(t *testing.T) {
	fset, pkgs := loadBodies(t, ".", "./testdata/txbodies")
	var want []string
	for _, f := range pkgs[0].Syntax {
		for _, g := range f.Comments {
			for _, c := range g.List {
				if strings.HasPrefix(c.Text, "// want") {
					want = append(want, bodyLine(fset, c.Pos()))
				}
			}
		}
	}
	var got []string
	for _, v := range newBodyRule(fset, pkgs).violations(pkgs) {
		got = append(got, v[:strings.Index(v, ": ")])
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the check named lines %v, want %v", got, want)
	}
}

// bodyLine is pos as the check names it: file:line.
func bodyLine(fset *token.FileSet, pos token.Pos) string {
	p := fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
