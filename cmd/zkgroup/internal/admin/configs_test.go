package admin

import (
	"encoding/json"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const configsDir = "../../../../configs"

// TestAlertRulesPromtool runs Prometheus' promtool over the alert rules:
// check rules, and test rules against the synthetic series of
// zkgroup.rules.test.yml.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testcluster.InCI() {
			t.Fatal("promtool not found (Debian: apt-get install prometheus); .ci/run installs it")
		}
		t.Skip("promtool not found (Debian: apt-get install prometheus); fails with CI=true")
	}
	dir := filepath.Join(configsDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "zkgroup.rules.yml"}, {"test", "rules", "zkgroup.rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
		}
	}
}

// metricRef finds what may be a metric name in a PromQL expression.
var metricRef = regexp.MustCompile(`\b(zkgroup|go|process)_[a-zA-Z0-9_:]*`)

// TestConfigsNameExportedMetrics: every expression of the alert rules and
// of the dashboard names at least one metric, and only metrics the code
// exports.
func TestConfigsNameExportedMetrics(t *testing.T) {
	_, exported := exportedMetrics(t)
	check := func(where, expr string) {
		refs := metricRef.FindAllString(expr, -1)
		if len(refs) == 0 {
			t.Errorf("%s: %q names no zkgroup metric", where, expr)
		}
		for _, r := range refs {
			if !exported[r] {
				t.Errorf("%s: %s is not exported by the code (expression %q)", where, r, expr)
			}
		}
	}

	raw, err := os.ReadFile(filepath.Join(configsDir, "prometheus", "zkgroup.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			check("rule "+r.Alert+r.Record, r.Expr)
			n++
		}
	}
	if n < 6 {
		t.Errorf("only %d rules", n)
	}

	raw, err = os.ReadFile(filepath.Join(configsDir, "grafana", "zkgroup-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	exprs := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "expr" || k == "definition") {
					check("dashboard "+path, s)
					exprs++
				}
				walk(path+"."+k, c)
			}
		case []any:
			for _, c := range v {
				walk(path, c)
			}
		}
	}
	walk("", dash)
	if exprs < 20 {
		t.Errorf("only %d dashboard expressions found", exprs)
	}
}
