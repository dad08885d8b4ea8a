package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
)

// SaramaConfig returns a sarama config for talking to the local cluster.
func SaramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ClientID = "zkgroup-testcluster"
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	return cfg
}

// CreateTopic creates topic with the given partitions and replication
// factor and waits until every partition has a leader. It blocks.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int32, replication int16) error {
	err := retry(ctx, func() error {
		admin, err := sarama.NewClusterAdmin(c.Addrs(), SaramaConfig())
		if err != nil {
			return fmt.Errorf("testcluster: admin: %w", err)
		}
		defer admin.Close()
		err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: replication}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("testcluster: create topic %q: %w", topic, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for p := int32(0); p < partitions; p++ {
		if _, err := c.WaitLeader(ctx, topic, p, -1); err != nil {
			return err
		}
	}
	return c.WaitMetadata(ctx, topic, partitions)
}

// AddPartitions raises topic's partition count to total and waits until
// every broker's metadata has them all, each with a leader.
func (c *Cluster) AddPartitions(ctx context.Context, topic string, total int32) error {
	admin, err := sarama.NewClusterAdmin(c.Addrs(), SaramaConfig())
	if err != nil {
		return fmt.Errorf("testcluster: admin: %w", err)
	}
	defer admin.Close()
	if err := admin.CreatePartitions(topic, total, nil, false); err != nil {
		return fmt.Errorf("testcluster: create partitions %q -> %d: %w", topic, total, err)
	}
	for p := int32(0); p < total; p++ {
		if _, err := c.WaitLeader(ctx, topic, p, -1); err != nil {
			return err
		}
	}
	return c.WaitMetadata(ctx, topic, total)
}

// WaitMetadata polls until every running broker's metadata lists topic
// with at least partitions partitions, each with a leader among the live
// brokers that broker knows. A partition's leader is written to ZooKeeper
// (see WaitLeader) before the controller tells the brokers, which learn
// it one after another; until then a client whose metadata comes from a
// broker not yet told sees the topic unknown, fewer partitions (sarama's
// producer then fails a message to a later one with ErrInvalidPartition,
// unretried) or no leader. A client created after WaitMetadata returned
// sees the whole topic, whichever broker it asks.
func (c *Cluster) WaitMetadata(ctx context.Context, topic string, partitions int32) error {
	var last error
	for {
		last = nil
		for _, addr := range c.Addrs() {
			if last = metadataComplete(addr, topic, partitions); last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond): // polling the condition
		case <-ctx.Done():
			return fmt.Errorf("testcluster: waiting for the metadata of %s (%d partitions, each led) on every broker: %v: %w", topic, partitions, last, ctx.Err())
		}
	}
}

// askMetadata opens a connection of its own to the broker at addr (as
// Kafka version v, short timeouts), sends req and closes it.
func askMetadata(addr string, v sarama.KafkaVersion, req *sarama.MetadataRequest) (*sarama.MetadataResponse, error) {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 5 * time.Second
	br := sarama.NewBroker(addr)
	if err := br.Open(cfg); err != nil {
		return nil, err
	}
	defer br.Close()
	return br.GetMetadata(req)
}

// metadataComplete asks the broker at addr for topic's metadata and says
// what is missing, if anything.
func metadataComplete(addr, topic string, partitions int32) error {
	v := SaramaConfig().Version
	resp, err := askMetadata(addr, v, sarama.NewMetadataRequest(v, []string{topic}))
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	live := make(map[int32]bool, len(resp.Brokers))
	for _, b := range resp.Brokers {
		live[b.ID()] = true
	}
	for _, tm := range resp.Topics {
		if tm.Name != topic {
			continue
		}
		if tm.Err != sarama.ErrNoError {
			return fmt.Errorf("%s: topic %s: %w", addr, topic, tm.Err)
		}
		led := int32(0)
		for _, pm := range tm.Partitions {
			if (pm.Err == sarama.ErrNoError || pm.Err == sarama.ErrReplicaNotAvailable) && live[pm.Leader] {
				led++
			}
		}
		if int32(len(tm.Partitions)) < partitions || led < int32(len(tm.Partitions)) {
			return fmt.Errorf("%s: topic %s: %d partitions, %d of them led; want %d, all led", addr, topic, len(tm.Partitions), led, partitions)
		}
		return nil
	}
	return fmt.Errorf("%s: topic %s not in the metadata", addr, topic)
}

