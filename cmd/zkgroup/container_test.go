package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// podman runs Debian's podman offline as these machines allow it: vfs
// storage and runtime state in a folder of the test, cgroupfs, runc (crun
// cannot here), no default ulimits (see ../shared/notes/containers.md).
type podman struct {
	t    *testing.T
	bin  string
	base []string
	env  []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err == nil {
		_, err = exec.LookPath("runc")
	}
	if err != nil {
		if testcluster.InCI() {
			t.Fatalf("podman and runc are required with CI=true (apt-get install podman runc; .ci/run does): %v", err)
		}
		t.Skipf("no podman or runc: %v (fails with CI=true)", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t, bin: bin, env: append(os.Environ(), "CONTAINERS_CONF="+conf),
		base: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
			"--storage-driver=vfs", "--cgroup-manager=cgroupfs", "--runtime", "runc", "--events-backend=file"}}
	return p
}

// run runs podman with args and returns its stdout, stderr and exit code.
func (p *podman) run(args ...string) (string, string, int) {
	p.t.Helper()
	cmd := exec.Command(p.bin, append(append([]string(nil), p.base...), args...)...)
	cmd.Env = p.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		p.t.Fatalf("podman %v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// must runs podman and fails the test unless it exits 0.
func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, errOut, code := p.run(args...)
	if code != 0 {
		p.t.Fatalf("podman %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// buildTestImage builds the image derived from the Dockerfile around the
// release binary and returns its name.
func buildTestImage(t *testing.T, p *podman) string {
	t.Helper()
	d := readDockerfile(t)
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(releaseBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("CA certificates for the image (apt-get install ca-certificates): %v", err)
	}
	files := map[string][]byte{
		"zkgroup":           bin,
		"Containerfile":     []byte(testContainerfile(t, d)),
		"rootfs/etc/passwd": []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"),
		"rootfs/etc/group":  []byte("root:x:0:\nnonroot:x:65532:\n"),
		"rootfs/etc/ssl/certs/ca-certificates.crt": certs,
		"home/.keep": nil,
	}
	for name, data := range files {
		path := filepath.Join(ctxDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ctxDir, "rootfs", "tmp"), 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(ctxDir, "rootfs", "tmp"), 0o1777)
	image := fmt.Sprintf("localhost/zkgroup-test:%d", os.Getpid())
	p.must("build", "--format", "docker", "--network=none", "-t", image, "-f", filepath.Join(ctxDir, "Containerfile"), ctxDir)
	return image
}

// checkImageConfig compares the built image's configuration with the
// Dockerfile's final stage: user, workdir, environment, entrypoint,
// command, healthcheck, stop signal, exposed port.
func checkImageConfig(t *testing.T, p *podman, image string) {
	t.Helper()
	var inspected []struct {
		Config struct {
			User, WorkingDir, StopSignal string
			Env, Entrypoint, Cmd         []string
			ExposedPorts                 map[string]any
		}
		Healthcheck struct {
			Test                           []string
			Interval, Timeout, StartPeriod time.Duration
			Retries                        int
		}
	}
	if err := json.Unmarshal([]byte(p.must("image", "inspect", image)), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	cfg, hc := inspected[0].Config, inspected[0].Healthcheck
	d := readDockerfile(t)
	for k, v := range d.env {
		if !slices.Contains(cfg.Env, k+"="+v) {
			t.Errorf("image env %v lacks %s=%s", cfg.Env, k, v)
		}
	}
	if cfg.User != d.one["USER"] || cfg.WorkingDir != d.one["WORKDIR"] || cfg.StopSignal != d.one["STOPSIGNAL"] ||
		!slices.Equal(cfg.Entrypoint, d.exec["ENTRYPOINT"]) || !slices.Equal(cfg.Cmd, d.exec["CMD"]) ||
		cfg.ExposedPorts[d.one["EXPOSE"]+"/tcp"] == nil {
		t.Errorf("image config %+v differs from the Dockerfile %v %v %v", cfg, d.one, d.exec, d.env)
	}
	dur := func(k string) time.Duration { v, _ := time.ParseDuration(d.hc[k]); return v }
	if !slices.Equal(hc.Test, append([]string{"CMD"}, d.exec["HEALTHCHECK"]...)) || hc.Interval != dur("interval") ||
		hc.Timeout != dur("timeout") || hc.StartPeriod != dur("start-period") || fmt.Sprint(hc.Retries) != d.hc["retries"] {
		t.Errorf("image healthcheck %+v differs from the Dockerfile's %v", hc, d.hc)
	}
}

// TestContainerImage builds the test image (derived from the Dockerfile)
// with podman and runs it against the test cluster with only environment
// variables: it refuses to start without a group and subscription; with
// them it consumes, its healthcheck passes, it runs as the non-root user,
// and podman stop (SIGTERM) drains, commits and exits 0.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	p := newPodman(t)
	image := buildTestImage(t, p)
	checkImageConfig(t, p, image)

	// No group, no subscription: exit 2 with a message naming what is
	// missing, before anything is written to ZooKeeper.
	out, errOut, code := p.run("run", "--rm", "--network=host", "-e", "ZKGROUP_ZOOKEEPER="+c.ZooKeeperConnect(), image)
	if code != 2 || !strings.Contains(errOut, "group: required") {
		t.Errorf("run with only ZKGROUP_ZOOKEEPER: exit %d, want 2 naming the missing group\n%s%s", code, out, errOut)
	}

	const parts, n = 4, 400
	group, topic := groupTopic(t, c, parts, 3)
	testcluster.MustProduce(t, c, topic, parts, 0, n)
	port := testcluster.FreePort(t)
	name := fmt.Sprintf("zkgroup-test-%d", os.Getpid())
	p.must("run", "-d", "--name", name, "--network=host",
		"-e", "ZKGROUP_ZOOKEEPER="+c.ZooKeeperConnect(), "-e", "ZKGROUP_GROUP="+group,
		"-e", "ZKGROUP_SUBSCRIPTION=static:"+topic, "-e", "ZKGROUP_SESSION_TIMEOUT=6s",
		"-e", "ZKGROUP_PARTITION_COMMIT_INTERVAL=100ms",
		"-e", fmt.Sprintf("ZKGROUP_ADMIN_LISTEN=0.0.0.0:%d", port), image)
	t.Cleanup(func() {
		if t.Failed() {
			o, e, _ := p.run("logs", "--tail", "40", name)
			t.Logf("container logs:\n%s%s", tail(o, 5), e)
		}
		p.run("rm", "-f", "-t", "0", name)
	})
	await(t, 90*time.Second, "the container to print every message", func() bool {
		o, _, _ := p.run("logs", name)
		return strings.Count(o, `"value":`) >= n
	})
	o, _, _ := p.run("logs", name)
	checkExactlyOnce(t, topic, n, values(t, strings.Split(strings.TrimSpace(o), "\n")))

	await(t, 30*time.Second, "the image's healthcheck to pass", func() bool {
		_, _, code := p.run("healthcheck", "run", name)
		return code == 0
	})
	if body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", port)); err != nil || !strings.HasPrefix(body, "ready") {
		t.Errorf("readyz: %q %v", body, err)
	}
	pid := p.must("inspect", "--format", "{{.State.Pid}}", name)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Uid:") && strings.Fields(l)[1] != "65532" {
			t.Errorf("the daemon runs as %s, want uid 65532 (non-root)", l)
		}
	}

	p.must("stop", "-t", "30", name)
	if code := p.must("inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Errorf("exit code after podman stop: %s, want 0", code)
	}
	_, logs, _ := p.run("logs", name)
	if !strings.Contains(logs, `"msg":"stopped cleanly"`) {
		t.Errorf("no clean stop in the JSON logs:\n%s", tail(logs, 10))
	}
	checkCommittedAtEnd(t, c, group, topic, parts)
}
