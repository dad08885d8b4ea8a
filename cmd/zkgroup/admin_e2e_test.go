package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/internal/faultproxy"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// adminDaemon is a daemon with its admin server on a free port.
type adminDaemon struct {
	*proc
	url string
}

func startAdminDaemon(t *testing.T, c *testcluster.Cluster, zk, group, sub, extra string) *adminDaemon {
	t.Helper()
	port := testcluster.FreePort(t)
	cfg := daemonConf{zookeeper: zk, group: group, subscription: sub, listen: fmt.Sprintf("127.0.0.1:%d", port),
		extra: "offset_storage: zookeeper\n" + extra}.String()
	return &adminDaemon{proc: startDaemon(t, runOpts{config: cfg}), url: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// get returns the status code and body of a GET of path.
func (a *adminDaemon) get(path string) (int, string) {
	resp, err := http.Get(a.url + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a *adminDaemon) status(t *testing.T) admin.Status {
	t.Helper()
	code, body := a.get("/status")
	var st admin.Status
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("/status: %d %.200s", code, body)
	}
	return st
}

// family is one metric family of a Prometheus text scrape.
type family struct {
	kind    string
	labels  []string
	samples map[string]float64 // the sample line's name{labels} -> value
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)
var labelName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)

// scrape parses /metrics into families by name (histogram series under
// their family's name).
func (a *adminDaemon) scrape(t *testing.T) map[string]*family {
	t.Helper()
	code, body := a.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	fams := map[string]*family{}
	for _, l := range strings.Split(body, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			fams[f[2]] = &family{kind: f[3], samples: map[string]float64{}}
			continue
		}
		m := sampleLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[1]
		fam := fams[name]
		for _, sfx := range []string{"_bucket", "_sum", "_count"} {
			if fam == nil && strings.HasSuffix(name, sfx) {
				fam = fams[strings.TrimSuffix(name, sfx)]
			}
		}
		if fam == nil {
			t.Fatalf("sample without a TYPE: %s", l)
		}
		var v float64
		_, _ = fmt.Sscan(m[3], &v)
		fam.samples[m[1]+m[2]] = v
		for _, ln := range labelName.FindAllStringSubmatch(m[2], -1) {
			if ln[1] != "le" && !slices.Contains(fam.labels, ln[1]) {
				fam.labels = append(fam.labels, ln[1])
			}
		}
	}
	for _, f := range fams {
		slices.Sort(f.labels)
	}
	return fams
}

// sum adds up a family's samples whose name{labels} contains every part.
func (f *family) sum(parts ...string) float64 {
	if f == nil {
		return 0
	}
	total := 0.0
	for k, v := range f.samples {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(k, p)
		}
		if ok {
			total += v
		}
	}
	return total
}

// docMetrics reads the metrics table of docs/metrics.md: name -> type and
// labels.
func docMetrics(t *testing.T) map[string][2]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Split(l, "|")
		if len(f) == 6 && strings.HasPrefix(strings.TrimSpace(f[1]), "`zkgroup_") {
			out[strings.Trim(strings.TrimSpace(f[1]), "`")] = [2]string{strings.TrimSpace(f[2]), strings.TrimSpace(f[3])}
		}
	}
	return out
}

