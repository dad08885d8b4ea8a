package manager_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// publicPackages are the packages an embedder imports, relative to this
// package's directory.
var publicPackages = []string{"..", ".", "assign", "../offsets", "../subscription", "../kafkasasl", "../partition"}

// TestPublicAPINamesNoInternal: no exported declaration of a public
// package (a function's or method's signature, an exported type's
// definition with its exported fields and methods, an exported variable's
// or constant's type and value), no doc comment of one, and no example
// names an internal package: an embedder could neither name nor look up
// what it refers to.
func TestPublicAPINamesNoInternal(t *testing.T) {
	internalNames := internalPackageNames(t)
	docRe := regexp.MustCompile(`\binternal/|\b(` + strings.Join(internalNames, "|") + `)\.[A-Z]`)
	for _, dir := range publicPackages {
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			internal := map[string]string{} // local name -> import path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !strings.Contains(p, "/internal/") {
					continue
				}
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				internal[name] = p
			}
			isTest := strings.HasSuffix(path, "_test.go")
			if isTest {
				// Examples are what embedders copy: they import nothing
				// internal at all.
				if f.Name.Name != "manager" && strings.HasSuffix(f.Name.Name, "_test") && hasExample(f) {
					for name, p := range internal {
						t.Errorf("%s: an example file imports %s (as %s)", path, p, name)
					}
				}
				continue
			}
			c := checker{t: t, fset: fset, internal: internal, docRe: docRe}
			c.file(f)
		}
	}
}

// internalPackageNames lists the package names under ../internal, but
// for those a public package has too (partition): in a doc comment, such
// a name with a selector names the public package.
func internalPackageNames(t *testing.T) []string {
	public := map[string]bool{}
	for _, dir := range publicPackages {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		public[filepath.Base(abs)] = true
	}
	var names []string
	err := filepath.WalkDir("../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../internal" && d.Name() != "testdata" && !public[d.Name()] {
			names = append(names, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func hasExample(f *ast.File) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Example") {
			return true
		}
	}
	return false
}

type checker struct {
	t        *testing.T
	fset     *token.FileSet
	internal map[string]string
	docRe    *regexp.Regexp
}

// expr reports every reference to an internal package in e.
func (c checker) expr(what string, e ast.Node) {
	if e == nil {
		return
	}
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				if p, ok := c.internal[id.Name]; ok {
					c.t.Errorf("%s: %s names %s.%s (package %s)", c.fset.Position(x.Pos()), what, id.Name, x.Sel.Name, p)
				}
			}
		case *ast.StructType:
			// Unexported fields are not part of the API.
			for _, fld := range x.Fields.List {
				if exportedField(fld) {
					c.expr(what, fld.Type)
					c.doc(what, fld.Doc)
				}
			}
			return false
		case *ast.FuncLit:
			return false // a function's body is not its API
		}
		return true
	})
}

func exportedField(f *ast.Field) bool {
	if len(f.Names) == 0 { // embedded
		t := f.Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch x := t.(type) {
		case *ast.Ident:
			return x.IsExported()
		case *ast.SelectorExpr:
			return x.Sel.IsExported()
		}
		return true
	}
	for _, n := range f.Names {
		if n.IsExported() {
			return true
		}
	}
	return false
}

func (c checker) doc(what string, g *ast.CommentGroup) {
	if g == nil {
		return
	}
	if m := c.docRe.FindString(g.Text()); m != "" {
		c.t.Errorf("%s: the doc of %s names an internal package (%q)", c.fset.Position(g.Pos()), what, m)
	}
}

func (c checker) file(f *ast.File) {
	if f.Name.Name != "main" {
		c.doc("package "+f.Name.Name, f.Doc)
	}
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.FuncDecl:
			if !x.Name.IsExported() || (x.Recv != nil && !exportedRecv(x.Recv)) {
				continue
			}
			what := x.Name.Name
			c.doc(what, x.Doc)
			c.expr(what, x.Type)
		case *ast.GenDecl:
			for _, s := range x.Specs {
				switch sp := s.(type) {
				case *ast.TypeSpec:
					if !sp.Name.IsExported() {
						continue
					}
					c.doc(sp.Name.Name, x.Doc)
					c.doc(sp.Name.Name, sp.Doc)
					if sp.Assign.IsValid() {
						c.expr("alias "+sp.Name.Name, sp.Type)
						continue
					}
					c.expr(sp.Name.Name, sp.Type)
				case *ast.ValueSpec:
					for i, n := range sp.Names {
						if !n.IsExported() {
							continue
						}
						c.doc(n.Name, x.Doc)
						c.doc(n.Name, sp.Doc)
						c.expr(n.Name, sp.Type)
						if i < len(sp.Values) {
							c.expr(n.Name, sp.Values[i])
						}
					}
				}
			}
		}
	}
}

func exportedRecv(r *ast.FieldList) bool {
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
