// Package leadercache gives a member's sarama.Client a lean metadata
// cache: what a member reads of Kafka's metadata is the leader and its
// epoch of the partitions it owns, and brokers' addresses, while sarama's
// client keeps every partition of every topic asked for with its
// replicas, in-sync replicas and offline replicas (at 10,000 partitions,
// about 1.35 MB a member) and opens a connection to every leader it
// names. Client keeps 16 bytes a partition and opens one connection of
// its own, for its Metadata requests.
package leadercache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// ErrClosed is returned once Close has been called.
var ErrClosed = errors.New("leadercache: client closed")

// Client is a sarama.Client whose topic metadata (Topics, Partitions,
// Leader, LeaderAndEpoch, Broker, Brokers, RefreshMetadata,
// PartitionNotReadable) is its own; everything else (Config, the
// coordinator, Close) is the wrapped client's. Replicas, InSyncReplicas
// and OfflineReplicas are the wrapped client's, which then reads and
// keeps the topic's metadata as sarama does. Safe for concurrent use.
type Client struct {
	sarama.Client
	conf  *sarama.Config
	seeds []string

	// refresh serialises the Metadata requests (one connection).
	refresh sync.Mutex

	mu      sync.Mutex
	closed  bool
	conn    *sarama.Broker           // the metadata connection; set under refresh too
	brokers map[int32]*sarama.Broker // by id, as the last response named them
	topics  map[string]*topic
}

// topic is what is kept of a topic: its partitions sorted by id.
type topic struct {
	id        sarama.Uuid
	parts     []part
	refreshed time.Time // the start of the request that read it
}

// part is a partition: 16 bytes.
type part struct {
	id, leader, epoch int32
	err               sarama.KError
}

// New wraps client, created with seeds (the addresses its Metadata
// requests fall back on while no response named brokers). client's
// Config is used for the connection (TLS, SASL, timeouts, metrics).
func New(client sarama.Client, seeds []string) (*Client, error) {
	if client == nil {
		return nil, errors.New("leadercache: nil client")
	}
	if len(seeds) == 0 {
		return nil, errors.New("leadercache: no seed broker")
	}
	return &Client{Client: client, conf: client.Config(), seeds: slices.Clone(seeds),
		brokers: map[int32]*sarama.Broker{}, topics: map[string]*topic{}}, nil
}

// find returns the partition p of t (nil if t does not have it).
func (t *topic) find(p int32) *part {
	if p >= 0 && int(p) < len(t.parts) && t.parts[p].id == p {
		return &t.parts[p]
	}
	i, ok := slices.BinarySearchFunc(t.parts, p, func(x part, id int32) int { return int(x.id - id) })
	if !ok {
		return nil
	}
	return &t.parts[i]
}

// Topics returns the topics read so far (not every topic of the cluster,
// as sarama's does with Metadata.Full).
func (c *Client) Topics() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	out := make([]string, 0, len(c.topics))
	for name := range c.topics {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// Partitions returns the partition ids of topic, read first if unknown.
func (c *Client) Partitions(name string) ([]int32, error) {
	return c.partitions(name, false)
}

// WritablePartitions returns the partition ids of topic that have a
// leader.
func (c *Client) WritablePartitions(name string) ([]int32, error) {
	return c.partitions(name, true)
}

func (c *Client) partitions(name string, writable bool) ([]int32, error) {
	ids, known, err := c.cachedPartitions(name, writable)
	if err != nil || known {
		return ids, err
	}
	if err := c.RefreshMetadata(name); err != nil {
		return nil, err
	}
	ids, _, err = c.cachedPartitions(name, writable)
	return ids, err
}

func (c *Client) cachedPartitions(name string, writable bool) (ids []int32, known bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, ErrClosed
	}
	t := c.topics[name]
	if t == nil {
		return nil, false, nil
	}
	for _, p := range t.parts {
		if !writable || p.leader >= 0 {
			ids = append(ids, p.id)
		}
	}
	return ids, true, nil
}

// Leader returns the leader of a partition (see LeaderAndEpoch).
func (c *Client) Leader(name string, partition int32) (*sarama.Broker, error) {
	b, _, err := c.LeaderAndEpoch(name, partition)
	return b, err
}

// LeaderAndEpoch returns the leader of a partition and its epoch, as
// sarama's client does: from the cache, or, when the cache has no leader
// for it, after reading the topic's metadata once more. The broker
// returned is not connected: it names the leader (ID, Addr, Rack).
func (c *Client) LeaderAndEpoch(name string, partition int32) (*sarama.Broker, int32, error) {
	b, epoch, err := c.cachedLeader(name, partition)
	if b != nil || errors.Is(err, ErrClosed) {
		return b, epoch, err
	}
	if err := c.RefreshMetadata(name); err != nil {
		return nil, -1, err
	}
	return c.cachedLeader(name, partition)
}

