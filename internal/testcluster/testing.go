package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgroup/zkgroup/internal/faultproxy"
)

// InCI reports whether the tests run in CI (CI=true), where a test that
// needs the cluster fails instead of skipping when the cluster is missing.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1" || v == "yes"
}

// Poll checks cond every interval until it holds (true) or timeout passes
// (false). For conditions that have no event to wait on.
func Poll(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every) // polling a condition
	}
	return true
}

// Await polls cond like Poll and fails tb, naming what it waited for, when
// timeout passes first. It returns how long the wait took.
func Await(tb testing.TB, timeout, every time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	start := time.Now()
	if !Poll(timeout, every, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	return time.Since(start)
}

// unavailable skips (outside CI, when java or mvn is missing) or fails.
func unavailable(tb testing.TB, err error) {
	tb.Helper()
	if !InCI() && errors.Is(err, ErrNoJava) {
		tb.Skipf("no local Kafka cluster: %v (set CI=true to make this a failure)", err)
	}
	tb.Fatalf("local Kafka cluster: %v", err)
}

// Start starts a cluster of its own for one test and stops it when the test
// ends; on a failed test the process logs are printed. Use it for tests that
// stop or kill brokers or ZooKeeper; other tests use Shared.
func Start(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	if testing.Short() && !InCI() {
		tb.Skip("integration test: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Launch(ctx, opts...)
	if err != nil {
		unavailable(tb, err)
	}
	for _, n := range c.Notes() {
		tb.Logf("cluster: %s", n)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("cluster logs:\n%s", c.Logs(60))
		}
		if err := c.Close(); err != nil {
			tb.Errorf("stopping the cluster: %v", err)
		}
	})
	return c
}

// sharedCluster is a cluster started on first use and stopped by Main.
type sharedCluster struct {
	once sync.Once
	c    *Cluster
	err  error
}

// get starts the cluster on first use (or skips/fails tb as unavailable).
func (s *sharedCluster) get(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	if testing.Short() && !InCI() {
		tb.Skip("integration test: skipped with -short")
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s.c, s.err = Launch(ctx, opts...)
	})
	if s.err != nil {
		unavailable(tb, s.err)
	}
	for _, n := range s.c.Notes() {
		tb.Logf("shared cluster: %s", n)
	}
	return s.c
}

// ZooKeeper opens a go-zookeeper session to c's ZooKeeper for a test (see
// Cluster.Connect: no chroot), fails tb if it cannot, and closes the
// session when tb ends. Closing it earlier is allowed (Close is
// idempotent), e.g. before a goroutine-leak check.
func ZooKeeper(tb testing.TB, c *Cluster) *zk.Conn {
	tb.Helper()
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	return conn
}

var (
	shared       sharedCluster
	sharedSecure sharedCluster
	sharedKRaft  sharedCluster
)

// SharedSecure returns the secured cluster shared by the tests of this
// test binary (one broker with PLAINTEXT, SASL_SSL and MTLS listeners,
// ZooKeeper with its secure client port; see Options.Secure), started on
// first use. The same rules as for Shared apply.
func SharedSecure(tb testing.TB) *Cluster {
	tb.Helper()
	return sharedSecure.get(tb, Brokers(1), Secured())
}

// KRaftNodes is the number of nodes of the shared KRaft cluster.
const KRaftNodes = 3

// SharedKRaft returns the Kafka 4 KRaft cluster shared by the tests of
// this test binary (KRaftNodes combined broker and controller nodes, and
// a ZooKeeper of zkgroup's own with chroot /zkgroup), started on first
// use. The same rules as for Shared apply.
func SharedKRaft(tb testing.TB) *Cluster {
	tb.Helper()
	return sharedKRaft.get(tb, Brokers(KRaftNodes), KRaft(), Chroot("/zkgroup"))
}

// SharedBrokers is the number of brokers of the shared cluster.
const SharedBrokers = 3

// Shared returns the cluster shared by every test of this test binary
// (3 brokers, started on first use). Tests must use their own topic and
// group names (see Name) and must not stop or kill its processes. The
// package's TestMain must call Main so that the cluster is stopped.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	return shared.get(tb, Brokers(SharedBrokers))
}