// DeleteTopic deletes topic.
func (c *Cluster) DeleteTopic(topic string) error {
	admin, err := sarama.NewClusterAdmin(c.Addrs(), SaramaConfig())
	if err != nil {
		return fmt.Errorf("testcluster: admin: %w", err)
	}
	defer admin.Close()
	if err := admin.DeleteTopic(topic); err != nil {
		return fmt.Errorf("testcluster: delete topic %q: %w", topic, err)
	}
	return nil
}

type partitionState struct {
	Leader int32   `json:"leader"`
	ISR    []int32 `json:"isr"`
}

// Leader reads the current leader of a partition from its ZooKeeper state
// node (-1 when it has none).
func (c *Cluster) Leader(topic string, partition int32) (int32, error) {
	if c.opts.KRaft {
		return c.kafkaLeader(topic, partition)
	}
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	st, err := readState(conn, c.statePath(topic, partition))
	return st.Leader, err
}

func (c *Cluster) statePath(topic string, partition int32) string {
	return c.opts.Chroot + "/brokers/topics/" + topic + "/partitions/" + strconv.Itoa(int(partition)) + "/state"
}

func readState(conn *zk.Conn, path string) (partitionState, error) {
	data, _, err := conn.Get(path)
	if err != nil {
		return partitionState{Leader: -1}, err
	}
	st := partitionState{Leader: -1}
	if err := json.Unmarshal(data, &st); err != nil {
		return partitionState{Leader: -1}, fmt.Errorf("testcluster: %s: %w", path, err)
	}
	return st, nil
}

// WaitLeader polls (no watch: see waitZNode) until the partition has a
// leader other than not (pass -1 for any leader) that is a running broker,
// and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, topic string, partition int32, not int32) (int32, error) {
	var conn *zk.Conn
	if !c.opts.KRaft {
		var err error
		if conn, err = c.Connect(10 * time.Second); err != nil {
			return -1, err
		}
		defer conn.Close()
	}
	path := c.statePath(topic, partition)
	for {
		var st partitionState
		var err error
		if c.opts.KRaft {
			st.Leader, err = c.kafkaLeader(topic, partition)
		} else {
			st, err = readState(conn, path)
		}
		if err == nil && st.Leader >= 0 && st.Leader != not {
			if c.attached != nil {
				return st.Leader, nil
			}
			if b, e := c.broker(st.Leader); e == nil && b.proc.running() {
				return st.Leader, nil
			}
		}
		select {
		case <-time.After(100 * time.Millisecond): // polling the condition
		case <-ctx.Done():
			return -1, fmt.Errorf("testcluster: waiting for a leader of %s/%d (not %d, last state %+v, err %v): %w", topic, partition, not, st, err, ctx.Err())
		}
	}
}

// Key and Value give the content Produce writes for message i of a topic:
// "<topic>-k-<i>" and "<topic>-v-<i>".
func Key(topic string, i int) string   { return topic + "-k-" + strconv.Itoa(i) }
func Value(topic string, i int) string { return topic + "-v-" + strconv.Itoa(i) }

// Produced is what Produce wrote.
type Produced struct {
	// Count of messages per partition.
	PerPartition map[int32]int64
	// Offsets of message i, by i.
	Offsets map[int]Position
}

// Position is where a message landed.
type Position struct {
	Partition int32
	Offset    int64
}

// Produce writes n messages with Key(topic, i) and Value(topic, i) for i in
// [from, from+n), message i to partition i mod partitions, with acks=all,
// and returns where each landed. It blocks until all are acknowledged
// (retrying for up to 20 s, through a broker's failover).
func (c *Cluster) Produce(topic string, partitions int32, from, n int) (Produced, error) {
	client, p, err := c.producer(topic, partitions)
	if err != nil {
		return Produced{}, err
	}
	defer client.Close()
	out, err := produceBatch(p, topic, partitions, from, n)
	if cerr := p.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("testcluster: producer close: %w", cerr)
	}
	return out, err
}