func (c *Client) cachedLeader(name string, partition int32) (*sarama.Broker, int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, -1, ErrClosed
	}
	t := c.topics[name]
	if t == nil {
		return nil, -1, sarama.ErrUnknownTopicOrPartition
	}
	p := t.find(partition)
	if p == nil {
		return nil, -1, sarama.ErrUnknownTopicOrPartition
	}
	b := c.brokers[p.leader]
	if p.leader < 0 || b == nil || errors.Is(p.err, sarama.ErrLeaderNotAvailable) {
		return nil, -1, sarama.ErrLeaderNotAvailable
	}
	return b, p.epoch, nil
}

// TopicID returns the id Kafka gave topic (KIP-516), as the cache last
// read it: ok is false when the topic is not cached or its metadata came
// without an id (Metadata below v10, or a broker before 2.8). It does no
// I/O.
func (c *Client) TopicID(name string) (id sarama.Uuid, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.topics[name]; t != nil && t.id != (sarama.Uuid{}) {
		return t.id, true
	}
	return sarama.Uuid{}, false
}

// PartitionNotReadable reports whether a partition has no leader now.
func (c *Client) PartitionNotReadable(name string, partition int32) bool {
	b, _, err := c.cachedLeader(name, partition)
	return b == nil || err != nil
}

// Broker returns the broker of an id as the last Metadata response named
// it (not connected).
func (c *Client) Broker(id int32) (*sarama.Broker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	b := c.brokers[id]
	if b == nil {
		return nil, sarama.ErrBrokerNotFound
	}
	return b, nil
}

// Brokers returns the brokers the last Metadata response named (none
// before the first).
func (c *Client) Brokers() []*sarama.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*sarama.Broker, 0, len(c.brokers))
	for _, b := range c.brokers {
		out = append(out, b)
	}
	return out
}

