package kazoocompat

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wvanbergen/kazoo-go"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/subscription"
)

// member is a zkgroup member that acks every message it is handed and
// records the offsets it was handed, per partition, in order.
type member struct {
	c   *manager.Consumer
	sub *subscription.Subscription

	mu  sync.Mutex
	got map[int32][]int64

	wg sync.WaitGroup
}

// join starts a member of group on cl with offset storage storage; it is
// closed when t ends.
// newTopicGroup creates a topic of parts partitions on cl and names a
// group; it returns them with the static subscription to the topic.
func newTopicGroup(t *testing.T, cl *testcluster.Cluster, parts int32) (topic, group string, static *subscription.Subscription) {
	t.Helper()
	topic, group = testcluster.Name(t, "t"), testcluster.Name(t, "g")
	testcluster.MustCreateTopic(t, cl, topic, parts, 1)
	static, err := subscription.Static(topic)
	if err != nil {
		t.Fatal(err)
	}
	return topic, group, static
}

func join(t *testing.T, cl *testcluster.Cluster, group string, sub *subscription.Subscription, storage manager.Storage) *member {
	t.Helper()
	cfg := manager.NewConfig()
	cfg.OffsetStorage = storage
	cfg.SessionTimeout = manager.MinSessionTimeout
	cfg.Partition.CommitInterval = 100 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).
		With("test", t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := manager.Join(ctx, group, sub, cl.ZooKeeperConnect(), cfg)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	m := &member{c: c, sub: sub, got: map[int32][]int64{}}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		for msg, err := range c.Each(context.Background()) {
			if err != nil {
				t.Errorf("%s: Each: %v", c.ID(), err)
				return
			}
			m.mu.Lock()
			m.got[msg.Partition] = append(m.got[msg.Partition], msg.Offset)
			m.mu.Unlock()
			msg.Ack()
		}
	}()
	go func() {
		defer m.wg.Done()
		for err := range c.Errors() {
			t.Logf("%s: Errors(): %v", c.ID(), err)
		}
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// close closes the member (again: Close is idempotent).
func (m *member) close(t *testing.T) {
	if err := m.c.Close(); err != nil {
		t.Errorf("close %s: %v", m.c.ID(), err)
	}
	m.wg.Wait()
}

// handed returns the offsets of partition p handed to m so far.
func (m *member) handed(p int32) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got[p])
}

// held is one partition as a member reports it in Stats.
type held struct {
	owner     string
	committed int64
}

// holdings maps each partition of topic the members report fetching to
// its member and committed offset; ok is false when two report one.
func holdings(topic string, ms ...*member) (out map[int32]held, ok bool) {
	out = map[int32]held{}
	for _, m := range ms {
		for _, ps := range m.c.Stats().Partitions {
			if ps.Topic != topic {
				continue
			}
			if _, dup := out[ps.Partition]; dup {
				return out, false
			}
			out[ps.Partition] = held{owner: m.c.ID(), committed: ps.Committed}
		}
	}
	return out, true
}

// settled reports whether the members, each seeing exactly the others as
// members and ready, together hold every partition of topic once, each
// committed at hwm, and each member holds at least one.
func settled(topic string, hwm map[int32]int64, ms ...*member) bool {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.c.ID()
	}
	slices.Sort(ids)
	for _, m := range ms {
		st := m.c.Stats()
		if !st.Ready || len(st.Partitions) == 0 || !slices.Equal(sorted(st.Members), ids) {
			return false
		}
	}
	h, ok := holdings(topic, ms...)
	if !ok || len(h) != len(hwm) {
		return false
	}
	for p, end := range hwm {
		if h[p].committed != end {
			return false
		}
	}
	return true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// discard is a go-zookeeper logger (samuel's) that drops everything.
type discard struct{}

func (discard) Printf(string, ...interface{}) {}

// newKazoo opens kazoo-go on cl's ZooKeeper with cl's chroot, as a tool
// would from a connect string; it is closed when t ends.
func newKazoo(t *testing.T, cl *testcluster.Cluster) *kazoo.Kazoo {
	t.Helper()
	conf := kazoo.NewConfig()
	conf.Timeout = 10 * time.Second // kazoo-go's 1 s flaps on a loaded machine
	conf.Logger = discard{}
	k, err := kazoo.NewKazooFromConnectionString(cl.ZooKeeperConnect(), conf)
	if err != nil {
		t.Fatalf("kazoo-go: %v", err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// description is what `zkgroup describe --json` prints, the fields this
// test reads.
type description struct {
	Group   string `json:"group"`
	Members []struct {
		ID           string    `json:"id"`
		Pattern      string    `json:"pattern"`
		Subscription []string  `json:"subscription"`
		Registered   time.Time `json:"registered"`
		Partitions   int       `json:"owned_partitions"`
		Strategy     string    `json:"strategy"`
		Error        string    `json:"error"`
	} `json:"members"`
	Partitions []struct {
		Topic         string `json:"topic"`
		Partition     int32  `json:"partition"`
		CurrentOffset int64  `json:"current_offset"`
		ConsumerID    string `json:"consumer_id"`
	} `json:"partitions"`
}

var daemon struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// zkgroupBinary builds cmd/zkgroup once, in the root module (as it ships,
// with the root's go.sum), and returns its path.
func zkgroupBinary(t *testing.T) string {
	t.Helper()
	daemon.once.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			daemon.err = err
			return
		}
		if daemon.dir, daemon.err = os.MkdirTemp("", "kazoocompat-"); daemon.err != nil {
			return
		}
		daemon.path = filepath.Join(daemon.dir, "zkgroup")
		cmd := exec.Command("go", "build", "-o", daemon.path, "./cmd/zkgroup")
		cmd.Dir = root
		daemon.out, daemon.err = cmd.CombinedOutput()
	})
	if daemon.err != nil {
		t.Fatalf("building zkgroup: %v\n%s", daemon.err, daemon.out)
	}
	return daemon.path
}

// describe runs `zkgroup describe --json` on group.
func describe(t *testing.T, cl *testcluster.Cluster, group string, storage manager.Storage) description {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, zkgroupBinary(t), "describe", "--zookeeper", cl.ZooKeeperConnect(),
		"--group", group, "--offset-storage", string(storage), "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("zkgroup describe: %v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	var d description
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		t.Fatalf("zkgroup describe --json: %v\n%s", err, stdout.Bytes())
	}
	return d
}
