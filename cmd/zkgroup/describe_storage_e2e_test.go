package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// TestDescribeFindsOffsetStorage: without --offset-storage, describe
// shows the offsets where they are and says so: a group of the old
// ZooKeeper consumers (offsets in ZooKeeper, as the JVM high-level
// consumer writes them) and a group with offsets in Kafka; with the flag
// it shows the storage asked for.
func TestDescribeFindsOffsetStorage(t *testing.T) {
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	createTopic(t, c, topic, 2, 1)
	testcluster.MustProduce(t, c, topic, 2, 0, 10)
	zkc := c.ZooKeeperConnect()
	describe := func(group string, extra ...string) ops.Description {
		t.Helper()
		stdout, stderr, code := run(t, append([]string{"describe", "--zookeeper", zkc, "--group", group, "--json"}, extra...)...)
		var d ops.Description
		if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
			t.Fatalf("describe %s %v exited %d: %v\n%s", group, extra, code, err, stderr)
		}
		return d
	}
	current := func(d ops.Description) map[int32]int64 {
		out := map[int32]int64{}
		for _, r := range d.Partitions {
			out[r.Partition] = r.CurrentOffset
		}
		return out
	}

	// Offsets in ZooKeeper, written as the old consumer writes them.
	zgroup := testcluster.Name(t, "zk")
	conn := testcluster.ZooKeeper(t, c)
	for p, off := range map[int32]string{0: "3", 1: "4"} {
		createAll(t, conn, c.Chroot()+zkdata.OffsetPath(zgroup, topic, p), off)
	}
	d := describe(zgroup)
	if got := current(d); d.OffsetStorage != "zookeeper" || got[0] != 3 || got[1] != 4 ||
		!strings.Contains(d.OffsetStorageNote, "ZooKeeper holds offsets for 2 partitions, Kafka none") {
		t.Errorf("ZooKeeper offsets: describe shows %s storage (%q), offsets %v; want zookeeper, 3 and 4", d.OffsetStorage, d.OffsetStorageNote, got)
	}
	text, _, code := run(t, "describe", "--zookeeper", zkc, "--group", zgroup)
	if code != 0 || !strings.Contains(text, "(offsets from zookeeper storage: ZooKeeper holds offsets for 2 partitions, Kafka none; --offset-storage picks one)") {
		t.Errorf("text (exit %d) does not say where the offsets come from:\n%s", code, text)
	}
	if d := describe(zgroup, "--offset-storage", "kafka"); d.OffsetStorage != "kafka" || d.OffsetStorageNote != "" || len(d.Partitions) != 0 {
		t.Errorf("--offset-storage kafka: %s (%q), offsets %v; want Kafka's: none", d.OffsetStorage, d.OffsetStorageNote, current(d))
	}

	// Offsets in Kafka.
	kgroup := testcluster.Name(t, "kafka")
	if _, stderr, code := run(t, "offsets", "reset", "--zookeeper", zkc, "--group", kgroup, "--topic", topic, "--to-latest", "--execute"); code != 0 {
		t.Fatalf("offsets reset exited %d: %s", code, stderr)
	}
	d = describe(kgroup)
	if got := current(d); d.OffsetStorage != "kafka" || got[0] != 5 || got[1] != 5 ||
		!strings.Contains(d.OffsetStorageNote, "Kafka holds offsets for 2 partitions, ZooKeeper none") {
		t.Errorf("Kafka offsets: describe shows %s storage (%q), offsets %v; want kafka, 5 and 5", d.OffsetStorage, d.OffsetStorageNote, got)
	}
	// Both: ZooKeeper's left behind (a group moved to Kafka storage).
	for p := range int32(2) {
		createAll(t, conn, c.Chroot()+zkdata.OffsetPath(kgroup, topic, p), "1")
	}
	if d = describe(kgroup); d.OffsetStorage != "kafka" || !strings.Contains(d.OffsetStorageNote, "both hold offsets") {
		t.Errorf("both storages: describe shows %s (%q); want kafka, the one ahead", d.OffsetStorage, d.OffsetStorageNote)
	}
	if d = describe(kgroup, "--offset-storage", "zookeeper"); d.OffsetStorage != "zookeeper" || current(d)[1] != 1 {
		t.Errorf("--offset-storage zookeeper: %s, offsets %v; want ZooKeeper's 1", d.OffsetStorage, current(d))
	}
}

// createAll creates path with data, and its missing parents.
func createAll(t *testing.T, conn *zk.Conn, path, data string) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		var v []byte
		if i == len(parts)-1 {
			v = []byte(data)
		}
		if _, err := conn.Create(p, v, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}
