package offsets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// ZNodes is the part of a ZooKeeper connection ZooKeeperStore uses, with
// go-zookeeper's signatures; *zk.Conn satisfies it. Paths are passed without
// chroot: a connection with a chroot must add it. Implementations must be
// safe for concurrent use.
type ZNodes interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Exists(path string) (bool, *zk.Stat, error)
	// Multi runs ops (here *zk.SetDataRequest only) as one transaction:
	// all or none. On failure the response of the failing op has its
	// error.
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

var _ ZNodes = (*zk.Conn)(nil)

// maxMultiOps bounds the writes of one multi transaction: each costs about
// 100 bytes, and ZooKeeper refuses requests above jute.maxbuffer (1 MB by
// default).
const maxMultiOps = 1000

// maxCASAttempts bounds the compare-and-set loop of Commit and Reset. Each
// failed attempt means another writer succeeded, so a real ZooKeeper never
// gets near it; it only stops a misbehaving ZNodes from looping forever.
const maxCASAttempts = 1000

// ZooKeeperStore keeps offsets where Kafka's old ZooKeeper consumer kept
// them: /consumers/<group>/offsets/<topic>/<partition>, holding the next
// offset to read as plain decimal text, as Kafka's tools write it.
//
// Every write is a versioned Set (compare-and-set on the node's version).
// The store remembers, per partition it wrote, the node's version and
// offset after its last write, so that CommitBatch can write every
// partition it wrote before in one multi transaction (of versioned Sets,
// up to maxMultiOps a transaction) without reading them first. Should
// another writer have changed a node, the transaction fails as a whole and
// its partitions take the path of Commit: read, compare, write.
//
// It is safe for concurrent use. Every method blocks on ZooKeeper round
// trips (bounded by the connection's session timeout); ctx is checked
// between round trips, not during one. Release forgets what the store
// remembers of the partition.
type ZooKeeperStore struct {
	nodes  ZNodes
	group  string
	acl    []zk.ACL
	closed atomic.Bool

	mu    sync.Mutex
	known map[TopicPartition]znode // after this instance's last write
}

// znode is an offset node as this instance last wrote (or read) it.
type znode struct {
	version int32
	next    int64
}

var _ Store = (*ZooKeeperStore)(nil)

