package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// definedFlags returns the flags each command defines in main.go: the
// names given to fs.Int, fs.String, ... in the function that makes the
// flag set named after the command (flag.NewFlagSet, or flags(cmd), which
// adds -dir).
func definedFlags(t *testing.T) (map[string][]string, *ast.File) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		cmd := ""
		var flags []string
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "flags" {
				cmd = name // flags(cmd) makes the set and its -dir
				flags = append(flags, "dir")
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch x, _ := sel.X.(*ast.Ident); {
			case x != nil && x.Name == "flag" && sel.Sel.Name == "NewFlagSet":
				cmd = name
			case x != nil && x.Name == "fs":
				flags = append(flags, name)
			}
			return true
		})
		if cmd != "" {
			out[cmd] = flags
		}
	}
	return out, f
}

// segment returns the part of text about cmd: from the line whose first
// word is cmd (after a prefix) to the next line that starts another
// command.
func segment(text, prefix, cmd string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		starts := ok && rest != "" && rest[0] != ' '
		if starts {
			in = strings.Fields(rest)[0] == cmd
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestUsageListsEveryFlag: the usage text and the package doc name every
// flag of every command (the usage once lacked topic's -replication).
func TestUsageListsEveryFlag(t *testing.T) {
	cmds, file := definedFlags(t)
	if len(cmds) < 5 || len(cmds["topic"]) < 4 {
		t.Fatalf("found the flag sets %v in main.go", cmds)
	}
	doc := file.Doc.Text()
	for cmd, flags := range cmds {
		u := segment(usageText, "  ", cmd)
		d := segment(doc, "\tzkcluster ", cmd)
		if u == "" || d == "" {
			t.Errorf("%s: missing from the usage text (%q) or the package doc (%q)", cmd, u, d)
			continue
		}
		for _, fl := range flags {
			if !strings.Contains(u, "-"+fl+" ") && !strings.Contains(u, "-"+fl+"]") {
				t.Errorf("the usage text of %s lacks -%s:\n%s", cmd, fl, u)
			}
			if !strings.Contains(d, "-"+fl+" ") && !strings.Contains(d, "-"+fl+"]") {
				t.Errorf("the package doc of %s lacks -%s:\n%s", cmd, fl, d)
			}
		}
	}
}
