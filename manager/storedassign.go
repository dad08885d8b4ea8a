package manager

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// The group's stored assignment. A sticky strategy (Balanced) keeps each
// partition with its current owner; computed from the owner nodes, which
// change all the time during a hand-over, members that read them at
// different moments of overlapping joins compute different assignments,
// and every member reads every owner node it cannot vouch for at every
// rebalance (10,000 nodes for a new member of a group of 10,000
// partitions). So the oldest member writes the assignment it computed to
// one node (zkdata.AssignmentPath) with a digest of what it was computed
// from, and every member computes from that node instead of the owners:
//
//   - the digest is that of the current input (strategy, members and
//     their topics, partitions and leaders): the stored assignment is
//     used as it is;
//   - otherwise the strategy computes from the input with each
//     partition's Owner the stored one, which every member reading the
//     same node does alike; the writer then stores the result.
//
// A rebalance reads the members and one node, whatever the partition
// count. The owner nodes stay the only truth of who holds what: a claim
// is an ephemeral create whatever a plan says, and the unowned and
// claim-wait checks read them as before. The node is used only while
// every registered member that publishes a strategy publishes
// zkgroup_assignment (older zkgroups compute from the owners); while one
// does not, or the node is missing, longer than ZooKeeperMaxReply,
// malformed or older than the writer's registration (freshFor), members
// compute from the owners as before (and the writer, if every member
// follows, writes the node), except a new member's first assignment: it
// waits, at most SessionTimeout, for the writer to store one
// (plan.awaitWriter), so that members started together follow one view.
// A member other than the writer that reads a node whose digest is not
// its input's waits likewise, at most ClaimWaitCheck, for the writer to
// store the next one, rather than place partitions by its own view.
type storedAssignment struct {
	a       zkdata.GroupAssignment
	exists  bool     // the node exists
	version int32    // its data version, when it exists
	mzxid   int64    // the zxid of its last write, when it exists
	sum     [32]byte // its data's SHA-256, when it exists
	// err: why a node that exists is not used (malformed, or longer than
	// Config.ZooKeeperMaxReply); nil when a is the node's.
	err error
	// raw: the node's data while it is not parsed yet (a and err unset;
	// see assignmentNode.read).
	raw []byte
}

// parse sets a (or err) from raw.
func (s *storedAssignment) parse(p string) {
	if s.raw == nil {
		return
	}
	a, err := zkdata.ParseGroupAssignment(s.raw)
	if err != nil {
		err = fmt.Errorf("%s: %w", p, err)
	}
	s.a, s.err, s.raw = a, err, nil
}

// usable reports whether a holds the node's assignment.
func (s *storedAssignment) usable() bool { return s != nil && s.exists && s.err == nil }

// freshFor reports whether the node was written since the writer (whose
// registration's creation zxid is writerCzxid) registered: a node older
// than every member following it was left by an earlier group (members
// since gone, or a downgrade in between), whose owners may be long
// moved, and is computed again from the owners instead.
func (s *storedAssignment) freshFor(writerCzxid int64) bool {
	return s.usable() && s.mzxid > writerCzxid
}

// readStoredAssignment reads the group's assignment node and sets a watch
// on it (its creation, when missing); the data is left unparsed (raw).
// Only a read that failed is an error.
func readStoredAssignment(s *zkconn.Session, group string) (storedAssignment, <-chan zk.Event, error) {
	p := zkdata.AssignmentPath(group)
	data, stat, ch, err := s.GetW(p)
	switch {
	case err == nil:
		if data == nil {
			data = []byte{} // raw: not parsed yet
		}
		return storedAssignment{raw: data, exists: true, version: stat.Version, mzxid: stat.Mzxid, sum: sha256.Sum256(data)}, ch, nil
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, ErrReplyTooLarge):
		ok, stat, ch, xerr := s.ExistsW(p)
		if xerr != nil {
			return storedAssignment{}, nil, xerr
		}
		if !ok {
			return storedAssignment{}, ch, nil
		}
		// Too large, or created since: not used this time (the
		// watch fires at its next change).
		return storedAssignment{exists: true, version: stat.Version, mzxid: stat.Mzxid, err: fmt.Errorf("%s: %w", p, err)}, ch, nil
	default:
		return storedAssignment{}, nil, err
	}
}