// producer returns a client whose metadata knows partitions partitions of
// topic and an acks=all producer made from it; the caller closes both,
// the producer first.
func (c *Cluster) producer(topic string, partitions int32) (sarama.Client, sarama.AsyncProducer, error) {
	cfg := SaramaConfig()
	// A kill -9'd broker leads its partitions until its ZooKeeper session
	// expires (BrokerSessionTimeout) and the controller moves them: the
	// (idempotent, so duplicate-free) retries outlast that.
	cfg.Producer.Retry.Max = 80
	cfg.Producer.Flush.Messages = 500
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), metadataWait)
	defer cancel()
	client, err := c.TopicClient(ctx, cfg, topic, partitions)
	if err != nil {
		return nil, nil, err
	}
	p, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("testcluster: producer: %w", err)
	}
	return client, p, nil
}

// produceBatch writes messages [from, from+n) through p as Produce
// describes and waits until each is acknowledged or failed.
func produceBatch(p sarama.AsyncProducer, topic string, partitions int32, from, n int) (Produced, error) {
	out := Produced{PerPartition: map[int32]int64{}, Offsets: make(map[int]Position, n)}
	done := make(chan error, 1)
	go func() {
		var firstErr error
		for i := 0; i < n; i++ {
			select {
			case m := <-p.Successes():
				idx := m.Metadata.(int)
				out.PerPartition[m.Partition]++
				out.Offsets[idx] = Position{Partition: m.Partition, Offset: m.Offset}
			case e := <-p.Errors():
				if firstErr == nil {
					firstErr = fmt.Errorf("testcluster: produce %s: %w", topic, e.Err)
				}
			}
		}
		done <- firstErr
	}()
	for i := from; i < from+n; i++ {
		p.Input() <- &sarama.ProducerMessage{
			Topic:     topic,
			Partition: int32(i % int(partitions)),
			Key:       sarama.StringEncoder(Key(topic, i)),
			Value:     sarama.StringEncoder(Value(topic, i)),
			Metadata:  i,
		}
	}
	return out, <-done
}

// metadataWait bounds how long the helpers below wait for metadata to
// follow a change (a topic created or grown, a leader moved).
const metadataWait = time.Minute

// TopicClient returns a client of cfg whose metadata lists at least
// partitions partitions of topic: it refreshes topic's metadata until it
// does or ctx ends. sarama's producer partitions by the count its
// client's metadata holds, and fails a message to a partition past it
// with ErrInvalidPartition, without a retry or a refresh; a client
// created right after the topic was created or grown may ask a broker
// that has not learnt it yet (see WaitMetadata). The caller closes the
// client (after the producers made from it).
func (c *Cluster) TopicClient(ctx context.Context, cfg *sarama.Config, topic string, partitions int32) (sarama.Client, error) {
	client, err := sarama.NewClient(c.Addrs(), cfg)
	if err != nil {
		return nil, fmt.Errorf("testcluster: client: %w", err)
	}
	err = retryMetadata(ctx, client, topic, func() error {
		parts, err := client.Partitions(topic)
		if err == nil && int32(len(parts)) < partitions {
			err = fmt.Errorf("%d partitions in the metadata, want %d", len(parts), partitions) // retried
		}
		return err
	})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("testcluster: metadata of %s: %w", topic, err)
	}
	return client, nil
}

