package manager_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExamplesOutsideModule copies the example files (example*_test.go) of
// every public package of the module (not under internal/, not in a
// nested module) into a temporary module of its own, which requires
// github.com/zkgroup/zkgroup through a replace to this repository, and
// runs go vet there: the examples must compile as a user who pastes them
// into their own module gets them (no internal package, no helper of the
// package's other test files), and pass vet's checks (example names
// included). The module cache must hold the dependencies already (as
// after building this module): nothing is downloaded.
//
// It also checks that the module graph such a user gets (go list -m all)
// holds none of the daemon's, the benchmarks' or the compatibility
// check's dependencies. It needs the go command but no cluster; it is
// skipped under -short unless CI=true.
func TestExamplesOutsideModule(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs the go command (-short)")
	}
	goCmd, err := goTool()
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	pkgs, err := copyExamples(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkgs, "manager") {
		t.Fatalf("examples found in %v: none of package manager", pkgs)
	}
	t.Logf("examples of %v", pkgs)
	// The go command stops at a package's first bad import: list them all.
	for _, bad := range internalImports(t, tmp) {
		t.Errorf("%s: a user's module cannot import an internal package", bad)
	}
	gomod := "module example.com/zkgroupexamples\n\ngo 1.26.0\n\n" +
		"require github.com/zkgroup/zkgroup v0.0.0\n\n" +
		"replace github.com/zkgroup/zkgroup => " + root + "\n"
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "vet", "./...")
	cmd.Dir = tmp
	// Offline: the requirements come from the module cache; -mod=mod lets
	// the go command complete go.mod from zkgroup's own requirements.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off",
		"GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go vet ./... of the examples in a module of their own (%s): %v\n%s", tmp, err, out)
	}
	// An embedder's module graph holds the library's requirements only:
	// not the daemon's (cmd/zkgroup is a module of its own).
	list := exec.CommandContext(ctx, goCmd, "list", "-m", "-e", "all") // -e: modules whose info is not cached are listed all the same
	list.Dir, list.Env = tmp, cmd.Env
	out, err = list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all in the examples' module: %v\n%s", err, out)
	}
	for _, daemonOnly := range []string{"github.com/prometheus/", "github.com/coreos/go-systemd", "google.golang.org/protobuf", "github.com/wvanbergen/kazoo-go", "github.com/twmb/franz-go"} {
		if strings.Contains(string(out), daemonOnly) {
			t.Errorf("an embedder's module graph holds %s (go list -m all):\n%s", daemonOnly, out)
		}
	}
}

// internalImports returns "file imports path" for each import of an internal
// package of this module by the Go files under dir.
func internalImports(t *testing.T, dir string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/zkgroup/zkgroup/") && slices.Contains(strings.Split(p, "/"), "internal") {
				rel, _ := filepath.Rel(dir, path)
				bad = append(bad, filepath.ToSlash(rel)+" imports "+p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// goTool finds the go command: on PATH, else the one that built this test.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("no go command on PATH or in GOROOT")
	}
	return p, nil
}

// moduleRoot is the folder of the go.mod above the test's working
// directory (the package's folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if !strings.Contains(string(b), "module github.com/zkgroup/zkgroup\n") {
				return "", errors.New(dir + "/go.mod is not github.com/zkgroup/zkgroup's")
			}
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// copyExamples copies the example*_test.go files of every public package
// under root to the same relative folder under dst, and returns those
// folders. Not public: anything under a folder named internal or testdata,
// hidden folders, and nested modules.
func copyExamples(root, dst string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		files, err := filepath.Glob(filepath.Join(path, "example*_test.go"))
		if err != nil || len(files) == 0 {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(to, 0o755); err != nil {
			return err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
				return err
			}
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
		return nil
	})
	return pkgs, err
}