// TestAdminOperations runs two members of a group (offsets in ZooKeeper),
// one of them reaching ZooKeeper through a fault proxy, and checks on that
// one: the metrics of a running daemon (names, types and labels as
// docs/metrics.md says), commits refused by ZooKeeper (read-only offset
// nodes) counted in zkgroup_commit_errors_total, the log level control, a
// ZooKeeper stall (liveness stays 200, readiness 503 with the reason, both
// 200 after it), and the group page in a real browser.
func TestAdminOperations(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts = 6
	group, topic := groupTopic(t, c, parts, 3)
	testcluster.MustProduce(t, c, topic, parts, 0, 600)
	openOffsetNodes := offsetNodes(t, c, group, topic, parts)
	proxy := testcluster.ZooKeeperProxy(t, c)
	a := startAdminDaemon(t, c, proxy.Addr()+c.Chroot(), group, "static:"+topic, "")
	b := startAdminDaemon(t, c, c.ZooKeeperConnect(), group, "static:"+topic, "")
	a.ready(60 * time.Second)
	b.ready(60 * time.Second)
	bothOwn := func() bool {
		st := a.status(t)
		if st.GroupView == nil || len(st.GroupView.Members) != 2 || len(st.GroupView.Unowned) != 0 || len(st.GroupView.Partitions) != parts {
			return false
		}
		for _, m := range st.GroupView.Members {
			if len(m.Partitions) == 0 {
				return false
			}
		}
		return st.Ready
	}
	await(t, 60*time.Second, "both members owning partitions, as a's group view shows", bothOwn)

	t.Run("metrics", func(t *testing.T) { checkRunningMetrics(t, a) })
	t.Run("commit errors", func(t *testing.T) { checkCommitErrors(t, a, openOffsetNodes) })
	t.Run("log level", func(t *testing.T) {
		if code, body := a.get("/loglevel"); code != 200 || strings.TrimSpace(body) != "info" {
			t.Fatalf("GET /loglevel: %d %q", code, body)
		}
		req, _ := http.NewRequest(http.MethodPut, a.url+"/loglevel", strings.NewReader("debug"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT /loglevel: %v %v", resp, err)
		}
		resp.Body.Close()
		if _, err := c.Produce(topic, parts, 5000, 60); err != nil { // something to log about
			t.Fatal(err)
		}
		await(t, 30*time.Second, "debug records in the log", func() bool { return strings.Contains(a.stderr.String(), `"level":"DEBUG"`) })
	})
	t.Run("zookeeper stall", func(t *testing.T) { stallZooKeeper(t, c, a, proxy, topic, parts) })
	await(t, 90*time.Second, "both members owning partitions again", bothOwn)
	t.Run("page", func(t *testing.T) { checkPage(t, a) })

	if code := b.stop(30 * time.Second); code != 0 {
		t.Errorf("b exited %d", code)
	}
	if code := a.stop(30 * time.Second); code != 0 {
		t.Errorf("a exited %d", code)
	}
}

// checkRunningMetrics: every zkgroup_ family of the running daemon has the
// type and labels docs/metrics.md gives, and the operational ones are
// there.
func checkRunningMetrics(t *testing.T, a *adminDaemon) {
	doc := docMetrics(t)
	// Owning partitions comes before delivering them: on a loaded machine
	// the first batch reaches the sink a while after.
	var fams map[string]*family
	await(t, 60*time.Second, "a's sink delivering (zkgroup_sink_batches_total)", func() bool {
		fams = a.scrape(t)
		return fams["zkgroup_sink_batches_total"].sum() >= 1 && fams["zkgroup_lag"] != nil
	})
	for name, f := range fams {
		if !strings.HasPrefix(name, "zkgroup_") {
			continue
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("%s exported but not in docs/metrics.md", name)
			continue
		}
		if d[0] != f.kind || d[1] != strings.Join(f.labels, ", ") {
			t.Errorf("%s: running daemon %s {%s}, docs/metrics.md %s {%s}", name, f.kind, strings.Join(f.labels, ", "), d[0], d[1])
		}
	}
	for _, name := range []string{"zkgroup_lag", "zkgroup_consumergroup_lag", "zkgroup_commit_errors_total", "zkgroup_fetch_errors_total",
		"zkgroup_offset_resets_total", "zkgroup_oldest_unacked_age_seconds", "zkgroup_partition_suspended", "zkgroup_suspended_partitions",
		"zkgroup_rebalances_total", "zkgroup_rebalance_duration_seconds", "zkgroup_sink_attempt_duration_seconds",
		"zkgroup_sink_batch_duration_seconds", "zkgroup_sink_batch_messages", "zkgroup_sink_batch_bytes", "zkgroup_sink_batches_total",
		"zkgroup_subscription_topics", "zkgroup_unowned_partitions", "zkgroup_session_healthy"} {
		if fams[name] == nil || len(fams[name].samples) == 0 {
			t.Errorf("the running daemon exports no %s", name)
		}
	}
	if got := fams["zkgroup_subscription_topics"].sum(); got != 1 {
		t.Errorf("zkgroup_subscription_topics %v, want 1", got)
	}
	if got := fams["zkgroup_rebalances_total"].sum(`cause="start"`); got < 1 {
		t.Errorf("no start rebalance counted: %v", fams["zkgroup_rebalances_total"].sum())
	}
	if got := fams["zkgroup_sink_attempt_duration_seconds"].sum(`_count{`, `result="ok"`); got < 1 {
		t.Errorf("no sink attempt timed: %v", got)
	}
	// The stdout sink takes batches: timed and sized per batch, labelled
	// with the sink.
	if got := fams["zkgroup_sink_batch_duration_seconds"].sum(`_count{`, `result="ok"`, `sink="stdout"`); got < 1 {
		t.Errorf("no sink batch timed: %v", fams["zkgroup_sink_batch_duration_seconds"].sum())
	}
	if got := fams["zkgroup_sink_batches_total"].sum(); got < 1 {
		t.Errorf("no sink batch counted: %v", got)
	}
}

// stallZooKeeper stalls a's ZooKeeper connection (no byte either way, no
// TCP error) while messages flow: once the session is unhealthy, /readyz
// answers 503 naming it while /healthz stays 200; after the stall (the
// session may have expired meanwhile) both answer 200 again.
func stallZooKeeper(t *testing.T, c *testcluster.Cluster, a *adminDaemon, proxy *faultproxy.Proxy, topic string, parts int32) {
	prod := testcluster.StartProducer(t, c, topic, parts, 1000, 60, 50*time.Millisecond)
	stopProducing := func() { prod.Halt(t) }
	defer stopProducing()
	proxy.Stall()
	stalled := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			proxy.Resume()
		}
	}()
	var reason string
	await(t, 30*time.Second, "a's /readyz to fail on the stalled session", func() bool {
		if code, body := a.get("/healthz"); code != 200 {
			t.Fatalf("/healthz during the stall: %d %q", code, body)
		}
		code, body := a.get("/readyz")
		reason = strings.TrimSpace(body)
		return code == 503 && strings.Contains(body, "zookeeper session unhealthy")
	})
	t.Logf("/readyz %v into the stall: %s", time.Since(stalled).Round(time.Millisecond), reason)
	if _, out, code := run(t, "healthcheck", "--url", a.url+"/healthz"); code != 0 {
		t.Errorf("zkgroup healthcheck during the stall: exit %d %s", code, out)
	}
	if got := a.scrape(t)["zkgroup_session_healthy"].sum(); got != 0 {
		t.Errorf("zkgroup_session_healthy %v during the stall", got)
	}
	proxy.Resume()
	resumed = true
	stopProducing()
	await(t, 90*time.Second, "a ready again after the stall", func() bool {
		code, _ := a.get("/readyz")
		return code == 200
	})
	if code, _ := a.get("/healthz"); code != 200 {
		t.Errorf("/healthz after the stall: %d", code)
	}
}

