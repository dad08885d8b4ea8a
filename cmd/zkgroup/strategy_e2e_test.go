package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestStrategyMismatchSaid runs two daemons of one group, a with
// balanced and then b with range. While both run, each one's /readyz
// answers 503 naming both members and both strategies, and describe
// (reading the ZooKeeper address, group and offset storage from a's
// config file; a flag overrides it) shows each member's strategy and says they disagree, in
// text and JSON. Once b stops, a is ready again and describe no longer
// reports a mismatch.
func TestStrategyMismatchSaid(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	group, topic := groupTopic(t, c, 4, 3)
	a := startAdminDaemon(t, c, c.ZooKeeperConnect(), group, "static:"+topic, "instance_id: a\nstrategy: balanced\n")
	a.ready(60 * time.Second)
	cfgFile := a.cmd.Args[3] // run --config FILE
	b := startAdminDaemon(t, c, c.ZooKeeperConnect(), group, "static:"+topic, "instance_id: b\nstrategy: range\n")
	for _, d := range []struct {
		d        *adminDaemon
		self     string
		peerSays string
	}{{a, `a is configured with "balanced"`, `b publishes "range"`}, {b, `b is configured with "range"`, `a publishes "balanced"`}} {
		var code int
		var body string
		if !testcluster.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			code, body = d.d.get("/readyz")
			return code == 503 && strings.Contains(body, "strategy mismatch")
		}) {
			t.Fatalf("/readyz never said the mismatch: %d %q", code, body)
		}
		if !strings.Contains(body, d.self) || !strings.Contains(body, d.peerSays) || !strings.Contains(body, "oldest member a") {
			t.Errorf("/readyz: %q; want %q, %q and the oldest member a", body, d.self, d.peerSays)
		}
	}
	out, stderr, code := run(t, "describe", "--config", cfgFile)
	if code != 0 || !strings.Contains(out, `STRATEGY MISMATCH: the members publish different assignment strategies ("balanced" by a; "range" by b); they compute with "balanced", the strategy of the oldest member a`) {
		t.Errorf("describe: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = run(t, "describe", "--config", cfgFile, "--json")
	var d ops.Description
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("describe --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	strategies := map[string]string{}
	for _, m := range d.Members {
		strategies[m.ID] = m.Strategy
	}
	if sm := d.StrategyMismatch; fmt.Sprint(strategies) != "map[a:balanced b:range]" || sm == nil || sm.Oldest != "a" || sm.InForce != "balanced" ||
		fmt.Sprint(sm.Strategies) != "map[balanced:[a] range:[b]]" {
		t.Errorf("describe --json: members' strategies %v, mismatch %+v", strategies, sm)
	}
	// A flag overrides the config file's setting.
	other := testcluster.Name(t, "other")
	if out, stderr, code := run(t, "describe", "--config", cfgFile, "--group", other); code == 0 || !strings.Contains(out+stderr, other) {
		t.Errorf("describe --config with --group %s: exit %d\n%s%s", other, code, out, stderr)
	}
	if code := b.stop(30 * time.Second); code != 0 {
		t.Errorf("b: exit %d", code)
	}
	await(t, 30*time.Second, "a ready again once b left", func() bool {
		code, body := a.get("/readyz")
		return code == 200 && strings.HasPrefix(body, "ready")
	})
	if out, _, _ := run(t, "describe", "--config", cfgFile, "--json"); strings.Contains(out, "strategy_mismatch") {
		t.Errorf("describe --json still reports a mismatch with b gone:\n%s", out)
	}
	if code := a.stop(30 * time.Second); code != 0 {
		t.Errorf("a: exit %d", code)
	}
}
