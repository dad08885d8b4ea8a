package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// Environment of the crash child (crashChild in a subprocess, started
// from TestMain).
const (
	crashChildEnv = "ZKGROUP_CRASH_CHILD" // "1" selects the child mode
	crashZKEnv    = "ZKGROUP_CRASH_ZK"    // ZooKeeper connect string
	crashGroupEnv = "ZKGROUP_CRASH_GROUP"
	crashTopicEnv = "ZKGROUP_CRASH_TOPIC"
	crashIDEnv    = "ZKGROUP_CRASH_ID"
	// crashWindow is how many messages the child holds unacked: at the
	// kill, up to that many were handed out and never acked.
	crashWindow = 20
)

// crashChild is the crash victim of TestConsumeCrashNoLoss, run by
// TestMain in a subprocess of the test binary. It joins the group, prints
// every message it receives on stdout ("ZKG M <p> <offset> <value>") and
// acks it late (a window of crashWindow messages stays unacked), until it
// is killed.
func crashChild() int {
	sub, err := subscription.Static(os.Getenv(crashTopicEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 2
	}
	cfg := manager.NewConfig()
	cfg.InstanceID = os.Getenv(crashIDEnv)
	cfg.SessionTimeout = 6 * time.Second
	cfg.Partition.CommitInterval = 200 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("test", "crash-child")
	var outMu sync.Mutex
	out := os.Stdout
	cfg.OnAssigned = func(_ context.Context, _ *manager.Consumer, parts map[string][]int32) {
		outMu.Lock()
		defer outMu.Unlock()
		for _, ps := range parts {
			for _, p := range ps {
				fmt.Fprintf(out, "ZKG A %d\n", p)
			}
		}
	}
	cons, err := manager.Join(context.Background(), os.Getenv(crashGroupEnv), sub, os.Getenv(crashZKEnv), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 2
	}
	go func() {
		for err := range cons.Errors() {
			fmt.Fprintf(os.Stderr, "child error: %v\n", err)
		}
	}()
	var window []*manager.Message
	for m, err := range cons.Each(context.Background()) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash child: Each:", err)
			return 2
		}
		outMu.Lock()
		// Printed (an unbuffered write) before it is acked: whatever the
		// child acked, the parent has seen.
		fmt.Fprintf(out, "ZKG M %d %d %s\n", m.Partition, m.Offset, m.Value)
		outMu.Unlock()
		window = append(window, m)
		if len(window) > crashWindow {
			cons.Ack(window[0])
			window = window[1:]
		}
	}
	return 0
}

// child is the crash victim's process as seen by the parent.
type child struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	assigned map[int32]bool
	received int
	done     chan struct{} // stdout closed
}

// startCrashChild runs crashChild in a subprocess and feeds
// what it prints into rec's ledger under the name id.
func startCrashChild(t *testing.T, c *testcluster.Cluster, group, topic, id string, rec *recorder) *child {
	t.Helper()
	cmd, stdout := startChild(t, crashChildEnv+"=1", crashZKEnv+"="+c.ZooKeeperConnect(), crashGroupEnv+"="+group,
		crashTopicEnv+"="+topic, crashIDEnv+"="+id)
	ch := &child{cmd: cmd, assigned: map[int32]bool{}, done: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch.done
		_ = cmd.Wait()
	})
	go func() {
		defer close(ch.done)
		ch.read(t, stdout, id, rec)
	}()
	return ch
}

func (ch *child) read(t *testing.T, r io.Reader, id string, rec *recorder) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "ZKG" {
			continue
		}
		p, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			t.Errorf("child printed %q", sc.Text())
			continue
		}
		switch {
		case f[1] == "A":
			ch.mu.Lock()
			ch.assigned[int32(p)] = true
			ch.mu.Unlock()
		case f[1] == "M" && len(f) == 5:
			off, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				t.Errorf("child printed %q", sc.Text())
				continue
			}
			rec.Add(id, int32(p), off, f[4])
			ch.mu.Lock()
			ch.received++
			ch.mu.Unlock()
		}
	}
}

func (ch *child) state() (assigned map[int32]bool, received int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	assigned = map[int32]bool{}
	for p := range ch.assigned {
		assigned[p] = true
	}
	return assigned, ch.received
}