// HighWaterMarks returns the log-end offset of each partition of topic.
// An offset request that meets a leader moved away (a broker stopped,
// killed or back), a broker that has not learnt the leader yet, or a new
// leader whose high watermark is not yet known is retried on refreshed
// metadata for up to a minute.
func (c *Cluster) HighWaterMarks(topic string) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), metadataWait)
	defer cancel()
	client, err := sarama.NewClient(c.Addrs(), SaramaConfig())
	if err != nil {
		return nil, fmt.Errorf("testcluster: client: %w", err)
	}
	defer client.Close()
	var parts []int32
	err = retryMetadata(ctx, client, topic, func() (err error) {
		parts, err = client.Partitions(topic)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testcluster: partitions of %q: %w", topic, err)
	}
	out := make(map[int32]int64, len(parts))
	for _, p := range parts {
		err := retryMetadata(ctx, client, topic, func() error {
			off, err := client.GetOffset(topic, p, sarama.OffsetNewest)
			out[p] = off
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("testcluster: offset of %s/%d: %w", topic, p, err)
		}
	}
	return out, nil
}

// retryMetadata runs f until it succeeds, fails for good (see
// metadataLag) or ctx ends, refreshing client's metadata of topic between
// tries.
func retryMetadata(ctx context.Context, client sarama.Client, topic string, f func() error) error {
	for {
		err := f()
		if err == nil || !metadataLag(err) {
			return err
		}
		select {
		case <-time.After(200 * time.Millisecond): // the cluster has no event to wait on
		case <-ctx.Done():
			return err
		}
		_ = client.RefreshMetadata(topic) // a failed refresh shows in f's next error
	}
}

// metadataLag reports whether err may be metadata that has not caught up
// yet with a change (a topic created or grown, a leader moved, a broker
// gone), which a refresh and a retry get past. Kafka's own errors count
// when Kafka calls them retriable; a connection's failure counts too.
func metadataLag(err error) bool {
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		switch kerr {
		case sarama.ErrUnknownTopicOrPartition, sarama.ErrLeaderNotAvailable, sarama.ErrNotLeaderForPartition,
			sarama.ErrReplicaNotAvailable, sarama.ErrOffsetNotAvailable, sarama.ErrFencedLeaderEpoch,
			sarama.ErrUnknownLeaderEpoch, sarama.ErrRequestTimedOut, sarama.ErrNotEnoughReplicas,
			sarama.ErrKafkaStorageError, sarama.ErrNetworkException:
			return true
		}
		return false
	}
	return !errors.Is(err, sarama.ErrClosedClient)
}

// CommittedOffsets returns the offsets group committed to Kafka for each
// partition of topic (-1 where none).
func (c *Cluster) CommittedOffsets(ctx context.Context, group, topic string, partitions int32) (map[int32]int64, error) {
	admin, err := sarama.NewClusterAdmin(c.Addrs(), SaramaConfig())
	if err != nil {
		return nil, fmt.Errorf("testcluster: admin: %w", err)
	}
	defer admin.Close()
	ps := make([]int32, partitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		return nil, fmt.Errorf("testcluster: offsets of group %q: %w", group, err)
	}
	kerr := resp.Err
	if resp.Version >= 8 && len(resp.Groups) > 0 {
		kerr = resp.Groups[0].Err // where v8 reports a coordinator loading or moving
	}
	if kerr != sarama.ErrNoError {
		return nil, fmt.Errorf("testcluster: offsets of group %q: %w", group, kerr)
	}
	out := make(map[int32]int64, partitions)
	for _, p := range ps {
		out[p] = -1
		b := resp.GetBlock(topic, p)
		switch {
		case b == nil: // none committed
		case b.Err != sarama.ErrNoError:
			// A coordinator loading or moving: not "none committed".
			return nil, fmt.Errorf("testcluster: offset of %s/%d in group %q: %w", topic, p, group, b.Err)
		default:
			out[p] = b.Offset
		}
	}
	return out, nil
}

// retry runs f until it succeeds, ctx ends (default 60 s) or 20 attempts
// failed: admin requests to a loaded cluster fail transiently.
func retry(ctx context.Context, f func() error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
	}
	var err error
	for i := 0; i < 20; i++ {
		if err = f(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	return err
}

// kafkaLeader reads a partition's leader from Kafka's metadata (KRaft
// clusters keep no state in ZooKeeper); -1 when it has none.
func (c *Cluster) kafkaLeader(topic string, partition int32) (int32, error) {
	client, err := sarama.NewClient(c.Addrs(), SaramaConfig())
	if err != nil {
		return -1, fmt.Errorf("testcluster: client: %w", err)
	}
	defer client.Close()
	b, err := client.Leader(topic, partition)
	if err != nil {
		return -1, err
	}
	return b.ID(), nil
}
