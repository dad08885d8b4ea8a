// Package chaos runs a long randomized fault schedule against three zkgroup
// daemons on a real Kafka 3.9 (ZooKeeper mode) cluster and judges the
// outcome (bench/README.md, "chaos"): messages lost, committed
// offsets that went backwards (read from Kafka), redeliveries of committed
// messages, two owners at once, and how long a brokers-only cut stalled the
// cut member's partitions. It needs root (iptables, useradd) and is not part
// of any CI run: it skips unless -duration is given.
package chaos

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

var (
	flagDuration    = flag.Duration("duration", 0, "length of the fault schedule (0: skip the test)")
	flagPartitions  = flag.Int("partitions", 24, "partitions of the topic")
	flagReplication = flag.Int("replication", 3, "replication factor of the topic (1 to 3)")
	flagSeed        = flag.Uint64("seed", 1, "seed of the fault schedule and of the producer's keys")
	flagRate        = flag.Int("rate", 1000, "records produced per second")
	flagKeys        = flag.Int("keys", 10000, "distinct keys of the produced records")
	flagSession     = flag.Duration("session", 6*time.Second, "the daemons' ZooKeeper session timeout")
	flagCommit      = flag.Duration("commit-interval", 200*time.Millisecond, "the daemons' partition.commit_interval")
	flagStrategy    = flag.String("strategy", "balanced", "the daemons' assignment strategy")
	flagKafkaVer    = flag.String("kafka-version", "", "the daemons' kafka.version (empty: their default; 3.1.0 or later fetches topics by id)")
	flagRebalance   = flag.Duration("rebalance", 3*time.Second, "allowance for one rebalance in the brokers-only cut bound (session + this)")
	flagGap         = flag.Duration("gap", 5*time.Second, "mean quiet time between two faults (drawn from 0.5x to 1.5x)")
	flagMaxCut      = flag.Duration("max-cut", 60*time.Second, "longest network partition")
	flagKinds       = flag.String("kinds", "", "comma-separated fault kinds to draw from (empty: all; see kinds)")
	flagOut         = flag.String("out", "", "folder for the daemons' logs, the schedule and the summary (empty: a new temporary folder)")
	flagKeep        = flag.Bool("keep", false, "keep the cluster's folder after the run")
	flagRejudge     = flag.String("rejudge", "", "judge the record.gob.gz of an earlier run in this folder again (no cluster, no root)")
	flagDrain       = flag.Duration("drain", 3*time.Minute, "bound of the drain after the last heal")
	flagZooKeepers  = flag.Int("zookeepers", 1, "ZooKeeper servers: 1, or an ensemble of 3 or 5 (adds the kinds zk-server, zk-leader, zk-cut)")
)

func TestChaos(t *testing.T) {
	if *flagRejudge != "" {
		rejudge(t, *flagRejudge)
		return
	}
	if *flagDuration <= 0 {
		t.Skip("chaos: pass -args -duration=10m to run it (needs root: iptables, useradd)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("chaos: needs root (iptables owner match, useradd, running the daemons as their own users)")
	}
	for _, tool := range []string{"iptables", "useradd", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("chaos: %s not found: %v", tool, err)
		}
	}
	out := *flagOut
	if out == "" {
		d, err := os.MkdirTemp("", "zkgroup-chaos-")
		if err != nil {
			t.Fatal(err)
		}
		out = d
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}
	benchkit.Say("== chaos: seed %d, %s, %d partitions (replication %d), %d records/s, session %s, commit %s, strategy %s, kafka.version %s, %d ZooKeeper server(s); output in %s",
		*flagSeed, *flagDuration, *flagPartitions, *flagReplication, *flagRate, *flagSession, *flagCommit, *flagStrategy, cmp.Or(*flagKafkaVer, "default"), *flagZooKeepers, out)

	bin, err := buildDaemon(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clusterDir := filepath.Join(out, "cluster")
	started := time.Now()
	c, err := testcluster.Launch(ctx, testcluster.Brokers(3), testcluster.ZooKeepers(*flagZooKeepers), testcluster.Dir(clusterDir))
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		if !*flagKeep {
			_ = os.RemoveAll(clusterDir)
		}
	})
	benchkit.Say("cluster up in %.1f s: zookeeper %s, brokers %s", time.Since(started).Seconds(), c.ZooKeeperConnect(), strings.Join(c.Addrs(), ","))

	r := &run{
		c:          c,
		out:        out,
		bin:        bin,
		topic:      fmt.Sprintf("chaos-%d", *flagSeed),
		group:      fmt.Sprintf("chaos-group-%d", *flagSeed),
		partitions: int32(*flagPartitions),
		session:    *flagSession,
		rng:        rand.New(rand.NewPCG(*flagSeed, 0x6b61666b61)),
		col:        newCollector(),
	}
	if err := c.CreateTopic(ctx, r.topic, r.partitions, int16(*flagReplication)); err != nil {
		t.Fatalf("topic: %v", err)
	}
	fw, err := newFirewall(c)
	if err != nil {
		t.Fatal(err)
	}
	r.fw = fw
	t.Cleanup(fw.close)
	t.Cleanup(r.killAll)

	sched := plan(r.rng, *flagDuration, *flagSession, *flagGap, *flagMaxCut, parseKinds(t, *flagKinds, *flagZooKeepers > 1), *flagZooKeepers)
	if err := writeSchedule(filepath.Join(out, "schedule.txt"), sched); err != nil {
		t.Fatal(err)
	}
	benchkit.Say("schedule: %d faults over %s (%s)", len(sched), *flagDuration, countKinds(sched))

	if err := r.runAll(ctx, sched); err != nil {
		t.Fatal(err)
	}
	r.hist, r.histErr = r.readOffsetsHistory(ctx)
	if err := r.save(filepath.Join(out, "record.gob.gz")); err != nil {
		t.Error(err)
	}
	sum := r.judge()
	text := sum.String()
	fmt.Print(text)
	if err := os.WriteFile(filepath.Join(out, "summary.txt"), []byte(text), 0o644); err != nil {
		t.Error(err)
	}
	benchkit.Say("summary written to %s", filepath.Join(out, "summary.txt"))
}

// buildDaemon builds cmd/zkgroup into out/bin (world-readable: the daemons
// run as their own users).
func buildDaemon(out string) (string, error) {
	dir := filepath.Join(out, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "zkgroup")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/zkgroup")
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/zkgroup: %v\n%s", err, b)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		return "", err
	}
	return bin, nil
}

// rejudge prints the summary of an earlier run from its record.
func rejudge(t *testing.T, dir string) {
	r, err := load(filepath.Join(dir, "record.gob.gz"))
	if err != nil {
		t.Fatal(err)
	}
	r.out = dir
	fmt.Print(r.judge().String())
}
