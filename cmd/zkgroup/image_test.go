package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestBuildImageScript: scripts/build-image.sh (the Dockerfile's build
// stage) produces a static binary: no ELF interpreter, no shared
// libraries; and the Dockerfile builds through that script.
func TestBuildImageScript(t *testing.T) {
	t.Parallel()
	if testing.Short() && !testcluster.InCI() {
		t.Skip("builds the release binary (never skipped with CI=true)")
	}
	out := t.TempDir()
	cmd := exec.Command("../../scripts/build-image.sh", out)
	cmd.Env = append(os.Environ(), "VERSION=test-1.2.3")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "zkgroup")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", bin)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", bin, libs)
	}
	v, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(v), "zkgroup test-1.2.3") {
		t.Errorf("version: %q %v", v, err)
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./scripts/build-image.sh /out", "USER 65532", "HEALTHCHECK", `"healthcheck", "--url", "http://127.0.0.1:9090/healthz"`} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}
