package main

import (
	"bytes"
	binenc "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// Helpers of the fault tests (fence_e2e_test.go): daemons run as system
// users of their own, so that testcluster.NetFault can cut one of them
// off; a poller of the group's committed offsets in Kafka that records
// any decrease; a producer that writes throughout a test; and a reader of
// each daemon's stdout sink output.

// startDaemonAs starts `zkgroup run` as u (o.user == nil: as the test's
// own user, like startDaemon). The binary, the config and the notify
// socket are made reachable by u; stdout is a file the test opens, so it
// needs no permission.
func startDaemonAs(t *testing.T, o runOpts, u *testcluster.NetUser) *proc {
	t.Helper()
	bin := binary(t)
	dir, err := os.MkdirTemp("", "zkgfence-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := filepath.Join(dir, "zkgroup.yaml")
	if err := os.WriteFile(cfg, []byte(o.config), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &proc{t: t, stderr: &testcluster.Buffer{}, done: make(chan struct{}), notify: newNotifySocket(t)}
	if u != nil {
		// MkdirTemp makes 0700 folders: u must traverse them.
		for _, p := range []string{dir, filepath.Dir(bin), filepath.Dir(d.notify.path)} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(d.notify.path, 0o777); err != nil { // sendto needs write permission
			t.Fatal(err)
		}
	}
	launch(t, d, bin, cfg, dir, o, u)
	return d
}

// signal sends sig to the daemon.
func (d *proc) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal %v: %v", sig, err)
	}
}

// printed is one message a daemon's stdout sink handed out.
type printed struct {
	P int32
	O int64
}

func (r printed) String() string { return fmt.Sprintf("p%d@%d", r.P, r.O) }

// firstN returns up to n of rs, for messages.
func firstN(rs []printed, n int) []printed {
	if len(rs) > n {
		return rs[:n]
	}
	return rs
}

// member is one daemon of a fault test and what it printed.
type member struct {
	name string
	user *testcluster.NetUser
	d    *proc
	out  string

	mu      sync.Mutex
	off     int64
	partial []byte
	recs    []printed
}

// refresh reads the lines the daemon printed since the last call.
func (m *member) refresh(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := os.Open(m.out)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(m.off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	m.off += int64(len(b))
	b = append(m.partial, b...)
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		m.partial = b
		return
	}
	m.partial = append([]byte(nil), b[end+1:]...)
	for _, l := range bytes.Split(b[:end], []byte("\n")) {
		var r struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("%s printed %q: %v", m.name, l, err)
		}
		m.recs = append(m.recs, printed{r.Partition, r.Offset})
	}
}

