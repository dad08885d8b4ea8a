package metadata_test

import (
	"strings"
	"testing"
	"time"

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
// ids that make kazoo-go's decoder panic), missing and broken state nodes,
// and the repair of a broken topic node, seen through its re-armed watch.
func TestMalformedNodesSkipped(t *testing.T) {
	c := testcluster.Shared(t)
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := fakeLayout{t: t, conn: conn, chroot: "/" + testcluster.Name(t, "fake")}
	f.put("/brokers/topics/good", `{"version":1,"partitions":{"0":[1,2],"1":[2,1],"2":[3]}}`)
	f.put("/brokers/topics/good/partitions/0/state", `{"leader":2,"isr":[2,1]}`)
	f.put("/brokers/topics/good/partitions/1/state", `{"leader":`) // broken; partition 2 has none
	f.put("/brokers/topics/notjson", "not json")

	leaks := goleak.IgnoreCurrent()
	w, err := metadata.Open(c.ZooKeeperAddr()+f.chroot, nil, testConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		goleak.VerifyNone(t, leaks)
	}()
	s := w.Snapshot()
	good := s.Topics["good"]
	if len(good) != 3 || good[0].Leader != 2 || good[1].Leader != -1 || good[2].Leader != -1 || len(good[0].Replicas) != 2 {
		t.Fatalf("good = %+v; want leaders [2 -1 -1]", good)
	}
	if ps, ok := s.Topics["notjson"]; !ok || ps != nil {
		t.Fatalf("notjson = %v (listed %v); want listed without partitions", ps, ok)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err() = %v; broken nodes must not be errors", err)
	}

	f.put("/brokers/topics/badids", `{"version":1,"partitions":{"3":[1]}}`)
	await(t, w, "badids listed", func(s metadata.Snapshot) bool { ps, ok := s.Topics["badids"]; return ok && ps == nil })
	f.put("/brokers/topics/badids", `{"version":1,"partitions":{"0":[1]}}`)
	f.put("/brokers/topics/good/partitions/2/state", `{"leader":3,"isr":[3]}`)
	s = await(t, w, "badids repaired and good/2 led", func(s metadata.Snapshot) bool {
		return len(s.Topics["badids"]) == 1 && len(s.Topics["good"]) == 3 && s.Topics["good"][2].Leader == 3
	})
	if p := s.Topics["badids"][0]; p.ID != 0 || p.Leader != -1 || len(p.Replicas) != 1 {
		t.Errorf("badids partition = %+v", p)
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}
