package manager

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// discoverBrokers reads every broker registration under /brokers/ids and
// returns the address of each for the listener ("" : PLAINTEXT). Brokers
// whose registration is malformed or lacks the listener are skipped with
// the reason in the returned error list; at least one must be usable.
func discoverBrokers(s *zkconn.Session, listener string) ([]string, []error, error) {
	ids, _, err := s.Children(zkdata.BrokerIDsPath)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(ids) == 0) {
		return nil, nil, fmt.Errorf("%w: nothing registered under %s%s", ErrNoBroker, s.Chroot(), zkdata.BrokerIDsPath)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: listing %s: %w", ErrNoBroker, zkdata.BrokerIDsPath, err)
	}
	sort.Strings(ids)
	var addrs []string
	var skipped []error
	for _, name := range ids {
		id, err := zkdata.ParseBrokerID(name)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		data, _, err := s.Get(zkdata.BrokerPath(id))
		if err != nil {
			if !errors.Is(err, zk.ErrNoNode) {
				skipped = append(skipped, fmt.Errorf("broker %d: %w", id, err))
			}
			continue
		}
		b, err := zkdata.ParseBroker(id, data)
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
