package ops

import (
	"fmt"

	"github.com/zkgroup/zkgroup/manager"
)

// StorageChoice is which offset storage describe shows when none is
// configured, and why.
type StorageChoice struct {
	// Storage is manager.StorageKafka or manager.StorageZooKeeper;
	// Committed its offsets.
	Storage   string
	Committed Offsets
	// Note says why, and what the other storage holds.
	Note string
}

// ChooseStorage picks the storage that holds the group's offsets, from
// what each holds: the one that has offsets when only one does; when
// both do, the one ahead on more partitions (offsets only move forward,
// so the storage left behind is the one no longer written), Kafka on a
// tie; Kafka when neither does. zkErr and kafkaErr are why a storage
// could not be read: the other is shown (ZooKeeper's only if it holds
// offsets), else the choice fails with kafkaErr (or zkErr). Pure.
func ChooseStorage(zk Offsets, zkErr error, kafka Offsets, kafkaErr error) (StorageChoice, error) {
	if zkErr != nil {
		if kafkaErr != nil {
			return StorageChoice{}, kafkaErr
		}
		return StorageChoice{Storage: string(manager.StorageKafka), Committed: kafka,
			Note: fmt.Sprintf("Kafka holds offsets for %d partitions; ZooKeeper's could not be read: %v", kafka.count(), zkErr)}, nil
	}
	if kafkaErr != nil && zk.count() == 0 {
		return StorageChoice{}, kafkaErr
	}
	return chooseStorage(zk, kafka, kafkaErr), nil
}

func chooseStorage(zk, kafka Offsets, kafkaErr error) StorageChoice {
	nz, nk := zk.count(), kafka.count()
	switch {
	case kafkaErr != nil && nz > 0:
		return StorageChoice{Storage: string(manager.StorageZooKeeper), Committed: zk,
			Note: fmt.Sprintf("ZooKeeper holds offsets for %d partitions; Kafka's could not be read: %v", nz, kafkaErr)}
	case nz == 0 && nk == 0:
		return StorageChoice{Storage: string(manager.StorageKafka), Committed: kafka,
			Note: "neither Kafka nor ZooKeeper holds offsets for the group"}
	case nk == 0:
		return StorageChoice{Storage: string(manager.StorageZooKeeper), Committed: zk,
			Note: fmt.Sprintf("ZooKeeper holds offsets for %d partitions, Kafka none", nz)}
	case nz == 0:
		return StorageChoice{Storage: string(manager.StorageKafka), Committed: kafka,
			Note: fmt.Sprintf("Kafka holds offsets for %d partitions, ZooKeeper none", nk)}
	}
	zAhead, kAhead := 0, 0
	for t, ps := range zk {
		for p, z := range ps {
			if k, ok := kafka[t][p]; !ok || z > k {
				zAhead++
			} else if k > z {
				kAhead++
			}
		}
	}
	for t, ps := range kafka {
		for p := range ps {
			if _, ok := zk[t][p]; !ok {
				kAhead++
			}
		}
	}
	both := fmt.Sprintf("both hold offsets (Kafka for %d partitions, ZooKeeper for %d)", nk, nz)
	if zAhead > kAhead {
		return StorageChoice{Storage: string(manager.StorageZooKeeper), Committed: zk,
			Note: fmt.Sprintf("%s; ZooKeeper's are ahead on %d, Kafka's on %d", both, zAhead, kAhead)}
	}
	return StorageChoice{Storage: string(manager.StorageKafka), Committed: kafka,
		Note: fmt.Sprintf("%s; Kafka's are ahead on %d, ZooKeeper's on %d", both, kAhead, zAhead)}
}

// count is the number of partitions with an offset.
func (o Offsets) count() int {
	n := 0
	for _, ps := range o {
		n += len(ps)
	}
	return n
}
