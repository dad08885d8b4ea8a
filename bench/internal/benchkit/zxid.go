package benchkit

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// Zxids counts ZooKeeper write transactions: every transaction (create,
// set, delete, multi, session create and close, ...) of the whole ensemble
// takes the next zxid, so the count between two marks is the difference of
// the zxids of two writes of a scratch node, less the second mark itself.
// It counts everyone's writes: the brokers' too (nothing of the consumer
// groups when only Kafka-coordinated clients run).
type Zxids struct {
	conn    *zk.Conn
	path    string
	slowest time.Duration
}

// NewZxids connects to the cluster's ZooKeeper and creates the scratch
// node (outside the Kafka chroot).
func NewZxids(c *testcluster.Cluster) (*Zxids, error) {
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		return nil, err
	}
	z := &Zxids{conn: conn, path: "/zkgroup-bench-zxid"}
	if _, err := conn.Create(z.path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		conn.Close()
		return nil, fmt.Errorf("zxid marker: %w", err)
	}
	return z, nil
}

// Mark writes the scratch node and returns the zxid of that write (0 on
// error).
func (z *Zxids) Mark() int64 {
	start := time.Now()
	st, err := z.conn.Set(z.path, nil, -1)
	z.slowest = max(z.slowest, time.Since(start))
	if err != nil {
		return 0
	}
	return st.Mzxid
}

// Between is the number of other transactions between two marks.
func Between(from, to int64) int64 {
	if from == 0 || to == 0 {
		return -1
	}
	return to - from - 1
}

// Slowest is the longest a mark took (a slow one shifts the window it
// ends).
func (z *Zxids) Slowest() time.Duration { return z.slowest }

// Close closes the connection.
func (z *Zxids) Close() { z.conn.Close() }