// assignmentNode keeps the group's assignment node as last read, with the
// watch that read set: while it has not fired the node is unchanged, and
// is not read again (a join made every member read it at each of its
// rebalances: 37 KB at 10,000 partitions). The loop's only.
type assignmentNode struct {
	st storedAssignment
	ch <-chan zk.Event // nil: nothing kept
}

// read returns the node as kept while its watch holds, or reads it;
// parsed (a, err) when parse, otherwise perhaps not (only exists,
// version, mzxid and sum are set for sure).
func (n *assignmentNode) read(s *zkconn.Session, group string, parse bool) (storedAssignment, <-chan zk.Event, error) {
	if n.ch == nil || fired(n.ch) {
		st, ch, err := readStoredAssignment(s, group)
		n.st, n.ch = st, ch
		if err != nil {
			return st, ch, err
		}
	}
	if parse {
		n.st.parse(zkdata.AssignmentPath(group))
	}
	return n.st, n.ch, nil
}

// fired reports whether a watch fired. go-zookeeper closes a watch's
// channel once it delivered its one event (or dropped the session's
// watches), so a receive here leaves the channel firing for every other
// reader.
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// followers returns whether every registered member that publishes a
// strategy computes from the assignment node, and the oldest of them, who
// writes it, with its registration's creation zxid ("" when a member
// does not, or none does).
func followers(members []member) (all bool, writer string, czxid int64) {
	var oldest *member
	for i := range members {
		m := &members[i]
		if m.away || m.strategy == "" {
			continue
		}
		if m.assignment < zkdata.GroupAssignmentVersion {
			return false, "", 0
		}
		if oldest == nil || m.czxid < oldest.czxid || (m.czxid == oldest.czxid && m.id < oldest.id) {
			oldest = m
		}
	}
	if oldest == nil {
		return false, "", 0
	}
	return true, oldest.id, oldest.czxid
}