// NewZooKeeperStore returns a store for group on nodes. acl is used for
// every node it creates (the offset nodes and their missing parents, all
// persistent); nil means zk.WorldACL(zk.PermAll). The group must be a valid
// ZooKeeper node name. It does not block and does not take ownership of
// nodes.
func NewZooKeeperStore(nodes ZNodes, group string, acl []zk.ACL) (*ZooKeeperStore, error) {
	if nodes == nil {
		return nil, fmt.Errorf("%w: ZooKeeper nodes are nil", ErrConfig)
	}
	if err := zkdata.ValidateNodeName("group", group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if len(acl) == 0 {
		acl = zk.WorldACL(zk.PermAll)
	}
	return &ZooKeeperStore{nodes: nodes, group: group, acl: acl, known: map[TopicPartition]znode{}}, nil
}

// check validates the arguments of an operation and the store's state.
func (s *ZooKeeperStore) check(topic string, partition int32, next int64, checkNext bool) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkArgs(topic, partition, next, checkNext); err != nil {
		return err
	}
	if err := zkdata.ValidateNodeName("topic", topic); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Fetch reads the partition's offset node. A missing node gives ok=false;
// a node that does not hold a non-negative decimal gives an error wrapping
// ErrFetchOffset that names the path and the content.
// Safe for concurrent use; blocks on one ZooKeeper round trip.
func (s *ZooKeeperStore) Fetch(ctx context.Context, topic string, partition int32) (int64, bool, error) {
	if err := s.check(topic, partition, 0, false); err != nil {
		return 0, false, partErr("fetch", topic, partition, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: %w", ErrFetchOffset, err))
	}
	path := zkdata.OffsetPath(s.group, topic, partition)
	data, _, err := s.nodes.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: get %s: %w", ErrFetchOffset, path, err))
	}
	next, err := s.parse(path, topic, partition, data)
	if err != nil {
		return 0, false, partErr("fetch", topic, partition, fmt.Errorf("%w: %w", ErrFetchOffset, err))
	}
	return next, true, nil
}

// parse decodes an offset node, naming its path and content on error.
func (s *ZooKeeperStore) parse(path, topic string, partition int32, data []byte) (int64, error) {
	next, err := zkdata.ParseOffset(topic, partition, data)
	if err != nil {
		return 0, fmt.Errorf("node %s holds %q, not an offset: %w", path, clipData(data), err)
	}
	return next, nil
}

// clipData shortens node content for error messages.
func clipData(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// Commit stores next unless the node already holds an offset >= next
// (written by anyone), in which case it returns nil without writing. It
// writes with a versioned Set (compare-and-set on the node's version) and
// re-reads on a version conflict, so concurrent commits never move the
// offset backwards. A missing node is created together with its missing
// parents. A node holding something other than an offset is an error (it is
// not overwritten; use Reset). Errors wrap ErrCommit and name the offset.
// Safe for concurrent use; blocks on ZooKeeper round trips.
func (s *ZooKeeperStore) Commit(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, "commit", topic, partition, next)
}

// Reset stores next unconditionally, even below the committed offset or
// over a node with bad content, creating the node if needed. Errors wrap
// ErrCommit. Safe for concurrent use; blocks on ZooKeeper round trips.
func (s *ZooKeeperStore) Reset(ctx context.Context, topic string, partition int32, next int64) error {
	return s.write(ctx, "reset", topic, partition, next)
}

func (s *ZooKeeperStore) write(ctx context.Context, op, topic string, partition int32, next int64) error {
	if err := s.check(topic, partition, next, true); err != nil {
		return partErr(op, topic, partition, err)
	}
	path := zkdata.OffsetPath(s.group, topic, partition)
	if err := s.writeLoop(ctx, op, path, topic, partition, next); err != nil {
		s.forget(TopicPartition{topic, partition})
		return partErr(op, topic, partition, fmt.Errorf("%w: offset %d: %w", ErrCommit, next, err))
	}
	return nil
}

// remember records a node's version and offset after a write or read.
func (s *ZooKeeperStore) remember(tp TopicPartition, version int32, next int64) {
	s.mu.Lock()
	s.known[tp] = znode{version: version, next: next}
	s.mu.Unlock()
}

// forget drops what the store remembers of a partition.
func (s *ZooKeeperStore) forget(tp TopicPartition) {
	s.mu.Lock()
	delete(s.known, tp)
	s.mu.Unlock()
}

// CommitBatch writes the entries' offsets: those of partitions this store
// wrote before and holds a lower offset for in one multi transaction of
// versioned Sets (per maxMultiOps), the others, and those of a failed
// transaction, one by one as Commit does. Each entry fails alone, with an
// error like Commit's. See Store.CommitBatch. Safe for concurrent use;
// blocks on ZooKeeper round trips.
func (s *ZooKeeperStore) CommitBatch(ctx context.Context, batch []Offset) []error {
	errs, _ := checkBatch(batch, func(topic string, partition int32, next int64) error {
		return s.check(topic, partition, next, true)
	})
	var multi, single []int
	s.mu.Lock()
	for i, e := range batch {
		if errs[i] != nil {
			continue
		}
		if k, ok := s.known[e.TopicPartition]; ok && k.next < e.Next {
			multi = append(multi, i)
		} else {
			single = append(single, i) // unknown, or a read decides
		}
	}
	s.mu.Unlock()
	for len(multi) > 0 {
		n := min(len(multi), maxMultiOps)
		single = append(single, s.multi(ctx, batch, multi[:n])...)
		multi = multi[n:]
	}
	for _, i := range single {
		e := batch[i]
		errs[i] = s.write(ctx, "commit", e.Topic, e.Partition, e.Next)
	}
	return errs
}

// multi writes the entries idx of batch in one transaction of Sets at the
// versions the store remembers. It returns the entries left to write one
// by one: all of them if the transaction failed.
func (s *ZooKeeperStore) multi(ctx context.Context, batch []Offset, idx []int) []int {
	if writeDeadline(ctx) != nil {
		return idx // the single path reports it
	}
	ops := make([]any, len(idx))
	s.mu.Lock()
	for j, i := range idx {
		e := batch[i]
		ops[j] = &zk.SetDataRequest{Path: zkdata.OffsetPath(s.group, e.Topic, e.Partition),
			Data: zkdata.FormatOffset(e.Next), Version: s.known[e.TopicPartition].version}
	}
	s.mu.Unlock()
	res, err := s.nodes.Multi(ops...)
	if err == nil && len(res) == len(idx) {
		for _, r := range res {
			if r.Error != nil || r.Stat == nil {
				err = r.Error
				if err == nil {
					err = errors.New("no stat returned")
				}
				break
			}
		}
	} else if err == nil {
		err = fmt.Errorf("%d responses to %d operations", len(res), len(idx))
	}
	if err != nil {
		for _, i := range idx {
			s.forget(batch[i].TopicPartition)
		}
		return idx
	}
	for j, i := range idx {
		s.remember(batch[i].TopicPartition, res[j].Stat.Version, batch[i].Next)
	}
	return nil
}

// writeLoop runs the read / compare / versioned-write cycle until it
// succeeds, finds nothing to do, or fails.
func (s *ZooKeeperStore) writeLoop(ctx context.Context, op, path, topic string, partition int32, next int64) error {
	data := zkdata.FormatOffset(next)
	tp := TopicPartition{topic, partition}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		if err := writeDeadline(ctx); err != nil {
			return err
		}
		cur, stat, err := s.nodes.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			if err := writeDeadline(ctx); err != nil {
				return err
			}
			done, err := s.create(path, data)
			if done {
				s.remember(tp, 0, next)
			}
			if err != nil || done {
				return err
			}
			continue // someone else created it: compare with theirs
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", path, err)
		}
		if stat == nil {
			return fmt.Errorf("get %s: no stat returned", path)
		}
		version := stat.Version
		if op == "commit" {
			stored, err := s.parse(path, topic, partition, cur)
			if err != nil {
				return err
			}
			if stored >= next {
				s.remember(tp, version, stored)
				return nil // never backwards; equal is already durable
			}
		}
		if err := writeDeadline(ctx); err != nil {
			return err
		}
		st, err := s.nodes.Set(path, data, version)
		switch {
		case err == nil:
			if st != nil {
				s.remember(tp, st.Version, next)
			}
			return nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			continue // lost a race: re-read
		default:
			return fmt.Errorf("set %s (version %d): %w", path, version, err)
		}
	}
	return fmt.Errorf("%s: gave up after %d version conflicts", path, maxCASAttempts)
}

