package manager_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// tokenSink is the pattern the docs give a sink outside Kafka: keep the
// highest fencing token seen per partition and refuse a write that
// carries a lower one.
type tokenSink struct {
	mu       sync.Mutex
	highest  map[manager.TopicPartition]int64
	refused  int
	accepted int
}

func (s *tokenSink) write(m *manager.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := manager.TopicPartition{Topic: m.Topic, Partition: m.Partition}
	tok := m.FencingToken()
	if tok < s.highest[tp] {
		s.refused++
		return false
	}
	s.highest[tp] = tok
	s.accepted++
	return true
}

// TestFencingTokenSink: every message carries its claim's fencing token;
// a sink keeping the highest token per partition accepts every write of
// the owners across clean handoffs (joins, a leave) and a session expiry
// (their tokens never go down per partition), and refuses the write of a
// member that held a message while it was cut off past its lease: that
// message's token is lower than the new owner's.
func TestFencingTokenSink(t *testing.T) {
	c := testcluster.Shared(t)
	ctx := context.Background()
	const parts = 6
	topic, group, sub := newTopic(t, c, parts)
	sink := &tokenSink{highest: map[manager.TopicPartition]int64{}}
	var refusedByOwner []string
	var mu sync.Mutex
	consume := func(name string, cons *manager.Consumer, hold chan<- *manager.Message, wg *sync.WaitGroup) {
		defer wg.Done()
		for m := range cons.Messages() {
			if m.FencingToken() <= 0 {
				t.Errorf("%s: %s/%d@%d carries no fencing token", name, m.Topic, m.Partition, m.Offset)
			}
			if hold != nil { // the first message is kept, unwritten, as by a process about to freeze
				hold <- m
				hold = nil
				continue
			}
			if !sink.write(m) {
				mu.Lock()
				refusedByOwner = append(refusedByOwner, name)
				mu.Unlock()
			}
			cons.Ack(m)
		}
	}
	cfg := func(name string) *manager.Config {
		cfg := apiConfig(t)
		cfg.InstanceID = name
		return cfg
	}
	proxy := testcluster.ZooKeeperProxy(t, c)
	prod := testcluster.StartProducer(t, c, topic, parts, 0, 12, 50*time.Millisecond)

	var wg sync.WaitGroup
	a, err := manager.Join(ctx, group, sub, c.ZooKeeperConnect(), cfg("a"))
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go consume("a", a, nil, &wg)
	await(t, 60*time.Second, "a owning all", func() bool { return balancedConsumers(parts, a) })
	// b joins through the proxy and keeps its first message unwritten.
	held := make(chan *manager.Message, 1)
	b, err := manager.Join(ctx, group, sub, proxy.Addr()+c.Chroot(), cfg("b"))
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go consume("b", b, held, &wg)
	await(t, 60*time.Second, "a, b balanced", func() bool { return balancedConsumers(parts, a, b) })
	var late *manager.Message
	select {
	case late = <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("b received nothing")
	}
	// b freezes past its lease: its connection stalls, its session
	// expires, a takes its partitions over under new claims.
	proxy.Stall()
	await(t, 60*time.Second, "a owning all again", func() bool {
		s := a.Stats()
		return len(s.Members) == 1 && len(s.Partitions) == parts && s.Ready
	})
	tp := manager.TopicPartition{Topic: late.Topic, Partition: late.Partition}
	await(t, 60*time.Second, "a writing b's partition", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.highest[tp] > late.FencingToken()
	})
	// b wakes and writes what it held: refused.
	if sink.write(late) {
		t.Errorf("the sink accepted %s/%d@%d, token %d, held by b through its expiry; a's token for it is %d",
			late.Topic, late.Partition, late.Offset, late.FencingToken(), sink.highest[tp])
	}
	proxy.Resume()
	late.Abandon()
	prod.Halt(t)
	if err := b.Close(); err != nil {
		t.Logf("b closed: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("a: %v", err)
	}
	wg.Wait()
	if len(refusedByOwner) > 0 {
		t.Errorf("the sink refused %d writes of owners (%v): a token went down across a handoff", len(refusedByOwner), refusedByOwner)
	}
	t.Logf("sink: %d writes accepted, %d refused (the late one)", sink.accepted, sink.refused)
}
