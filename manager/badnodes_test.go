package manager_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestForeignNodesReported: a registration that is not JSON under ids/,
// one whose subscription does not parse, and an owner node held by a
// non-member (a squat) reach Errors() as *manager.NodeError
// (ErrBadRegistration, ErrSquatted) and Stats, once; a peer's bad
// subscription is not reported as this member's ErrConfig;
// when the squatter's session ends, the partition is claimed and the count
// drops to zero.
func TestForeignNodesReported(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 4)
	foreign := testcluster.ZooKeeper(t, c)
	root := c.Chroot() + "/consumers/" + group
	mkdirs(t, foreign, root+"/ids")
	mkdirs(t, foreign, root+"/owners/"+topic)
	if _, err := foreign.Create(root+"/ids/phantom", []byte("not json"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	badSub := []byte(`{"version":1,"pattern":"bogus","subscription":{"t":1}}`)
	if _, err := foreign.Create(root+"/ids/phantom2", badSub, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	squat := root + "/owners/" + topic + "/0"
	if _, err := foreign.Create(squat, []byte("squatter"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	cfg := baseConfig(t, "a")
	cfg.ClaimWaitCheck = time.Second
	cons := mustJoin(t, c, group, sub, cfg)
	nodeErrors, stop := consumeNodeErrors(t, cons)
	defer stop()
	// Stats counts a node as it is reported; the report reaches Errors()
	// (and the collector) just after: wait for both.
	await(t, 30*time.Second, "both nodes reported", func() bool {
		st := cons.Stats()
		return st.BadRegistrations == 2 && st.SquattedPartitions == 1 && len(st.Partitions) == 3 && len(nodeErrors()) >= 3
	})
	var bad, squatted int
	for _, ne := range nodeErrors() {
		switch {
		case errors.Is(ne, manager.ErrBadRegistration) && path.Base(ne.Path) == "phantom":
			bad++
		case errors.Is(ne, manager.ErrBadRegistration) && path.Base(ne.Path) == "phantom2" &&
			!errors.Is(ne, manager.ErrConfig) && strings.Contains(ne.Error(), "bogus"):
			bad++
		case errors.Is(ne, manager.ErrSquatted) && ne.Path == "/consumers/"+group+"/owners/"+topic+"/0":
			squatted++
		default:
			t.Errorf("unexpected node error: %v", ne)
		}
	}
	if bad != 2 || squatted != 1 {
		t.Errorf("reported %d bad registrations and %d squats, want 2 and 1 (each once)", bad, squatted)
	}
	foreign.Close() // the squatter's session ends: its nodes go
	await(t, 30*time.Second, "partition 0 claimed after the squatter left", func() bool {
		st := cons.Stats()
		return st.SquattedPartitions == 0 && len(st.Partitions) == 4 && st.BadRegistrations == 0
	})
}

// TestPeerRegistrationOverReplyCap: a peer's registration longer than
// this member's Config.ZooKeeperMaxReply (a static subscription of very
// many topics) is reported once as a *manager.NodeError that wraps both
// ErrBadRegistration and ErrReplyTooLarge and names the setting; the peer
// gets nothing from this member, which goes on consuming every partition.
func TestPeerRegistrationOverReplyCap(t *testing.T) {
	c := testcluster.Shared(t)
	topic, group, sub := newTopic(t, c, 4)
	foreign := testcluster.ZooKeeper(t, c)
	root := c.Chroot() + "/consumers/" + group
	mkdirs(t, foreign, root+"/ids")
	const limit = 64 << 10
	var reg strings.Builder
	reg.WriteString(`{"version":1,"pattern":"static","subscription":{"` + topic + `":1`)
	for i := 0; reg.Len() < limit+1024; i++ {
		reg.WriteString(`,"` + topic + `-other-` + strings.Repeat("x", 20) + "-" + string(rune('a'+i%26)) + strings.Repeat("y", i%7) + `-` + itoa(i) + `":1`)
	}
	reg.WriteString(`}}`)
	if _, err := foreign.Create(root+"/ids/huge", []byte(reg.String()), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	cfg := baseConfig(t, "a")
	cfg.ZooKeeperMaxReply = limit
	cons := mustJoin(t, c, group, sub, cfg)
	nodeErrors, stop := consumeNodeErrors(t, cons)
	defer stop()
	await(t, 30*time.Second, "the registration reported, every partition owned", func() bool {
		st := cons.Stats()
		return st.BadRegistrations == 1 && len(st.Partitions) == 4 && len(nodeErrors()) >= 1
	})
	got := nodeErrors()
	if len(got) != 1 {
		t.Fatalf("node errors: %v; want the one registration", got)
	}
	ne := got[0]
	if path.Base(ne.Path) != "huge" || !errors.Is(ne, manager.ErrBadRegistration) || !errors.Is(ne, manager.ErrReplyTooLarge) ||
		errors.Is(ne, manager.ErrConfig) || !strings.Contains(ne.Error(), "Config.ZooKeeperMaxReply") {
		t.Errorf("reported %v; want the node, ErrBadRegistration and ErrReplyTooLarge, naming Config.ZooKeeperMaxReply", ne)
	}
	t.Logf("reported: %v", ne)
}

// mkdirs creates p and its parents through conn (a session of no member).
func mkdirs(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

// consumeNodeErrors acks every message cons hands out and collects the
// *manager.NodeError values reported on its Errors(); nodeErrors returns
// those seen so far, and stop closes cons and waits for both loops.
func consumeNodeErrors(t *testing.T, cons *manager.Consumer) (nodeErrors func() []*manager.NodeError, stop func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []*manager.NodeError
	wg.Go(func() { forEach(t, "Each", cons.Each(context.Background()), func(m *manager.Message) { cons.Ack(m) }) })
	wg.Go(func() {
		for err := range cons.Errors() {
			var ne *manager.NodeError
			if errors.As(err, &ne) {
				mu.Lock()
				got = append(got, ne)
				mu.Unlock()
			}
		}
	})
	nodeErrors = func() []*manager.NodeError {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	stop = func() {
		if err := cons.Close(); err != nil {
			t.Error(err)
		}
		wg.Wait()
	}
	return nodeErrors, stop
}