// create creates the offset node with data, creating missing parents.
// done is false when the node appeared meanwhile (the caller re-reads).
func (s *ZooKeeperStore) create(path string, data []byte) (done bool, err error) {
	if err := s.ensureParents(path); err != nil {
		return false, err
	}
	_, err = s.nodes.Create(path, data, 0, s.acl)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
		return false, nil // created, or a parent deleted, by someone else
	default:
		return false, fmt.Errorf("create %s: %w", path, err)
	}
}

// ensureParents creates the persistent parents of path that are missing.
func (s *ZooKeeperStore) ensureParents(path string) error {
	parent := path[:strings.LastIndexByte(path, '/')]
	ok, _, err := s.nodes.Exists(parent)
	if err != nil {
		return fmt.Errorf("exists %s: %w", parent, err)
	}
	if ok {
		return nil
	}
	for i := 1; i <= len(parent); i++ {
		if i < len(parent) && parent[i] != '/' {
			continue
		}
		p := parent[:i]
		if _, err := s.nodes.Create(p, nil, 0, s.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// Release forgets the partition's node version and offset. Safe for
// concurrent use; does not block.
func (s *ZooKeeperStore) Release(_ context.Context, topic string, partition int32) error {
	if err := s.check(topic, partition, 0, false); err != nil {
		return partErr("release", topic, partition, err)
	}
	s.forget(TopicPartition{topic, partition})
	return nil
}

// Close marks the store closed; later calls fail with ErrClosed. It does not
// close the ZooKeeper connection, which belongs to the caller. Idempotent,
// safe for concurrent use; does not block.
func (s *ZooKeeperStore) Close() error {
	s.closed.Store(true)
	s.mu.Lock()
	clear(s.known)
	s.mu.Unlock()
	return nil
}