// Main runs the tests of a package and then stops the shared cluster, if
// one was started. Call it from TestMain: os.Exit(testcluster.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	for _, s := range []*sharedCluster{&shared, &sharedSecure, &sharedKRaft} {
		if s.c == nil {
			continue
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "shared cluster (Kafka %s) logs:\n%s\n", s.c.Version(), s.c.Logs(40))
		}
		if err := s.c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping a shared cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

var nameSeq struct {
	sync.Mutex
	n int
}

// Name returns a topic or group name unique within this test binary and
// readable in logs: the test name, sanitised, plus a suffix.
func Name(tb testing.TB, suffix string) string {
	nameSeq.Lock()
	nameSeq.n++
	n := nameSeq.n
	nameSeq.Unlock()
	var sb strings.Builder
	for _, r := range tb.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	s := fmt.Sprintf("%s-%s-%d-%d", sb.String(), suffix, os.Getpid()%100000, n)
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return s
}

// FreePort returns a free loopback TCP port for a server a test starts
// (a daemon's admin listener, say), reserved like the cluster's own: out
// of the kernel's ephemeral range, never handed out twice, so no outgoing
// connection takes it before the server binds it. It fails tb when none
// is found.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ports, err := freePorts(1)
	if err != nil {
		tb.Fatal(err)
	}
	return ports[0]
}

// AwaitCommittedAtEnd waits, up to a minute, until the group's
// Kafka-committed offset of every partition of topic is its log end, for
// members still running (they commit on their own interval), and returns
// the log ends; it fails tb, with both, when they never meet.
func AwaitCommittedAtEnd(tb testing.TB, c *Cluster, group, topic string, parts int32) map[int32]int64 {
	tb.Helper()
	hwm, err := c.HighWaterMarks(topic)
	if err != nil {
		tb.Fatal(err)
	}
	var got map[int32]int64
	if !Poll(60*time.Second, 100*time.Millisecond, func() bool { // polling Kafka: no event to wait on
		got, err = c.CommittedOffsets(context.Background(), group, topic, parts)
		if err != nil {
			return false
		}
		for p := int32(0); p < parts; p++ {
			if got[p] != hwm[p] {
				return false
			}
		}
		return true
	}) {
		tb.Fatalf("committed offsets %v (last error %v) never reached the log ends %v", got, err, hwm)
	}
	return hwm
}

// ZooKeeperProxy starts a fault proxy in front of c's ZooKeeper (the first
// server's address, no chroot) and closes it when tb ends; a client
// reaches ZooKeeper through it at p.Addr() + c.Chroot(). It fails tb when
// the proxy cannot listen.
func ZooKeeperProxy(tb testing.TB, c *Cluster) *faultproxy.Proxy {
	tb.Helper()
	p, err := faultproxy.New(c.ZooKeeperAddr())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// MustProduce is c.Produce that fails tb on an error.
func MustProduce(tb testing.TB, c *Cluster, topic string, partitions int32, from, n int) Produced {
	tb.Helper()
	out, err := c.Produce(topic, partitions, from, n)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// CheckCommittedAtEnd fails tb unless the group's Kafka-committed offset of
// every partition of topic is its log end now, naming the first five that
// are not, and returns the log ends.
func CheckCommittedAtEnd(tb testing.TB, c *Cluster, group, topic string, parts int32) map[int32]int64 {
	tb.Helper()
	hwm, err := c.HighWaterMarks(topic)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), metadataWait)
	defer cancel()
	got, err := c.CommittedOffsets(ctx, group, topic, parts)
	if err != nil {
		tb.Fatal(err)
	}
	bad := 0
	for p := int32(0); p < parts; p++ {
		if got[p] != hwm[p] {
			if bad < 5 {
				tb.Errorf("partition %d: committed %d, log end %d", p, got[p], hwm[p])
			}
			bad++
		}
	}
	if bad > 5 {
		tb.Errorf("%d of %d partitions committed short of their log end", bad, parts)
	}
	return hwm
}
