package metadata_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// fakeLayout writes a Kafka-like layout under a chroot of its own in the
// shared ZooKeeper, where no broker touches it (a broker would rewrite
// broken topic nodes to add topic ids).
type fakeLayout struct {
	t      *testing.T
	conn   *zk.Conn
	chroot string
}

func (f fakeLayout) put(path, data string) {
	f.t.Helper()
	full := f.chroot + path
	parts := strings.Split(strings.TrimPrefix(full, "/"), "/")
	for i := range parts[:len(parts)-1] {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := f.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			f.t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := f.conn.Create(full, []byte(data), 0, zk.WorldACL(zk.PermAll)); err == zk.ErrNodeExists {
		_, err = f.conn.Set(full, []byte(data), -1)
		if err != nil {
			f.t.Fatalf("set %s: %v", full, err)
		}
	} else if err != nil {
		f.t.Fatalf("create %s: %v", full, err)
	}
}

// TestMalformedNodesSkipped covers broken topic nodes (not JSON; partition
// ids that are not 0..n-1) and the repair of a broken topic
// node, seen through its re-armed watch. State nodes, broken or missing,
// are never read: leaders come from the assignment.
func TestMalformedNodesSkipped(t *testing.T) {
	c := testcluster.Shared(t)
	conn := testcluster.ZooKeeper(t, c)
	f := fakeLayout{t: t, conn: conn, chroot: "/" + testcluster.Name(t, "fake")}
	f.put("/brokers/topics/good", `{"version":1,"partitions":{"0":[1,2],"1":[2,1],"2":[3]}}`)
	f.put("/brokers/topics/good/partitions/0/state", `{"leader":2,"isr":[2,1]}`)
	f.put("/brokers/topics/good/partitions/1/state", `{"leader":`) // broken; partition 2 has none
	f.put("/brokers/topics/notjson", "not json")

	leaks := goleak.IgnoreCurrent()
	var mu sync.Mutex
	reported := map[string]int{}
	cfg := testConfig()
	cfg.OnMalformed = func(err error) {
		var me *metadata.MalformedError
		if !errors.As(err, &me) {
			t.Errorf("OnMalformed got %T %v, want a *MalformedError", err, err)
			return
		}
		mu.Lock()
		reported[me.Path]++
		mu.Unlock()
	}
	zs := dial(t, c.ZooKeeperAddr()+f.chroot)
	w, err := metadata.OpenSession(zs, nil, cfg, testLogger(t))
	if err != nil {
		zs.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		zs.Close()
		goleak.VerifyNone(t, leaks)
	}()
	s := w.Snapshot()
	good := s.Topics["good"]
	if len(good) != 3 || good[0].Leader != 1 || good[1].Leader != 2 || good[2].Leader != 3 || len(good[0].Replicas) != 2 {
		t.Fatalf("good = %+v; want preferred leaders [1 2 3]", good)
	}
	if ps, ok := s.Topics["notjson"]; !ok || ps != nil {
		t.Fatalf("notjson = %v (listed %v); want listed without partitions", ps, ok)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err() = %v; broken nodes must not be errors", err)
	}
	mu.Lock()
	if reported["/brokers/topics/notjson"] != 1 {
		t.Errorf("OnMalformed reported notjson %d times, want once: %v", reported["/brokers/topics/notjson"], reported)
	}
	mu.Unlock()

	f.put("/brokers/topics/badids", `{"version":1,"partitions":{"3":[1]}}`)
	await(t, w, "badids listed", func(s metadata.Snapshot) bool { ps, ok := s.Topics["badids"]; return ok && ps == nil })
	f.put("/brokers/topics/badids", `{"version":1,"partitions":{"0":[1]}}`)
	s = await(t, w, "badids repaired", func(s metadata.Snapshot) bool { return len(s.Topics["badids"]) == 1 })
	if p := s.Topics["badids"][0]; p.ID != 0 || p.Leader != 1 || len(p.Replicas) != 1 {
		t.Errorf("badids partition = %+v", p)
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

// TestOnlyAssignmentChangesFire writes a Kafka-like layout by hand: state
// nodes changing (leader elections) never fire Changes; a topic node
// rewritten with the same assignment neither; a new preferred leader, a
// partition added and a topic created each fire once.
func TestOnlyAssignmentChangesFire(t *testing.T) {
	c := testcluster.Shared(t)
	conn := testcluster.ZooKeeper(t, c)
	f := fakeLayout{t: t, conn: conn, chroot: "/" + testcluster.Name(t, "fake")}
	f.put("/brokers/topics/a", `{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}`)
	f.put("/brokers/topics/a/partitions/0/state", `{"leader":1,"isr":[1,2]}`)
	zs := dial(t, c.ZooKeeperAddr()+f.chroot)
	defer zs.Close()
	w, err := metadata.OpenSession(zs, nil, testConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	v := w.Snapshot().Version

	f.put("/brokers/topics/a/partitions/0/state", `{"leader":2,"isr":[2]}`)
	f.put("/brokers/topics/a/partitions/1/state", `{"leader":1,"isr":[1]}`)
	f.put("/brokers/topics/a", `{"version":3,"partitions":{"0":[1,2],"1":[2,1]},"topic_id":"x"}`)
	awaitResyncs(t, w, 2)
	noChange(t, w, "leader elections and a rewrite of the same assignment", v)

	steps := []struct {
		what, path, data string
		cond             func(metadata.Snapshot) bool
	}{
		{"a new preferred leader", "/brokers/topics/a", `{"version":3,"partitions":{"0":[2,1],"1":[2,1]}}`,
			func(s metadata.Snapshot) bool { return len(s.Topics["a"]) == 2 && s.Topics["a"][0].Leader == 2 }},
		{"a partition added", "/brokers/topics/a", `{"version":3,"partitions":{"0":[2,1],"1":[2,1],"2":[1,2]}}`,
			func(s metadata.Snapshot) bool { return len(s.Topics["a"]) == 3 }},
		{"a topic created", "/brokers/topics/b", `{"version":3,"partitions":{"0":[3]}}`,
			func(s metadata.Snapshot) bool { return len(s.Topics["b"]) == 1 }},
	}
	for _, st := range steps {
		f.put(st.path, st.data)
		v++
		changed(t, w, st.what, v, st.cond)
		awaitResyncs(t, w, 2)
		noChange(t, w, st.what+" (twice)", v)
	}
}