// assignmentDigest digests what an assignment is computed from: the
// strategy's name, the members with their topics, and the partitions with
// their leaders (not their owners). The fields go to the hash in chunks:
// a write per field cost a member 2 ms per rebalance at 10,000 partitions.
func assignmentDigest(strategy string, members []assign.Member, parts []assign.Partition) string {
	h := sha256.New()
	buf := make([]byte, 0, 32<<10)
	flush := func(need int) {
		if len(buf)+need > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	num := func(v int64) {
		flush(8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(v))
	}
	str := func(s string) {
		num(int64(len(s)))
		if len(s) > cap(buf) {
			h.Write(buf)
			h.Write([]byte(s))
			buf = buf[:0]
			return
		}
		flush(len(s))
		buf = append(buf, s...)
	}
	str(strategy)
	num(int64(len(members)))
	for _, m := range members {
		str(m.ID)
		num(int64(len(m.Topics)))
		for _, t := range m.Topics {
			str(t)
		}
	}
	num(int64(len(parts)))
	for _, p := range parts {
		str(p.Topic)
		num(int64(p.ID))
		num(int64(p.Leader))
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// fromStored returns the stored assignment as the strategy's result over
// parts, for members (whose ids it holds when its digest is the input's).
func fromStored(a zkdata.GroupAssignment, parts []assign.Partition) assign.Assignment {
	out := assign.Assignment{}
	for _, p := range parts {
		if id := a.Owner(p.Topic, p.ID); id != "" {
			out[id] = append(out[id], p)
		}
	}
	return out
}

// storedFits reports whether a gives every partition of parts that a
// member of input subscribes to such a member (a node with the input's
// digest was computed from it: one that does not fit was edited or
// written wrong, and is computed again rather than followed).
func storedFits(a zkdata.GroupAssignment, input []assign.Member, parts []assign.Partition) bool {
	subscribed := make(map[string]map[string]bool, len(input))
	eligible := map[string]bool{} // topics somebody subscribes to
	for _, m := range input {
		ts := make(map[string]bool, len(m.Topics))
		for _, t := range m.Topics {
			ts[t], eligible[t] = true, true
		}
		subscribed[m.ID] = ts
	}
	for _, p := range parts {
		id := a.Owner(p.Topic, p.ID)
		if id == "" {
			if eligible[p.Topic] {
				return false
			}
			continue
		}
		if !subscribed[id][p.Topic] {
			return false
		}
	}
	return true
}

// sameAsStored reports whether a gives every partition of parts the
// member stored gives it.
func sameAsStored(stored zkdata.GroupAssignment, a assign.Assignment, parts []assign.Partition) bool {
	n := 0
	for id, ps := range a {
		for _, p := range ps {
			if stored.Owner(p.Topic, p.ID) != id {
				return false
			}
			n++
		}
	}
	for _, p := range parts {
		if stored.Owner(p.Topic, p.ID) != "" {
			n--
		}
	}
	return n == 0
}

// storedData encodes assignment a, computed from the input of digest, over
// the members ids and the topics of parts.
func storedData(digest string, ids []string, parts []assign.Partition, a assign.Assignment) ([]byte, error) {
	ids = slices.Sorted(slices.Values(ids))
	index := make(map[string]int32, len(ids))
	for i, id := range ids {
		index[id] = int32(i)
	}
	size := map[string]int32{}
	for _, p := range parts {
		size[p.Topic] = max(size[p.Topic], p.ID+1)
	}
	topics := make(map[string][]int32, len(size))
	for t, n := range size {
		if n == 0 {
			topics[t] = nil // as the node had it when IDs were appended
			continue
		}
		ps := make([]int32, n)
		for i := range ps {
			ps[i] = -1
		}
		topics[t] = ps
	}
	for id, ps := range a {
		i, ok := index[id]
		if !ok {
			continue // not a member given to the strategy: not stored
		}
		var topic string
		var row []int32
		for _, p := range ps { // by topic: one lookup a run
			if row == nil || p.Topic != topic {
				topic, row = p.Topic, topics[p.Topic]
			}
			row[p.ID] = i
		}
	}
	return zkdata.GroupAssignment{Digest: digest, Members: ids, Topics: topics}.Marshal()
}

// writeStored stores data, pl's assignment, in the group's assignment
// node, over the version pl read (created when it read none). A write
// that loses to another writer is left: the watch on the node brings its
// assignment.
func (c *Consumer) writeStored(pl *plan, data []byte) {
	var err error
	p := zkdata.AssignmentPath(c.group)
	if limit := cmp.Or(c.cfg.ZooKeeperMaxReply, DefaultZooKeeperMaxReply); len(data) > limit {
		// Members read at most that much, and a write beyond
		// ZooKeeper's jute.maxbuffer closes the connection: the
		// members compute from the owners.
		c.log.Warn("not storing the group's assignment: larger than ZooKeeperMaxReply",
			"path", p, "bytes", len(data), "max", limit)
		return
	}
	if pl.stored.exists {
		_, err = c.session.Set(p, data, pl.stored.version)
	} else {
		_, err = c.session.Create(p, data, 0, nil)
	}
	switch {
	case err == nil:
		c.log.Debug("stored the group's assignment", "bytes", len(data), "digest", pl.digest)
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
		c.log.Debug("the group's assignment changed meanwhile", "error", err)
	default:
		c.log.Warn("storing the group's assignment failed", "path", p, "bytes", len(data), "error", err)
	}
}

// storedUnchanged reports whether the group's assignment node, read again
// with a new watch (returned), holds what the last rebalance computed,
// byte for byte: the writer stored the assignment this member computed
// too, and no rebalance is needed. Called by the loop only.
func (c *Consumer) storedUnchanged() (bool, <-chan zk.Event) {
	if c.lastStored == nil {
		return false, nil
	}
	// Not parsed: the same bytes as the last rebalance's are all it takes.
	st, w, err := c.assignNode.read(c.session, c.group, false)
	if err != nil || !st.exists || st.sum != *c.lastStored {
		return false, w
	}
	return true, w
}