// lines refreshes and returns what the daemon printed, in order.
func (m *member) lines(t *testing.T) []printed {
	t.Helper()
	m.refresh(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recs[:len(m.recs):len(m.recs)]
}

// maxPrinted returns the highest offset printed per partition.
func maxPrinted(recs []printed) map[int32]int64 {
	out := map[int32]int64{}
	for _, r := range recs {
		if o, ok := out[r.P]; !ok || r.O > o {
			out[r.P] = r.O
		}
	}
	return out
}

// awaitSettled waits until the group consumes steadily: among the lines
// printed over at least a second, every partition was printed, each by
// one member only, and every member of ms printed at least one partition.
// It returns the partitions each member printed then.
func awaitSettled(t *testing.T, ms []*member, parts int32, timeout time.Duration) map[*member][]int32 {
	t.Helper()
	var owned map[*member][]int32
	var why string
	from := make([]int, len(ms))
	var marked time.Time
	mark := func() {
		marked = time.Now()
		for i, m := range ms {
			from[i] = len(m.lines(t))
		}
	}
	mark()
	ok := testcluster.Poll(timeout, 50*time.Millisecond, func() bool {
		if time.Since(marked) < time.Second {
			why = "less than a second since the mark"
			return false
		}
		owners := map[int32][]*member{}
		n := 0
		for i, m := range ms {
			recs := m.lines(t)[from[i]:]
			n += len(recs)
			seen := map[int32]bool{}
			for _, r := range recs {
				if !seen[r.P] {
					seen[r.P] = true
					owners[r.P] = append(owners[r.P], m)
				}
			}
		}
		if n < int(parts)*30 || len(owners) < int(parts) {
			why = fmt.Sprintf("%d lines of %d partitions since the mark", n, len(owners))
			return false // not enough seen yet
		}
		owned = map[*member][]int32{}
		for p, ws := range owners {
			if len(ws) > 1 {
				why = fmt.Sprintf("partition %d printed by %d members", p, len(ws))
				mark()
				return false
			}
			owned[ws[0]] = append(owned[ws[0]], p)
		}
		for _, m := range ms {
			if len(owned[m]) == 0 {
				why = m.name + " printed nothing"
				mark()
				return false
			}
			slices.Sort(owned[m])
		}
		return true
	})
	if !ok {
		t.Fatalf("the group did not settle in %v: %s", timeout, why)
	}
	return owned
}

// regression is a decrease of a committed offset seen in Kafka.
type regression struct {
	P        int32
	From, To int64
	At       time.Time
}

func (r regression) String() string {
	return fmt.Sprintf("p%d %d -> %d at %s", r.P, r.From, r.To, r.At.Format("15:04:05.000"))
}

// offsetPoller reads the group's committed offsets from Kafka
// (OffsetFetch) every 50 ms and records every decrease.
type offsetPoller struct {
	mu          sync.Mutex
	last        map[int32]int64
	regressions []regression
	rounds      int
	errs        int
	lastErr     error
	stop, done  chan struct{}
}

func startOffsetPoller(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) *offsetPoller {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := &offsetPoller{last: map[int32]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	ps := make([]int32, parts)
	for i := range ps {
		ps[i] = int32(i)
	}
	go func() {
		defer close(p.done)
		defer admin.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			p.poll(admin, group, topic, ps)
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *offsetPoller) poll(admin sarama.ClusterAdmin, group, topic string, ps []int32) {
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	now := time.Now()
	if err == nil && resp.Err != sarama.ErrNoError {
		err = resp.Err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rounds++
	if err != nil {
		p.errs++
		p.lastErr = err
		return
	}
	for _, part := range ps {
		b := resp.GetBlock(topic, part)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset < 0 {
			continue
		}
		if prev, ok := p.last[part]; ok && b.Offset < prev {
			p.regressions = append(p.regressions, regression{part, prev, b.Offset, now})
		}
		p.last[part] = b.Offset
	}
}

func (p *offsetPoller) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// committed returns the last committed offsets read (absent: none yet).
func (p *offsetPoller) committed() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int32]int64, len(p.last))
	for k, v := range p.last {
		out[k] = v
	}
	return out
}

func (p *offsetPoller) round() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rounds
}

// awaitRounds waits until n more complete reads were made.
func (p *offsetPoller) awaitRounds(t *testing.T, n int) {
	t.Helper()
	want := p.round() + n + 1
	await(t, 10*time.Second, fmt.Sprintf("%d reads of the committed offsets", n), func() bool { return p.round() >= want })
}

// check stops the poller and fails t for each decrease it saw.
func (p *offsetPoller) check(t *testing.T) {
	t.Helper()
	p.close()
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("committed offsets read %d times (%d failed reads, last error %v)", p.rounds, p.errs, p.lastErr)
	for _, r := range p.regressions {
		t.Errorf("committed offset went backwards: %s", r)
	}
}

// startProducer writes one message to each partition every 10 ms (600 a
// second over 6 partitions), acks=all, until finish.
func startProducer(t *testing.T, c *testcluster.Cluster, topic string, parts int32) *testcluster.Producer {
	t.Helper()
	return testcluster.StartProducer(t, c, topic, parts, 0, int(parts), 10*time.Millisecond)
}

// finish stops p and returns where what it wrote landed (acknowledged).
func finish(t *testing.T, p *testcluster.Producer) []printed {
	t.Helper()
	p.Halt(t)
	var out []printed
	for _, w := range p.Written() {
		out = append(out, printed{w.Partition, w.Offset})
	}
	return out
}

// finishAll stops p, waits until every message it wrote was printed by
// some member of ms, and stops live (SIGTERM, exit 0). It returns what p
// wrote.
func finishAll(t *testing.T, p *testcluster.Producer, ms, live []*member) []printed {
	t.Helper()
	produced := finish(t, p)
	var lost []printed
	if !testcluster.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		lost = missing(t, produced, ms)
		return len(lost) == 0
	}) {
		t.Errorf("%d of %d produced messages were never printed (first %v)", len(lost), len(produced), firstN(lost, 10))
	}
	for _, m := range live {
		if code := m.d.stop(30 * time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGTERM", m.name, code)
		}
	}
	return produced
}

// missing returns the produced messages no member printed.
func missing(t *testing.T, produced []printed, ms []*member) []printed {
	t.Helper()
	seen := map[printed]bool{}
	for _, m := range ms {
		for _, r := range m.lines(t) {
			seen[r] = true
		}
	}
	var out []printed
	for _, r := range produced {
		if !seen[r] {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].P < out[j].P || out[i].P == out[j].P && out[i].O < out[j].O })
	return out
}