// RefreshMetadata reads the metadata of topics (of every topic read so
// far when none is named) in one request, retried as the config's
// Metadata.Retry says while a topic is unknown or a partition has no
// leader; sarama.ErrOutOfBrokers (wrapping what each broker answered)
// when no broker answers. A caller that waited for another caller's
// request covering its topics, sent after it asked, takes that one's
// answer.
func (c *Client) RefreshMetadata(topics ...string) error {
	asked := time.Now()
	if slices.Contains(topics, "") {
		return sarama.ErrInvalidTopic
	}
	c.refresh.Lock()
	defer c.refresh.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if len(topics) == 0 {
		for name := range c.topics {
			topics = append(topics, name)
		}
		if len(topics) == 0 {
			c.mu.Unlock()
			return nil
		}
	} else if c.allSince(topics, asked) {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	topics = slices.Compact(slices.Sorted(slices.Values(topics))) // a copy: the caller's slice stays as it was

	var deadline time.Time
	if d := c.conf.Metadata.Timeout; d > 0 {
		deadline = asked.Add(d)
	}
	retries := c.conf.Metadata.Retry.Max
	for attempt := 0; ; attempt++ {
		retry, err := c.refreshOnce(topics, deadline)
		if !retry || attempt >= retries {
			return err
		}
		backoff := c.conf.Metadata.Retry.Backoff
		if f := c.conf.Metadata.Retry.BackoffFunc; f != nil {
			backoff = f(retries-attempt, retries)
		}
		if !deadline.IsZero() && time.Now().Add(backoff).After(deadline) {
			return err
		}
		time.Sleep(backoff)
	}
}

// allSince reports whether every topic was read by a request sent after
// t. Called with mu held.
func (c *Client) allSince(topics []string, t time.Time) bool {
	for _, name := range topics {
		if tp := c.topics[name]; tp == nil || tp.refreshed.Before(t) {
			return false
		}
	}
	return true
}

// refreshOnce sends one Metadata request (trying each broker until one
// answers, while before deadline if set) and applies the answer; retry
// says whether to ask again. Called with refresh held.
func (c *Client) refreshOnce(topics []string, deadline time.Time) (retry bool, err error) {
	var errs []error
	for _, addr := range c.candidates() {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		b, err := c.connect(addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sent := time.Now()
		req := sarama.NewMetadataRequest(c.conf.Version, topics)
		req.AllowAutoTopicCreation = c.conf.Metadata.AllowAutoTopicCreation
		resp, err := b.GetMetadata(req)
		if err == nil && len(resp.Brokers) == 0 {
			// A broker starting up may answer with no broker (KAFKA-7924).
			err = fmt.Errorf("leadercache: broker %s answered metadata without brokers", addr)
		}
		if err != nil {
			if errors.Is(err, sarama.ErrSASLAuthenticationFailed) || errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				return false, err
			}
			errs = append(errs, err)
			c.disconnect()
			if c.isClosed() {
				return false, ErrClosed
			}
			continue
		}
		return c.apply(resp, sent)
	}
	return true, sarama.Wrap(sarama.ErrOutOfBrokers, errs...)
}

// candidates are the addresses to ask: the connected one first, then
// the brokers last named (shuffled), then the seeds.
func (c *Client) candidates() []string {
	var out []string
	c.mu.Lock()
	if c.conn != nil {
		out = append(out, c.conn.Addr())
	}
	var named []string
	for _, b := range c.brokers {
		named = append(named, b.Addr())
	}
	c.mu.Unlock()
	rand.Shuffle(len(named), func(i, j int) { named[i], named[j] = named[j], named[i] })
	for _, a := range append(named, c.seeds...) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// connect returns the metadata connection to addr, opening it (and
// closing one to another address). Called with refresh held.
func (c *Client) connect(addr string) (*sarama.Broker, error) {
	c.mu.Lock()
	b := c.conn
	c.mu.Unlock()
	if b != nil && b.Addr() == addr {
		if ok, _ := b.Connected(); ok {
			return b, nil
		}
	}
	c.disconnect()
	b = sarama.NewBroker(addr)
	if err := b.Open(c.conf); err != nil {
		return nil, err
	}
	// Open connects in the background: the request waits for it.
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.conn = b
	}
	c.mu.Unlock()
	if closed {
		_ = b.Close()
		return nil, ErrClosed
	}
	return b, nil
}

// disconnect closes the metadata connection.
func (c *Client) disconnect() {
	c.mu.Lock()
	b := c.conn
	c.conn = nil
	c.mu.Unlock()
	if b != nil {
		_ = b.Close()
	}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// apply keeps what a response says of its brokers and topics, as sarama's
// client does: a topic unknown (retried) or refused is dropped; one
// whose partitions lack a leader is kept and retried; a partition's
// older leader epoch (a broker whose metadata lags) does not replace a
// newer one of the same topic.
func (c *Client) apply(resp *sarama.MetadataResponse, sent time.Time) (retry bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, ErrClosed
	}
	named := make(map[int32]*sarama.Broker, len(resp.Brokers))
	for _, b := range resp.Brokers {
		if b == nil {
			continue
		}
		if old := c.brokers[b.ID()]; old != nil && old.Addr() == b.Addr() && old.Rack() == b.Rack() {
			b = old // the same broker: callers may compare
		}
		named[b.ID()] = b
	}
	c.brokers = named
	var errs []error
	for _, tm := range resp.Topics {
		prev := c.topics[tm.Name]
		delete(c.topics, tm.Name)
		switch {
		case errors.Is(tm.Err, sarama.ErrNoError):
		case errors.Is(tm.Err, sarama.ErrLeaderNotAvailable):
			errs = append(errs, fmt.Errorf("%s: %w", tm.Name, tm.Err))
			retry = true
		case errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition):
			errs = append(errs, fmt.Errorf("%s: %w", tm.Name, tm.Err))
			retry = true
			continue
		default:
			errs = append(errs, fmt.Errorf("%s: %w", tm.Name, tm.Err))
			continue
		}
		t := &topic{id: tm.Uuid, parts: make([]part, 0, len(tm.Partitions)), refreshed: sent}
		same := prev != nil && tm.Uuid != (sarama.Uuid{}) && tm.Uuid == prev.id
		for _, pm := range tm.Partitions {
			p := part{id: pm.ID, leader: pm.Leader, epoch: pm.LeaderEpoch, err: pm.Err}
			if same && pm.LeaderEpoch >= 0 {
				if q := prev.find(pm.ID); q != nil && pm.LeaderEpoch < q.epoch {
					p = *q
				}
			}
			if errors.Is(p.err, sarama.ErrLeaderNotAvailable) {
				errs = append(errs, fmt.Errorf("%s/%d: %w", tm.Name, pm.ID, p.err))
				retry = true
			}
			t.parts = append(t.parts, p)
		}
		slices.SortFunc(t.parts, func(a, b part) int { return int(a.id - b.id) })
		c.topics[tm.Name] = t
	}
	return retry, errors.Join(errs...)
}

// Close closes the metadata connection (a request under way on it
// fails), then the wrapped client. A second call returns ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	c.disconnect()
	return c.Client.Close()
}
