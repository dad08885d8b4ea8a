package zkgroup

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sentinel is one exported package-level Err* variable of the module.
type sentinel struct {
	dir    string // package directory relative to the module root, "." for the root
	pkg    string // package name
	name   string
	public bool      // importable from outside the module
	text   string    // the errors.New text, "" when not declared with errors.New
	sel    [2]string // for `= x.Name`: x's import path and Name
	pos    token.Position
}

func (s sentinel) key() string { return s.dir + "." + s.name }

// doc is how docs/errors.md names it: "manager.ErrConfig", "zkgroup.ErrConfig".
func (s sentinel) doc() string { return s.pkg + "." + s.name }

// TestOneSentinelPerMeaning holds the rules of docs/errors.md over every
// exported Err* variable of the module (tests and the bench module
// aside): no ErrInvalid* spelling; every ErrConfig is this package's
// value; public sentinels of one name are one value; each errors.New text starts with its package's name and, that
// prefix aside, is unique (one sentinel per meaning); only ErrConfig says
// "invalid" or "bad"; a public package never re-exports an internal
// package's sentinel (go doc would name the internal package); and every
// public sentinel and error type is listed in docs/errors.md.
func TestOneSentinelPerMeaning(t *testing.T) {
	sentinels, types := scanModule(t)
	if len(sentinels) < 30 {
		t.Fatalf("found only %d sentinels: the scan is broken", len(sentinels))
	}
	byText := map[string]sentinel{}
	for _, s := range sentinels {
		if strings.HasPrefix(s.name, "ErrInvalid") {
			t.Errorf("%s: %s: an invalid config or argument is ErrConfig (= zkgroup.ErrConfig), not a spelling of its own", s.pos, s.name)
		}
		if s.name == "ErrConfig" && s.dir != "." && s.sel != [2]string{"github.com/zkgroup/zkgroup", "ErrConfig"} {
			t.Errorf("%s: %s.ErrConfig must be declared as zkgroup.ErrConfig, the module's one value for it", s.pos, s.pkg)
		}
		if s.public && strings.Contains(s.sel[0], "/internal/") {
			t.Errorf("%s: public %s = %s.%s names an internal package in go doc and cannot be documented there",
				s.pos, s.doc(), s.sel[0], s.sel[1])
		}
		if s.text == "" {
			continue
		}
		rest, ok := strings.CutPrefix(s.text, s.pkg+": ")
		if !ok {
			t.Errorf("%s: %s's text %q does not start with %q", s.pos, s.name, s.text, s.pkg+": ")
			continue
		}
		if s.dir != "." && regexp.MustCompile(`(?i)\b(invalid|bad)\b`).MatchString(rest) {
			t.Errorf("%s: %s %q: an invalid config or argument is ErrConfig (= zkgroup.ErrConfig)", s.pos, s.doc(), s.text)
		}
		norm := strings.ToLower(rest)
		if o, dup := byText[norm]; dup {
			t.Errorf("%s: %s %q means what %s %q means (%s): declare one and re-declare it as that value",
				s.pos, s.doc(), s.text, o.doc(), o.text, o.pos)
		}
		byText[norm] = s
	}
	// One value per name: public sentinels that share a name resolve (through
	// their `= pkg.ErrX` re-declarations) to one declaration.
	byKey := map[string]sentinel{}
	for _, s := range sentinels {
		byKey[s.key()] = s
	}
	resolve := func(s sentinel) sentinel {
		for range len(sentinels) {
			dir, ok := strings.CutPrefix(s.sel[0], "github.com/zkgroup/zkgroup")
			if s.sel[0] == "" || !ok {
				return s
			}
			dir = strings.TrimPrefix(dir, "/")
			if dir == "" {
				dir = "."
			}
			next, ok := byKey[dir+"."+s.sel[1]]
			if !ok {
				return s
			}
			s = next
		}
		return s
	}
	byName := map[string]sentinel{}
	for _, s := range sentinels {
		if !s.public {
			continue
		}
		if o, dup := byName[s.name]; dup && resolve(o).key() != resolve(s).key() {
			t.Errorf("%s: %s and %s (%s) are two values under one name: re-declare one as the other, or rename the one that means something else",
				s.pos, s.doc(), o.doc(), o.pos)
		}
		byName[s.name] = s
	}

	table, err := os.ReadFile("docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z]+\\.[A-Z][A-Za-z]*)`").FindAllStringSubmatch(string(table), -1) {
		listed[m[1]] = true
	}
	for _, s := range sentinels {
		if s.public && !listed[s.doc()] {
			t.Errorf("%s: %s is not in docs/errors.md", s.pos, s.doc())
		}
	}
	for _, ty := range types {
		if !listed[ty] {
			t.Errorf("error type %s is not in docs/errors.md", ty)
		}
	}
}

// scanModule returns the exported Err* package-level variables of the
// module's non-test files, and the exported error types ("pkg.Name", types
// named *Error) of its public packages.
func scanModule(t *testing.T) ([]sentinel, []string) {
	t.Helper()
	var (
		out   []sentinel
		types []string
		fset  = token.NewFileSet()
	)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && filepath.ToSlash(path) != "cmd/zkgroup" {
				return filepath.SkipDir // another module (bench, the kazoo-go check); the daemon's rules are these
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		elems := strings.Split(dir, "/")
		public := f.Name.Name != "main" && !slices.Contains(elems, "internal")
		imports := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if p == "github.com/zkgroup/zkgroup" {
				name = "zkgroup"
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if public && sp.Name.IsExported() && strings.HasSuffix(sp.Name.Name, "Error") {
						types = append(types, f.Name.Name+"."+sp.Name.Name)
					}
				case *ast.ValueSpec:
					if gd.Tok != token.VAR {
						continue
					}
					for i, n := range sp.Names {
						if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
							continue
						}
						s := sentinel{dir: dir, pkg: f.Name.Name, name: n.Name, public: public, pos: fset.Position(n.Pos())}
						if i < len(sp.Values) {
							switch v := sp.Values[i].(type) {
							case *ast.CallExpr:
								if fn, ok := v.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "New" && len(v.Args) == 1 {
									if x, ok := fn.X.(*ast.Ident); ok && x.Name == "errors" {
										if lit, ok := v.Args[0].(*ast.BasicLit); ok {
											s.text, _ = strconv.Unquote(lit.Value)
										}
									}
								}
							case *ast.SelectorExpr:
								if x, ok := v.X.(*ast.Ident); ok {
									s.sel = [2]string{imports[x.Name], v.Sel.Name}
								}
							}
						}
						out = append(out, s)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, types
}