// offsetNodes creates the group's offset nodes of topic (ZooKeeper
// storage) at offset 0, readable by all and writable by none (ADMIN
// lets the test open them again): every
// commit of the group fails until openOffsetNodes.
func offsetNodes(t *testing.T, c *testcluster.Cluster, group, topic string, parts int32) (openOffsetNodes func()) {
	t.Helper()
	conn := testcluster.ZooKeeper(t, c)
	dir := c.Chroot() + "/consumers/" + group + "/offsets/" + topic
	path := c.Chroot()
	for _, part := range strings.Split(strings.TrimPrefix(dir, c.Chroot()+"/"), "/") {
		path += "/" + part
		if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("creating %s: %v", path, err)
		}
	}
	for p := int32(0); p < parts; p++ {
		if _, err := conn.Create(fmt.Sprintf("%s/%d", dir, p), []byte("0"), 0, zk.WorldACL(zk.PermRead|zk.PermAdmin)); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for p := int32(0); p < parts; p++ {
			if _, err := conn.SetACL(fmt.Sprintf("%s/%d", dir, p), zk.WorldACL(zk.PermAll), -1); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkCommitErrors: while the offset nodes refuse writes, a's commits
// fail and zkgroup_commit_errors_total counts them on a's partitions;
// once they accept writes again, a commits up to the log end.
func checkCommitErrors(t *testing.T, a *adminDaemon, openOffsetNodes func()) {
	var failing map[string]float64
	await(t, 30*time.Second, "commit errors counted", func() bool {
		failing = a.scrape(t)["zkgroup_commit_errors_total"].samples
		n := 0
		for _, v := range failing {
			if v > 0 {
				n++
			}
		}
		return n > 0 && n >= len(a.status(t).Partitions)
	})
	t.Logf("zkgroup_commit_errors_total while the offset nodes refuse writes: %v", failing)
	if !strings.Contains(a.stderr.String(), "commits failed") {
		t.Errorf("no failed commit logged")
	}
	openOffsetNodes()
	await(t, 30*time.Second, "a's partitions committed up to the log end", func() bool {
		st := a.status(t)
		for _, p := range st.Partitions {
			if p.Committed <= 0 || p.Lag != 0 {
				return false
			}
		}
		return len(st.Partitions) > 0
	})
}

// checkPage loads a's group page in headless chromium and checks that the
// page's own script rendered both members and every partition with its
// owner as the group view has it; the screenshot is kept.
func checkPage(t *testing.T, a *adminDaemon) {
	st := a.status(t)
	shot := filepath.Join(artifactDir(), "group-page.png")
	dom := browse(t, a.url+"/", 4*time.Second, shot)
	t.Logf("screenshot of the group page: %s", shot)
	for _, m := range st.GroupView.Members {
		if !strings.Contains(dom, `data-member="`+m.ID+`"`) {
			t.Errorf("the page shows no member %s", m.ID)
		}
	}
	for _, p := range st.GroupView.Partitions {
		row := fmt.Sprintf(`data-tp="%s/%d" data-owner="%s"`, p.Topic, p.Partition, p.Owner)
		if !strings.Contains(dom, row) {
			t.Errorf("the page lacks the row %s", row)
		}
	}
	for _, want := range []string{`id="ready" class="badge ok">ready<`, "session healthy", "<polyline", "this member"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(dom, `id="error" style="display: block`) {
		t.Errorf("the page shows an error")
	}
}

// TestSubscriptionMatchingNothing: a member whose subscription matches no
// topic warns in the log, tells systemd why it is idle, and is not ready.
func TestSubscriptionMatchingNothing(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	group, topic := testcluster.Name(t, "g"), testcluster.Name(t, "no-such-topic")
	a := startAdminDaemon(t, c, c.ZooKeeperConnect(), group, "static:"+topic, "")
	a.ready(60 * time.Second)
	a.notify.waitFor(t, "STATUS=idle: the subscription matches no topic", 5*time.Second)
	log := a.stderr.String()
	if !strings.Contains(log, `"level":"WARN"`) || !strings.Contains(log, "the subscription matches no topic") || !strings.Contains(log, "static:"+topic) {
		t.Errorf("no warning naming the subscription:\n%s", tail(log, 10))
	}
	code, body := a.get("/readyz")
	if code != 503 || !strings.Contains(body, "subscription matches no topic") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	if code, _ := a.get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code := a.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d", code)
	}
}
