package main

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

var release = &buildOnce{prefix: "zkgroup-release-", build: func(dir string) error {
	cmd := exec.Command("../../scripts/build-image.sh", dir)
	cmd.Env = append(os.Environ(), "VERSION=test-1.2.3")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build-image.sh: %v\n%s", err, b)
	}
	return nil
}}

// releaseBinary builds the binary with scripts/build-image.sh (the
// Dockerfile's build stage) once per test binary run.
func releaseBinary(t *testing.T) string {
	t.Helper()
	return release.path(t)
}

// TestBuildImageScript: scripts/build-image.sh (the Dockerfile's build
// stage) produces a static binary: no ELF interpreter, no shared
// libraries; and the Dockerfile builds through that script.
func TestBuildImageScript(t *testing.T) {
	t.Parallel()
	if testing.Short() && !testcluster.InCI() {
		t.Skip("builds the release binary (never skipped with CI=true)")
	}
	bin := releaseBinary(t)
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
	df := readDockerfile(t)
	if !strings.Contains(df.text, "./scripts/build-image.sh /out") {
		t.Error("the Dockerfile does not build through scripts/build-image.sh")
	}
}

// dockerfile is the published Dockerfile, its final stage parsed.
type dockerfile struct {
	text  string
	final []string            // the final stage's instructions, continuation lines joined
	env   map[string]string   // ENV of the final stage
	one   map[string]string   // USER, WORKDIR, EXPOSE, STOPSIGNAL: their argument
	exec  map[string][]string // ENTRYPOINT, CMD, HEALTHCHECK's CMD: exec form
	hc    map[string]string   // HEALTHCHECK's options: interval, timeout, start-period, retries
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d := dockerfile{text: string(raw), env: map[string]string{}, one: map[string]string{}, exec: map[string][]string{}, hc: map[string]string{}}
	var instrs []string
	cur := ""
	for _, line := range strings.Split(d.text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		instrs = append(instrs, cur+trimmed)
		cur = ""
	}
	for i, in := range instrs {
		if strings.HasPrefix(in, "FROM ") {
			d.final = instrs[i:]
		}
	}
	for _, in := range d.final[1:] {
		kw, arg, _ := strings.Cut(in, " ")
		arg = strings.TrimSpace(arg)
		switch kw {
		case "ENV":
			for _, kv := range strings.Fields(arg) {
				k, v, _ := strings.Cut(kv, "=")
				d.env[k] = v
			}
		case "USER", "WORKDIR", "EXPOSE", "STOPSIGNAL":
			d.one[kw] = arg
		case "ENTRYPOINT", "CMD", "HEALTHCHECK":
			if kw == "HEALTHCHECK" {
				var opts string
				opts, arg, _ = strings.Cut(arg, " CMD ")
				for _, o := range strings.Fields(opts) {
					k, v, _ := strings.Cut(strings.TrimPrefix(o, "--"), "=")
					d.hc[k] = v
				}
			}
			var argv []string
			if err := json.Unmarshal([]byte(arg), &argv); err != nil {
				t.Fatalf("Dockerfile %s not in exec form: %q", kw, arg)
			}
			d.exec[kw] = argv
		}
	}
	return d
}

// testContainerfile derives the test image from the Dockerfile's final
// stage: FROM scratch with what distroless/static-debian12:nonroot gives
// (rootfs/: passwd, group, CA certificates, /tmp; the non-root home),
// the binary copied from the build context instead of the build stage,
// and every other instruction as published.
func testContainerfile(t *testing.T, d dockerfile) string {
	t.Helper()
	out := []string{
		"# Derived from the Dockerfile's final stage by image_test.go.",
		"FROM scratch",
		"COPY rootfs/ /",
		"COPY --chown=65532:65532 home/ /home/nonroot/",
	}
	for _, in := range d.final[1:] {
		if strings.HasPrefix(in, "COPY --from=build ") {
			f := strings.Fields(in)
			in = "COPY " + filepath.Base(f[2]) + " " + f[3]
		}
		out = append(out, in)
	}
	return strings.Join(out, "\n") + "\n"
}

// TestDockerfile: the image bakes no configuration that could join a
// group, listens on 9779, runs as the non-root user, and checks liveness.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)
	if len(d.final) == 0 || !strings.Contains(d.final[0], "distroless/static") {
		t.Fatalf("final stage %q", d.final)
	}
	if strings.Contains(d.text, "configs/zkgroup.yaml") || d.env["ZKGROUP_CONFIG"] != "" || d.env["ZKGROUP_GROUP"] != "" || d.env["ZKGROUP_SUBSCRIPTION"] != "" {
		t.Error("the image bakes a configuration that joins a group")
	}
	for k, want := range map[string]string{"USER": "65532:65532", "EXPOSE": "9779", "STOPSIGNAL": "SIGTERM", "WORKDIR": "/home/nonroot"} {
		if d.one[k] != want {
			t.Errorf("%s %q, want %q", k, d.one[k], want)
		}
	}
	if d.env["ZKGROUP_ADMIN_LISTEN"] != "0.0.0.0:9779" || d.env["ZKGROUP_LOG_FORMAT"] != "json" {
		t.Errorf("ENV %v", d.env)
	}
	if !slices.Equal(d.exec["HEALTHCHECK"], []string{"/usr/local/bin/zkgroup", "healthcheck"}) ||
		!slices.Equal(d.exec["ENTRYPOINT"], []string{"/usr/local/bin/zkgroup"}) || !slices.Equal(d.exec["CMD"], []string{"run"}) {
		t.Errorf("exec forms %v", d.exec)
	}
	if strings.Contains(strings.Join(d.final, "\n"), "9090") {
		t.Error("the image still uses 9090 (Prometheus' port)")
	}
	// The healthcheck without --url probes the image's admin address.
	if got := healthURL(d.env["ZKGROUP_ADMIN_LISTEN"]); got != "http://127.0.0.1:9779/healthz" {
		t.Errorf("healthcheck probes %s", got)
	}
	if got := healthURL(""); got != "http://127.0.0.1:9779/healthz" {
		t.Errorf("default healthcheck URL %s", got)
	}
	cf := testContainerfile(t, d)
	for _, want := range []string{"FROM scratch\n", "COPY zkgroup /usr/local/bin/zkgroup\n", "USER 65532:65532\n", "ENTRYPOINT [\"/usr/local/bin/zkgroup\"]\n"} {
		if !strings.Contains(cf, want) {
			t.Errorf("test Containerfile lacks %q:\n%s", want, cf)
		}
	}
}
