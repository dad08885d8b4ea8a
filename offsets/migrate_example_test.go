package offsets_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkgroup/zkgroup/offsets"
)

// mapStore is a minimal in-memory offsets.Store for the example.
type mapStore struct {
	mu sync.Mutex
	m  map[offsets.TopicPartition]int64
}

func (s *mapStore) Fetch(_ context.Context, topic string, p int32) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[offsets.TopicPartition{Topic: topic, Partition: p}]
	return v, ok, nil
}

func (s *mapStore) Commit(_ context.Context, topic string, p int32, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := offsets.TopicPartition{Topic: topic, Partition: p}
	if cur, ok := s.m[tp]; !ok || next > cur {
		s.m[tp] = next
	}
	return nil
}

func (s *mapStore) Reset(_ context.Context, topic string, p int32, next int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[offsets.TopicPartition{Topic: topic, Partition: p}] = next
	return nil
}

func (s *mapStore) CommitBatch(ctx context.Context, batch []offsets.Offset) []error {
	errs := make([]error, len(batch))
	for i, o := range batch {
		errs[i] = s.Commit(ctx, o.Topic, o.Partition, o.Next)
	}
	return errs
}

func (s *mapStore) Release(context.Context, string, int32) error { return nil }
func (s *mapStore) Close() error                                 { return nil }

// Copying a group's offsets from one store to another (in zkgroup: from
// ZooKeeper to Kafka) only moves offsets forward unless Overwrite is set.
func ExampleMigrate() {
	from := &mapStore{m: map[offsets.TopicPartition]int64{{"orders", 0}: 120, {"orders", 1}: 80}}
	to := &mapStore{m: map[offsets.TopicPartition]int64{{"orders", 1}: 95}}
	parts := []offsets.TopicPartition{{"orders", 0}, {"orders", 1}, {"orders", 2}}

	report, err := offsets.Migrate(context.Background(), from, to, parts, offsets.MigrateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range report {
		fmt.Printf("%s: %s (from %d, to %d)\n", m.TopicPartition, m.Action, m.From, m.To)
	}
	next, _, _ := to.Fetch(context.Background(), "orders", 0)
	fmt.Println("orders/0 now at", next)

	// Store errors name the operation and the partition.
	err = &offsets.PartitionError{Topic: "orders", Partition: 2, Op: "commit",
		Err: fmt.Errorf("%w: offset 7: broker gone", offsets.ErrCommit)}
	fmt.Println(err, errors.Is(err, offsets.ErrCommit))
	// Output:
	// orders/0: copy (from 120, to 0)
	// orders/1: skip-not-newer (from 80, to 95)
	// orders/2: skip-missing (from 0, to 0)
	// orders/0 now at 120
	// offsets: commit "orders"/2: commit failed: offset 7: broker gone true
}
