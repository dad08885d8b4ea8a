package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

const commitChildEnv = "ZKGROUP_COMMIT_CHILD"

// commitChild: joins in batch mode (routine commits effectively off), acks
// what it receives, calls Commit(ctx), prints "ZKG C <p> <next>" for what
// it acked, and kills itself with SIGKILL: no Close, no final commit.
func commitChild() int {
	sub, err := subscription.Static(os.Getenv(crashTopicEnv))
	if err != nil {
		return 2
	}
	cfg := manager.NewConfig()
	cfg.SessionTimeout = 6 * time.Second
	cfg.Partition.CommitInterval = time.Hour
	cons, err := manager.Join(context.Background(), os.Getenv(crashGroupEnv), sub, os.Getenv(crashZKEnv), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "commit child:", err)
		return 2
	}
	acked := map[int32]int64{}
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n < 60 {
		b, err := cons.Poll(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "commit child:", err)
			return 2
		}
		b.Ack()
		acked[b.Partition] = b.LastOffset() + 1
		n += b.Len()
	}
	if err := cons.Commit(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "commit child: Commit:", err)
		return 2
	}
	for p, next := range acked {
		fmt.Printf("ZKG C %d %d\n", p, next)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	return 3
}

// TestCommitThenCrash: what Commit(ctx) returned for is in Kafka after the
// process dies without closing.
func TestCommitThenCrash(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, _ := newTopic(t, c, 3)
	testcluster.MustProduce(t, c, topic, 3, 0, 300)
	cmd, out := startChild(t, commitChildEnv+"=1", crashZKEnv+"="+c.ZooKeeperConnect(),
		crashGroupEnv+"="+group, crashTopicEnv+"="+topic)
	want := map[int32]int64{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "ZKG" && f[1] == "C" {
			p, _ := strconv.Atoi(f[2])
			next, _ := strconv.ParseInt(f[3], 10, 64)
			want[int32(p)] = next
		}
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the child did not die by the signal: %v", err)
	}
	if len(want) == 0 {
		t.Fatal("the child reported no commit")
	}
	got := committed(t, c, group, topic, 3)
	for p, next := range want {
		if got[p] < next {
			t.Errorf("partition %d: committed %d after the crash; Commit returned for %d", p, got[p], next)
		}
	}
}
