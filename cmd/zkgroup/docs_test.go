package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// exitConstants returns the exit statuses the code declares: every
// constant of package main named exit<Name>, by lower-cased Name.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					name, ok := strings.CutPrefix(n.Name, "exit")
					if !ok || name == "" || name[0] < 'A' || name[0] > 'Z' || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						t.Fatalf("exit constant %s is not an integer literal", n.Name)
					}
					v, _ := strconv.Atoi(lit.Value)
					out[strings.ToLower(name)] = v
				}
			}
		}
	}
	return out
}

// TestDocExitCodes: the exit statuses listed in doc.go ("- N (name): ...")
// are exactly the exit<Name> constants of the code, with their values,
// and the constants the commands return are these.
func TestDocExitCodes(t *testing.T) {
	consts := exitConstants(t)
	want := map[string]int{"ok": exitOK, "failure": exitFailure, "usage": exitUsage, "refused": exitRefused}
	for name, v := range want {
		if consts[name] != v {
			t.Errorf("parsed exit%s = %d, compiled %d", name, consts[name], v)
		}
	}
	if len(consts) < len(want) {
		t.Fatalf("found only %v in the source", consts)
	}
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "// Exit status")
	if i < 0 {
		t.Fatal("doc.go has no Exit status paragraph")
	}
	listed := map[string]int{}
	item := regexp.MustCompile(`^//\s+- (\d+) \(([a-z]+)\): \S`)
	started := false
	for _, l := range strings.Split(doc[i:], "\n")[1:] {
		if m := item.FindStringSubmatch(l); m != nil {
			started = true
			v, _ := strconv.Atoi(m[1])
			if _, dup := listed[m[2]]; dup {
				t.Errorf("doc.go lists %s twice", m[2])
			}
			listed[m[2]] = v
			continue
		}
		if started && !strings.HasPrefix(l, "//     ") { // not a continuation line
			break
		}
	}
	for name, v := range consts {
		switch lv, ok := listed[name]; {
		case !ok:
			t.Errorf("doc.go does not list exit status %d (exit%s)", v, name)
		case lv != v:
			t.Errorf("doc.go lists %s as %d, the code says %d", name, lv, v)
		}
	}
	for name, v := range listed {
		if _, ok := consts[name]; !ok {
			t.Errorf("doc.go lists exit status %d (%s), which the code does not declare", v, name)
		}
	}
}

// TestRunHelpAllowedValues: `zkgroup run -h` shows, for every setting
// that takes one of a list, exactly the values the configuration
// accepts (config.Field.Values), and for the strategy those of the
// strategy registry (assign.Names), default first and marked as such.
func TestRunHelpAllowedValues(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"run", "-h"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("run -h: exit %d", code)
	}
	help := stdout.String() + stderr.String()
	shown := map[string][]string{} // flag -> the values its placeholder lists
	for _, l := range strings.Split(help, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.HasPrefix(l, "  -") && strings.Contains(f[1], "|") {
			shown[strings.TrimPrefix(f[0], "-")] = strings.Split(f[1], "|")
		}
	}
	enums := 0
	for _, f := range config.Fields() {
		if len(f.Values) == 0 {
			continue
		}
		enums++
		if got := shown[f.Flag]; !slices.Equal(got, f.Values) {
			t.Errorf("run -h: -%s lists %v, the configuration accepts %v", f.Flag, got, f.Values)
		}
	}
	if enums == 0 {
		t.Fatal("no setting takes one of a list")
	}
	if got := shown["strategy"]; !slices.Equal(got, assign.Names()) {
		t.Errorf("run -h: -strategy lists %v, the registry has %v", got, assign.Names())
	}
	for _, n := range assign.Names() {
		if _, err := assign.ByName(n); err != nil {
			t.Errorf("registry name %q: %v", n, err)
		}
	}
	if !strings.Contains(help, `env ZKGROUP_STRATEGY; default "`+assign.DefaultName+`"`) {
		t.Errorf("run -h does not give %q as the strategy's default:\n%s", assign.DefaultName, help)
	}
}

// TestOperatorCommandsRefusedFailFast: with nothing listening where
// ZooKeeper should be, describe and the offsets commands fail at once
// (not after --timeout, 15s by default) with exit 1, saying that every
// server refused the connection.
func TestOperatorCommandsRefusedFailFast(t *testing.T) {
	t.Parallel()
	zk := testcluster.RefusedAddr(t)
	for _, args := range [][]string{
		{"describe", "--zookeeper", zk + "/kafka", "--group", "g"},
		{"offsets", "reset", "--zookeeper", zk, "--group", "g", "--topic", "t", "--to-earliest"},
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := dispatch(args, &stdout, &stderr)
		took := time.Since(start)
		if code != exitFailure || !strings.Contains(stderr.String(), "refused the connection") || !strings.Contains(stderr.String(), zk) {
			t.Errorf("zkgroup %v: exit %d, stderr %q", args, code, stderr.String())
		}
		if took > 5*time.Second {
			t.Errorf("zkgroup %v took %v", args, took)
		}
	}
}