// logLines returns the lines of a daemon's stderr that contain any of
// words (for the evidence of a failed test).
func logLines(d *proc, words ...string) string {
	var out []string
	for _, l := range strings.Split(d.stderr.String(), "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	if len(out) > 30 {
		out = out[len(out)-30:]
	}
	return strings.Join(out, "\n")
}

// commitLog follows the group's partition of __consumer_offsets: every
// commit Kafka applied, in the order it applied them. The poller can miss
// a regression that the owner's next commit undid within its 50 ms; this
// cannot.
type commitLog struct {
	mu          sync.Mutex
	last        map[int32]int64
	regressions []regression
	records     int
	stop, done  chan struct{}
}

// startCommitLog starts reading the group's commits from now on.
func startCommitLog(t *testing.T, c *testcluster.Cluster, group, topic string) *commitLog {
	t.Helper()
	client, err := sarama.NewClient(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	// FindCoordinator creates __consumer_offsets on a fresh cluster.
	var cerr error
	if !testcluster.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		_, cerr = client.Coordinator(group)
		return cerr == nil
	}) {
		client.Close()
		t.Fatalf("coordinator of %s: %v", group, cerr)
	}
	const offsetsTopic = "__consumer_offsets"
	parts, err := client.Partitions(offsetsTopic)
	if err != nil || len(parts) == 0 {
		client.Close()
		t.Fatalf("partitions of %s: %v (%d)", offsetsTopic, err, len(parts))
	}
	part := offsetsPartition(group, len(parts))
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	pc, err := consumer.ConsumePartition(offsetsTopic, part, sarama.OffsetNewest)
	if err != nil {
		consumer.Close()
		client.Close()
		t.Fatalf("consuming %s/%d: %v", offsetsTopic, part, err)
	}
	l := &commitLog{last: map[int32]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer client.Close()
		defer consumer.Close()
		defer pc.Close()
		for {
			select {
			case <-l.stop:
				return
			case m := <-pc.Messages():
				g, tp, p, off, ok := decodeOffsetCommit(m.Key, m.Value)
				if !ok || g != group || tp != topic {
					continue
				}
				l.mu.Lock()
				l.records++
				if prev, seen := l.last[p]; seen && off < prev {
					l.regressions = append(l.regressions, regression{p, prev, off, m.Timestamp})
				}
				l.last[p] = off
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(l.close)
	return l
}

func (l *commitLog) close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// check waits until the log has reached want (the final committed
// offsets), stops reading and fails t for each decrease it saw.
func (l *commitLog) check(t *testing.T, want map[int32]int64) {
	t.Helper()
	caught := testcluster.Poll(15*time.Second, 50*time.Millisecond, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for p, o := range want {
			if l.last[p] != o {
				return false
			}
		}
		return true
	})
	l.close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !caught {
		t.Errorf("__consumer_offsets did not reach the final commits %v: last read %v", want, l.last)
	}
	t.Logf("__consumer_offsets: %d commits of the group read", l.records)
	for _, r := range l.regressions {
		t.Errorf("committed offset went backwards in __consumer_offsets: %s", r)
	}
}

// offsetsPartition is Kafka's partition of __consumer_offsets for group:
// Utils.abs(groupId.hashCode()) % partitions, where Utils.abs is
// Math.abs but 0 for Integer.MIN_VALUE.
func offsetsPartition(group string, partitions int) int32 {
	var h int32
	for _, r := range group { // UTF-16 code units: the names are ASCII
		h = 31*h + int32(r)
	}
	a := int64(h)
	switch {
	case h == math.MinInt32:
		a = 0
	case a < 0:
		a = -a
	}
	return int32(a % int64(partitions))
}

// decodeOffsetCommit decodes an offset commit record of __consumer_offsets
// (key versions 0 and 1; every value version starts with the offset);
// ok is false for group metadata and tombstones.
func decodeOffsetCommit(key, value []byte) (group, topic string, partition int32, offset int64, ok bool) {
	if len(key) < 2 || len(value) < 10 {
		return "", "", 0, 0, false
	}
	if v := binenc.BigEndian.Uint16(key); v > 1 {
		return "", "", 0, 0, false
	}
	rest := key[2:]
	str := func() (string, bool) {
		if len(rest) < 2 {
			return "", false
		}
		n := int(binenc.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return "", false
		}
		s := string(rest[2 : 2+n])
		rest = rest[2+n:]
		return s, true
	}
	var ok1, ok2 bool
	group, ok1 = str()
	topic, ok2 = str()
	if !ok1 || !ok2 || len(rest) < 4 {
		return "", "", 0, 0, false
	}
	partition = int32(binenc.BigEndian.Uint32(rest))
	offset = int64(binenc.BigEndian.Uint64(value[2:]))
	return group, topic, partition, offset, true
}
