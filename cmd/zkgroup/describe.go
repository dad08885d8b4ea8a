package main

import (
	"fmt"
	"io"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/manager"
)

// cmdDescribe prints a group's partitions with the columns of
// kafka-consumer-groups --describe, then its members. HOST is the host a
// member runs on, from its registration ("host") or from a member id of
// the JVM shape <group>_<host>-<ms>-<uuid8> (zkgroup's default ids);
// CLIENT-ID is the registration's "client_id"; "-" when unknown. STRATEGY
// is the assignment strategy a member publishes ("zkgroup_strategy"); while
// members publish different ones a STRATEGY MISMATCH line (--json:
// "strategy_mismatch") names them and the strategy in force. The table
// keeps Kafka's columns, for tools that parse it; --json adds
// "claim_token", the fencing token the committed offset was written under
// (Kafka storage: the czxid of that claim's owner node). Without
// --offset-storage (nor offset_storage in the config or environment) it
// reads both storages and shows the one that holds the group's offsets
// (ahead, when both do), saying which and why on its last line (--json:
// "offset_storage" and "offset_storage_note"). Topics
// and partitions come from Kafka's metadata (a KRaft cluster has none in
// ZooKeeper).
func cmdDescribe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("describe", stderr)
	var g groupFlags
	g.register(fs, true)
	if code, ok := g.parse(args, stdout, stderr); !ok {
		return code
	}
	c, err := g.connect(stderr)
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	defer c.close()
	storage, note := g.storage, ""
	var committed ops.Offsets
	if g.cfg.Origin("offset_storage") == "default" {
		// Not configured: show the storage that holds the group's
		// offsets (a group of the old ZooKeeper consumers keeps them in
		// ZooKeeper), and say which and why.
		zkOffs, zerr := c.committed(string(manager.StorageZooKeeper))
		kafkaOffs, kerr := c.committed(string(manager.StorageKafka))
		choice, err := ops.ChooseStorage(zkOffs, zerr, kafkaOffs, kerr)
		if err != nil {
			side := sideKafka
			if kerr == nil {
				side = sideZooKeeper
			}
			return fail(stdout, stderr, g.json, exitFor(err), explain(err, g.cfg, side))
		}
		storage, note, committed = choice.Storage, choice.Note, choice.Committed
	} else {
		var err error
		if committed, err = c.committed(g.storage); err != nil {
			return fail(stdout, stderr, g.json, exitFor(err), explain(err, g.cfg, sideOf(g.storage)))
		}
	}
	var claims ops.Offsets
	if manager.Storage(storage) != manager.StorageZooKeeper {
		if claims, err = ops.KafkaClaims(c.admin, g.group); err != nil {
			return fail(stdout, stderr, g.json, exitFor(err), err)
		}
	}
	d, err := ops.Describe(ops.DescribeInput{Session: c.sess, Committed: committed, Claims: claims,
		LogEnd: ops.LogEndFunc(c.client), Group: g.group, Storage: storage, StorageNote: note,
		Topics:     func() ([]string, error) { return ops.KafkaTopics(c.client) },
		Partitions: ops.KafkaPartitions(c.client)})
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	if g.json {
		_ = printJSON(stdout, d)
		return exitOK
	}
	fmt.Fprint(stdout, d.Text())
	return exitOK
}
