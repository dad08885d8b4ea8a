package zkconn

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// ErrNoBroker reports that no usable broker registration was found.
var ErrNoBroker = errors.New("zkconn: no Kafka broker found")

// ErrNoBrokerRegistered reports that nothing at all is registered under
// /brokers/ids: a Kafka 4 or other KRaft cluster registers no broker in
// ZooKeeper (or the chroot is wrong), so the brokers must be given. It
// wraps ErrNoBroker.
var ErrNoBrokerRegistered = fmt.Errorf("%w: nothing registered", ErrNoBroker)

// Brokers reads every broker registration under /brokers/ids and returns
// the address of each for listener ("": PLAINTEXT, or host/port). Brokers
// whose registration is malformed or lacks the listener are skipped, with
// the reasons in skipped; at least one must be usable. Blocks on ZooKeeper.
func (s *Session) Brokers(listener string) (addrs []string, skipped []error, err error) {
	ids, _, err := s.Children(zkdata.BrokerIDsPath)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(ids) == 0) {
		return nil, nil, fmt.Errorf("%w under %s%s", ErrNoBrokerRegistered, s.Chroot(), zkdata.BrokerIDsPath)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: listing %s%s: %w", ErrNoBroker, s.Chroot(), zkdata.BrokerIDsPath, err)
	}
	sort.Strings(ids)
	var brokerIDs []int32
	var paths []string
	for _, name := range ids {
		id, err := zkdata.ParseBrokerID(name)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		brokerIDs = append(brokerIDs, id)
		paths = append(paths, zkdata.BrokerPath(id))
	}
	// The registrations in one multiRead: a member joining a busy
	// ensemble waits for two round trips, not one per broker.
	nodes, err := s.GetMany(paths)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reading %s%s: %w", ErrNoBroker, s.Chroot(), zkdata.BrokerIDsPath, err)
	}
	for i, id := range brokerIDs {
		if err := nodes[i].Err; err != nil {
			if !errors.Is(err, zk.ErrNoNode) { // gone meanwhile: not a problem
				skipped = append(skipped, fmt.Errorf("broker %d: %w", id, err))
			}
			continue
		}
		b, err := zkdata.ParseBroker(id, nodes[i].Data)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		addr, err := b.Address(listener)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		addrs = append(addrs, addr)
	}
	if len(addrs) == 0 {
		return nil, skipped, fmt.Errorf("%w: no usable registration under %s%s: %w", ErrNoBroker, s.Chroot(), zkdata.BrokerIDsPath, errors.Join(skipped...))
	}
	return addrs, skipped, nil
}
