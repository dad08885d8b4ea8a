package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// kraftConfig is a daemon config for the Kafka 4 (KRaft) cluster: its
// ZooKeeper coordinates only, so the brokers are given.
func kraftConfig(c *testcluster.Cluster, group, topic, extra string) string {
	return baseConfig(c, group, topic, fmt.Sprintf("brokers: [%s]\n%s", strings.Join(c.Addrs(), ", "), extra))
}

// TestKRaftJoinConsumeRebalance: against Apache Kafka 4 in KRaft mode
// with a ZooKeeper used by zkgroup alone, two daemons join one group,
// split the partitions, hand them over when one stops, and between them
// print every message exactly once; the committed offsets reach the log
// end and describe agrees with Kafka's own kafka-consumer-groups.
func TestKRaftJoinConsumeRebalance(t *testing.T) {
	t.Parallel()
	c := testcluster.SharedKRaft(t)
	const parts, step = 6, 300
	group, topic := groupTopic(t, c, parts, 2)
	dir := t.TempDir()
	out1, out2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	cfg := kraftConfig(c, group, topic, "")
	produce := func(from int) {
		t.Helper()
		testcluster.MustProduce(t, c, topic, parts, from, step)
	}
	printed := func() []string { return append(readLines(t, out1), readLines(t, out2)...) }

	produce(0)
	d1 := startDaemon(t, runOpts{config: cfg, stdout: out1})
	d1.ready(90 * time.Second)
	await(t, 60*time.Second, "the first member to print the first batch", func() bool { return len(readLines(t, out1)) >= step })

	d2 := startDaemon(t, runOpts{config: cfg, stdout: out2})
	d2.ready(90 * time.Second)
	produce(step)
	await(t, 60*time.Second, "two members to print two batches", func() bool { return len(printed()) >= 2*step })
	if len(readLines(t, out2)) == 0 {
		t.Fatalf("the second member got no partition: it printed nothing of the second batch")
	}

	if code := d1.stop(30 * time.Second); code != 0 {
		t.Fatalf("first member exited %d", code)
	}
	produce(2 * step)
	await(t, 60*time.Second, "the remaining member to take over", func() bool { return len(printed()) >= 3*step })
	if code := d2.stop(30 * time.Second); code != 0 {
		t.Fatalf("second member exited %d", code)
	}
	checkExactlyOnce(t, topic, 3*step, values(t, printed()))

	checkCommittedAtEnd(t, c, group, topic, parts)

	// The operator commands read ZooKeeper and the brokers from the same
	// config as the daemon.
	cfgFile := filepath.Join(dir, "zkgroup.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	describeMatchesKafka(t, c, group, parts, "--config", cfgFile)

	// Without brokers, describe says they must be given.
	_, stderr, code := run(t, "describe", "--zookeeper", c.ZooKeeperConnect(), "--group", group)
	if code != 1 || !strings.Contains(stderr, "no Kafka brokers known") || !strings.Contains(stderr, "--brokers") || !strings.Contains(stderr, "KRaft") {
		t.Errorf("describe without brokers: exit %d: %s", code, stderr)
	}

	// Offsets reset, with the config's brokers.
	reset := []string{"offsets", "reset", "--config", cfgFile, "--topic", topic}
	if _, stderr, code = run(t, append(reset, "--to-earliest", "--execute")...); code != 0 {
		t.Fatalf("reset --to-earliest exited %d: %s", code, stderr)
	}
	if _, stderr, code = run(t, append(reset, "--shift-by", "5", "--partitions", "1", "--execute")...); code != 0 {
		t.Fatalf("reset --shift-by exited %d: %s", code, stderr)
	}
	after, err := c.CommittedOffsets(ctx(t), group, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	for p, off := range after {
		want := int64(0)
		if p == 1 {
			want = 5
		}
		if off != want {
			t.Errorf("after the resets: partition %d committed %d, want %d", p, off, want)
		}
	}
	rows, err := c.DescribeGroup(ctx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := run(t, "describe", "--config", cfgFile, "--json")
	var d ops.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	compareDescribe(t, d.Partitions, rows, parts)

	// A daemon without brokers refuses to start with the same message.
	noBrokers := baseConfig(c, group, topic, "")
	dn := startDaemon(t, runOpts{config: noBrokers})
	if code := dn.wait(60 * time.Second); code != 1 || !strings.Contains(dn.stderr.String(), "no Kafka brokers known") {
		t.Errorf("run without brokers: exit %d: %s", code, tail(dn.stderr.String(), 5))
	}
}