// TestConsumeCrashNoLoss: three members consume while a producer writes;
// one of them (a subprocess) is killed with SIGKILL mid-stream: it stops
// acking, commits nothing more, and its ZooKeeper session is left to
// expire. The survivors take its partitions over after the session
// timeout. Asserted: zero loss (every value seen); every duplicate is a
// message of a partition the victim owned, delivered once by the victim
// and once by a survivor, at an offset >= the offset committed for that
// partition at the kill; the survivors resume each of those partitions
// exactly at that committed offset; nothing else is duplicated; the
// committed offsets end at the log-end offsets.
func TestConsumeCrashNoLoss(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 6
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 600)
	rec := newRecorder(t)
	led := rec.Ledger
	o := poolOpts{workers: 3, maxDelay: 300 * time.Microsecond}
	a := joinPool(t, c, group, sub, "a", rec, o)
	b := joinPool(t, c, group, sub, "b", rec, o)
	await(t, 60*time.Second, "a, b balanced", func() bool { return poolBalanced(parts, a, b) })
	prod := testcluster.StartProducer(t, c, topic, parts, 600, 12, 20*time.Millisecond)

	x := startCrashChild(t, c, group, topic, "x", rec)
	await(t, 60*time.Second, "x owning 2 partitions, a and b the other 4", func() bool {
		assigned, _ := x.state()
		sa, sb := a.c.Stats(), b.c.Stats()
		return len(assigned) == 2 && sa.Ready && sb.Ready && len(sa.Members) == 3 && len(sb.Members) == 3 &&
			len(sa.Partitions)+len(sb.Partitions) == parts-2
	})
	victim, _ := x.state()
	_, base := x.state()
	await(t, 60*time.Second, "x consuming", func() bool { _, n := x.state(); return n >= base+300 })

	before := committed(t, c, group, topic, parts)
	if err := x.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-x.done
	werr := x.cmd.Wait()
	t.Logf("x killed (%v) at %v", werr, time.Now().Format("15:04:05.000"))
	// A commit the victim had on the wire when it died may still land:
	// read the committed offsets once that is settled, while the victim's
	// session (6 s) still holds its partitions.
	time.Sleep(500 * time.Millisecond) // letting in-flight commits land; nothing to wait on
	atKill := committed(t, c, group, topic, parts)
	for _, in := range []*poolInstance{a, b} {
		for _, s := range in.c.Stats().Partitions {
			if victim[s.Partition] {
				t.Fatalf("%s already owns the victim's partition %d when the committed offsets are read", in.name, s.Partition)
			}
		}
	}
	for p := range victim {
		if atKill[p] < before[p] {
			t.Errorf("partition %d: committed offset went back from %d to %d", p, before[p], atKill[p])
		}
	}
	t.Logf("victim's partitions %v; committed before the kill %v, after %v", keys(victim), before, atKill)

	took := await(t, 60*time.Second, "a, b owning all", func() bool { return poolBalanced(parts, a, b) })
	t.Logf("survivors took over in %v after the kill", took)
	n := prod.Halt(t)
	await(t, 2*time.Minute, "every message consumed", func() bool { return led.Count(topic, n) == n })
	hwm := testcluster.AwaitCommittedAtEnd(t, c, group, topic, parts)
	a.close(t)
	b.close(t)

	missing, dups := led.MissingAndDups(topic, n)
	if len(missing) > 0 {
		t.Errorf("%d of %d messages never delivered: %s", len(missing), n, testcluster.Head(missing, 5))
	}
	led.CheckContiguous(t, hwm)
	perPart := map[int32]int{}
	for v, ds := range dups {
		p := ds[0].Partition
		byX, bySurvivor := 0, 0
		for _, d := range ds {
			if d.Who == "x" {
				byX++
			} else {
				bySurvivor++
			}
		}
		switch {
		case !victim[p]:
			t.Errorf("%s duplicated on partition %d, which the victim did not own: %v", v, p, ds)
		case len(ds) != 2 || byX != 1 || bySurvivor != 1:
			t.Errorf("%s: want one delivery by the victim and one by a survivor, got %v", v, ds)
		case ds[0].Offset < atKill[p]:
			t.Errorf("%s duplicated at offset %d of partition %d, below the offset %d committed at the kill: %v", v, ds[0].Offset, p, atKill[p], ds)
		default:
			perPart[p]++
		}
	}
	for p := range victim {
		xOffs := led.Offsets("x", p)
		if len(xOffs) == 0 {
			t.Errorf("partition %d: the victim received nothing of it", p)
			continue
		}
		xFirst, xLast := xOffs[0], xOffs[len(xOffs)-1]
		// Before the victim took the partition over, a survivor consumed
		// it up to xFirst (a clean handover); what a survivor got from
		// xFirst on came after the kill.
		var first int64 = -1
		for _, name := range []string{"a", "b"} {
			for _, off := range led.Offsets(name, p) {
				if off >= xFirst && (first < 0 || off < first) {
					first = off
				}
			}
		}
		if first != atKill[p] {
			t.Errorf("partition %d: the survivors resumed at offset %d, want the committed %d", p, first, atKill[p])
		}
		t.Logf("partition %d: victim consumed [%d, %d], committed at kill %d, %d redelivered", p, xFirst, xLast, atKill[p], perPart[p])
	}
	rec.checkViolations(t)
}

func keys(m map[int32]bool) []int32 {
	var out []int32
	for k := range m {
		out = append(out, k)
	}
	return out
}

// startChild starts this test binary again, running no test, with env
// added to the environment (which selects what the child does in
// TestMain), and returns it with its stdout; its stderr is this process's.
func startChild(t *testing.T, env ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.v=false", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout
}
