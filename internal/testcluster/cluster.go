package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
)

// Options configures a cluster. The zero value is not useful: use
// DefaultOptions and the Option functions.
type Options struct {
	Brokers int // 1 to 3 Kafka brokers
	// ZooKeepers is the number of ZooKeeper servers: 1 (standalone), or
	// 3 or 5 (an ensemble on loopback; see ZooKeepers).
	ZooKeepers   int
	Chroot       string        // ZooKeeper chroot of the Kafka cluster, e.g. "/kafka"
	Dir          string        // working folder; a temporary one when empty
	Detach       bool          // processes survive this process (for cluster-up)
	StartTimeout time.Duration // how long Start waits for brokers and a controller
	BrokerHeapMB int
	ZKHeapMB     int
	// ZKTickMs is ZooKeeper's tickTime; sessions are negotiated into
	// [2, 20] x tick. 500 ms allows sessions of 1 s to 10 s.
	ZKTickMs int
	// BrokerSessionTimeout is the brokers' own ZooKeeper session timeout:
	// how long a kill -9'd broker stays registered.
	BrokerSessionTimeout time.Duration
	// KRaft runs Apache Kafka 4 (Kafka4Version) in KRaft mode instead:
	// each node a combined broker and controller, nothing registered in
	// ZooKeeper, which serves zkgroup alone (Chroot is then zkgroup's).
	KRaft bool
	// Secure adds secured endpoints (see Secure): a test-time PKI, broker
	// listeners SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) and MTLS
	// (SSL with client certificates required) beside PLAINTEXT, SCRAM
	// users created with Kafka's own kafka-configs tool, and ZooKeeper's
	// secure client port (TLS, client certificate required). ZooKeeper
	// mode only.
	Secure bool
	// BrokerProps are server.properties lines added to each broker's
	// (ZooKeeper mode) or node's (KRaft), by broker id, after the
	// defaults: a key set here wins. See BrokerProps.
	BrokerProps map[int32]string

	// For the harness's own tests: how long a KRaft node may stay out
	// of the metadata before it is restarted (0: kraftStuckAfter), and
	// a function run once the broker processes are started, before the
	// wait for them.
	kraftStuckAfter time.Duration
	afterStart      func(*Cluster)
}

// Option changes Options.
type Option func(*Options)

// Brokers sets the number of Kafka brokers (1 to 3).
func Brokers(n int) Option { return func(o *Options) { o.Brokers = n } }

// ZooKeepers runs n ZooKeeper servers (1, the default, or an ensemble of
// 3 or 5) on loopback: each with its own client, quorum and election
// ports, data folder (zookeeper-N) and myid, and the four-letter words
// enabled (srvr and cons say which server leads and which clients each
// serves). The brokers, ZooKeeperConnect and Connect name every server.
// Run as root, each server's JVM runs with a group id of its own, which
// lets CutZooKeeperServer cut it off from the others (iptables owner
// match).
func ZooKeepers(n int) Option { return func(o *Options) { o.ZooKeepers = n } }

// Chroot sets the ZooKeeper chroot under which the brokers register.
func Chroot(path string) Option { return func(o *Options) { o.Chroot = path } }

// Dir sets the working folder (configs, logs, data).
func Dir(path string) Option { return func(o *Options) { o.Dir = path } }

// Detach makes the JVMs outlive the calling process (for cluster-up).
func Detach() Option { return func(o *Options) { o.Detach = true } }

// KRaft runs Apache Kafka 4 in KRaft mode beside a ZooKeeper of zkgroup's
// own (see Options.KRaft).
func KRaft() Option { return func(o *Options) { o.KRaft = true } }

// Secured adds the secured endpoints (see Options.Secure).
func Secured() Option { return func(o *Options) { o.Secure = true } }

// BrokerProps adds server.properties lines to broker id's configuration
// (for example "broker.rack=b"); a key given here overrides the default.
func BrokerProps(id int32, props ...string) Option {
	return func(o *Options) {
		if o.BrokerProps == nil {
			o.BrokerProps = map[int32]string{}
		}
		for _, p := range props {
			o.BrokerProps[id] += p + "\n"
		}
	}
}

// DefaultOptions returns 1 broker under chroot /kafka.
func DefaultOptions() Options {
	return Options{
		Brokers:              1,
		ZooKeepers:           1,
		Chroot:               "/kafka",
		StartTimeout:         120 * time.Second,
		BrokerHeapMB:         512,
		ZKHeapMB:             192,
		ZKTickMs:             500,
		BrokerSessionTimeout: 6 * time.Second,
	}
}

func (o Options) validate() error {
	if o.Brokers < 1 || o.Brokers > 3 {
		return fmt.Errorf("testcluster: Brokers: %d is not between 1 and 3", o.Brokers)
	}
	if o.Chroot != "" && (!strings.HasPrefix(o.Chroot, "/") || strings.HasSuffix(o.Chroot, "/")) {
		return fmt.Errorf("testcluster: Chroot: %q must start with / and not end with /", o.Chroot)
	}
	if o.ZooKeepers != 1 && o.ZooKeepers != 3 && o.ZooKeepers != 5 {
		return fmt.Errorf("testcluster: ZooKeepers: %d is not 1, 3 or 5", o.ZooKeepers)
	}
	if o.ZooKeepers > 1 && o.Secure {
		return fmt.Errorf("testcluster: ZooKeepers: an ensemble runs without Secure")
	}
	if o.KRaft && o.Secure {
		return fmt.Errorf("testcluster: Secure: secured endpoints run in ZooKeeper mode only")
	}
	return nil
}

// Cluster is a running ZooKeeper and its Kafka brokers on loopback. Its
// methods are safe for concurrent use.
type Cluster struct {
	opts    Options
	lib     string // Kafka's jars (Kafka4Version's with KRaft)
	zkLib   string // ZooKeeper's jars (KafkaVersion's)
	dir     string
	ownsDir bool

	zks          []*zkServer // server N is zks[N-1]
	zkSecurePort int         // with Secure (standalone only)
	pki          *PKI        // with Secure
	clusterID    string

	mu      sync.Mutex
	brokers map[int32]*broker // by broker id (1..n)
	notes   []string          // what the harness did to get the cluster up (see Notes)

	closeOnce sync.Once
	closeErr  error

	// attached: a cluster this process did not start (see Attach).
	attached []string
}

// Attach returns a Cluster for a detached cluster described by s (started by
// another process): addresses, topics and producing work; stopping,
// killing and starting processes do not. Close does nothing.
func Attach(s State) *Cluster {
	c := &Cluster{lib: s.LibDir, zkLib: s.LibDir, dir: s.Dir, brokers: map[int32]*broker{}, attached: s.Brokers}
	if s.ZooKeeperLibDir != "" {
		c.zkLib = s.ZooKeeperLibDir
	}
	c.opts = DefaultOptions()
	c.opts.KRaft = s.KRaft
	c.opts.Chroot = strings.TrimPrefix(s.ZooKeeperConnect, s.ZooKeeper)
	for i, addr := range strings.Split(s.ZooKeeper, ",") {
		z := &zkServer{id: i + 1}
		if _, p, err := net.SplitHostPort(addr); err == nil {
			z.port, _ = strconv.Atoi(p)
		}
		c.zks = append(c.zks, z)
	}
	c.opts.ZooKeepers = len(c.zks)
	c.closeOnce.Do(func() {})
	return c
}

type broker struct {
	id   int32
	port int
	dir  string
	proc *process
	// With Secure: the SASL_SSL and MTLS listeners. With KRaft: the
	// controller listener.
	saslPort, mtlsPort, ctrlPort int
}

// Launch fetches the jars if needed, starts ZooKeeper and the brokers on free
// loopback ports, and waits until every broker is registered under
// /brokers/ids and a controller is elected. On error everything it started
// is stopped again. It blocks for the whole start (10 to 30 s).
func Launch(ctx context.Context, opts ...Option) (*Cluster, error) {
	o := DefaultOptions()
	for _, f := range opts {
		f(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	fr, err := Fetch()
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, lib: fr.LibDir, zkLib: fr.LibDir, brokers: map[int32]*broker{}}
	if o.KRaft {
		f4, err := FetchKafka4()
		if err != nil {
			return nil, err
		}
		c.lib = f4.LibDir
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "zkgroup-cluster-")
		if err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		c.dir, c.ownsDir = d, true
	} else {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		c.dir = o.Dir
	}
	if err := c.start(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	if err := writeToolLog4j(c.dir); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	if c.opts.ZooKeepers > 1 {
		if err := c.setupEnsemble(); err != nil {
			return err
		}
	} else {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		if c.opts.Secure {
			if c.pki, err = NewPKI(filepath.Join(c.dir, "pki")); err != nil {
				return err
			}
			c.zkSecurePort = ports[1]
		}
		if err := c.setupZooKeeper(ports[0]); err != nil {
			return err
		}
	}
	if err := c.StartZooKeeper(ctx); err != nil {
		return err
	}
	if c.opts.KRaft {
		if err := c.setupKRaft(); err != nil {
			return err
		}
	} else {
		for i := 1; i <= c.opts.Brokers; i++ {
			if err := c.setupBroker(int32(i)); err != nil {
				return err
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, c.opts.Brokers)
	for i := 1; i <= c.opts.Brokers; i++ {
		wg.Add(1)
		go func(id int32) {
			defer wg.Done()
			errs[id-1] = c.brokers[id].proc.start()
		}(int32(i))
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.opts.afterStart != nil {
		c.opts.afterStart(c)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		return err
	}
	if c.opts.KRaft {
		return c.ensureChroot()
	}
	if c.opts.Secure {
		return c.createUsers(ctx)
	}
	return nil
}

// setupZooKeeper writes the configuration of a standalone ZooKeeper
// serving clients on port.
func (c *Cluster) setupZooKeeper(port int) error {
	dir := filepath.Join(c.dir, "zookeeper")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	cfg := fmt.Sprintf(`tickTime=%d
initLimit=10
syncLimit=5
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=%d
maxSessionTimeout=%d
`, c.opts.ZKTickMs, filepath.Join(dir, "data"), port, 2*c.opts.ZKTickMs, 20*c.opts.ZKTickMs)
	var props []string
	if c.opts.Secure {
		cfg += fmt.Sprintf("secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", c.zkSecurePort)
		props = zooKeeperTLSProps(c.pki)
	}
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	if err := writeLog4j(dir, filepath.Join(dir, "zookeeper.log")); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	args := append(append(jvmArgs(c.zkLib, dir, c.opts.ZKHeapMB), props...),
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg"))
	z := &zkServer{id: 1, port: port, proc: newProcess("zookeeper", dir, c.opts.Detach, nil, args...)}
	z.proc.appLog = filepath.Join(dir, "zookeeper.log")
	c.zks = []*zkServer{z}
	return nil
}

func (c *Cluster) setupBroker(id int32) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	port := ports[0]
	dir := filepath.Join(c.dir, fmt.Sprintf("broker-%d", id))
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	rf := c.opts.Brokers
	b := &broker{id: id, port: port, dir: dir}
	listeners := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)
	security := ""
	if c.opts.Secure {
		b.saslPort, b.mtlsPort = ports[1], ports[2]
		listeners += fmt.Sprintf(",SASL_SSL://127.0.0.1:%d,MTLS://127.0.0.1:%d", b.saslPort, b.mtlsPort)
		security = brokerSecurity(c.pki)
	}
	cfg := fmt.Sprintf(`broker.id=%d
listeners=%s
advertised.listeners=%s
zookeeper.connect=%s
zookeeper.session.timeout.ms=%d
zookeeper.connection.timeout.ms=30000
controlled.shutdown.max.retries=1
controlled.shutdown.retry.backoff.ms=500
leader.imbalance.check.interval.seconds=10
`, id, listeners, listeners, c.ZooKeeperConnect(), c.opts.BrokerSessionTimeout.Milliseconds()) +
		serverProps(filepath.Join(dir, "data"), rf) + security + c.opts.BrokerProps[id]
	if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	if err := writeLog4j(dir, filepath.Join(dir, "server.log")); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	args := append(jvmArgs(c.lib, dir, c.opts.BrokerHeapMB), "kafka.Kafka", filepath.Join(dir, "server.properties"))
	b.proc = newProcess(fmt.Sprintf("broker-%d", id), dir, c.opts.Detach, nil, args...)
	b.proc.appLog = filepath.Join(dir, "server.log")
	c.mu.Lock()
	c.brokers[id] = b
	c.mu.Unlock()
	return nil
}

// serverProps are the server.properties every broker shares, in
// ZooKeeper mode and in KRaft mode: small thread pools and buffers for a
// shared 2-core machine, replication factor rf for the internal topics,
// topics only created on request.
//
// log.index.size.max.bytes: a segment's offset and time indexes are
// created at this size (10 MiB by default), sparse, and memory-mapped. A
// fault on one reads around it, up to the disk's read_ahead_kb (8 MiB on
// the machines here): each index of a partition in use came to hold 8 MiB
// of page cache, 5 GB per broker for 1,000 partitions, and the kernel's
// reclaim of it stalled all three brokers for 5-40 s at a time (90% system
// CPU in their request threads, in mmap readahead). At 64 KiB an index
// holds 8,192 offsets (5,461 times), 22-32 MiB of log at one entry per
// 4 KiB; a full index rolls the segment.
func serverProps(dataDir string, rf int) string {
	return fmt.Sprintf(`log.dirs=%s
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=%d
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=%d
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
background.threads=4
log.cleaner.enable=true
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=2097152
controlled.shutdown.enable=true
unclean.leader.election.enable=false
replica.lag.time.max.ms=10000
replica.socket.timeout.ms=5000
replica.fetch.wait.max.ms=200
log.index.size.max.bytes=65536
`, dataDir, rf, rf)
}

// Dir returns the cluster's working folder (configs, logs and data).
func (c *Cluster) Dir() string { return c.dir }

// LibDir returns the folder of Kafka's jars (for running Kafka's own tools).
func (c *Cluster) LibDir() string { return c.lib }

// ZooKeeperAddr returns "127.0.0.1:port" of ZooKeeper (no chroot); for an
// ensemble, every server's, comma-separated, as a connect string takes
// them.
func (c *Cluster) ZooKeeperAddr() string { return strings.Join(c.ZooKeeperAddrs(), ",") }

// ZooKeeperAddrs returns "127.0.0.1:port" of each ZooKeeper server, in
// server order (server N is element N-1).
func (c *Cluster) ZooKeeperAddrs() []string {
	out := make([]string, len(c.zks))
	for i, z := range c.zks {
		out[i] = z.addr()
	}
	return out
}

// Chroot returns the chroot the brokers register under, e.g. "/kafka".
func (c *Cluster) Chroot() string { return c.opts.Chroot }

// ZooKeeperConnect returns the connect string with the chroot, as Kafka's
// zookeeper.connect and zkgroup take it: "127.0.0.1:port/kafka" (an
// ensemble: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/kafka").
func (c *Cluster) ZooKeeperConnect() string { return c.ZooKeeperAddr() + c.opts.Chroot }

// BrokerIDs returns the ids of all brokers, running or not, sorted.
func (c *Cluster) BrokerIDs() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// BrokerAddr returns "127.0.0.1:port" of broker id.
func (c *Cluster) BrokerAddr(id int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.brokers[id]; ok {
		return fmt.Sprintf("127.0.0.1:%d", b.port)
	}
	return ""
}

// Addrs returns the addresses of the brokers that are running.
func (c *Cluster) Addrs() []string {
	if c.attached != nil {
		return append([]string(nil), c.attached...)
	}
	var out []string
	for _, id := range c.BrokerIDs() {
		c.mu.Lock()
		b := c.brokers[id]
		c.mu.Unlock()
		if b.proc.running() {
			out = append(out, fmt.Sprintf("127.0.0.1:%d", b.port))
		}
	}
	return out
}

func (c *Cluster) broker(id int32) (*broker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.brokers[id]
	if !ok {
		return nil, fmt.Errorf("testcluster: no broker %d", id)
	}
	return b, nil
}

// StopBroker stops broker id with SIGTERM (a controlled shutdown that moves
// its leaderships away) and waits until it has exited.
func (c *Cluster) StopBroker(id int32) error {
	return c.stopBroker(id, syscall.SIGTERM, 60*time.Second)
}

// KillBroker kills broker id with SIGKILL (a crash) and waits for its exit.
// Its registration stays in ZooKeeper until its session times out.
func (c *Cluster) KillBroker(id int32) error { return c.stopBroker(id, syscall.SIGKILL, 0) }

func (c *Cluster) stopBroker(id int32, sig syscall.Signal, grace time.Duration) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	return b.proc.stop(sig, grace)
}

// StartBroker starts broker id again with its data and port, and waits
// until it is registered in ZooKeeper. After a KillBroker it first waits
// for the dead broker's registration to expire (BrokerSessionTimeout):
// Kafka refuses to start while its id is still registered.
func (c *Cluster) StartBroker(ctx context.Context, id int32) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if !c.opts.KRaft {
		path := c.opts.Chroot + "/brokers/ids/" + strconv.Itoa(int(id))
		if err := c.waitNoZNode(ctx, path, fmt.Sprintf("broker %d's old registration to expire", id)); err != nil {
			return err
		}
	}
	if err := b.proc.start(); err != nil {
		return err
	}
	return c.waitBroker(ctx, b)
}

// waitNoZNode polls (no watch, as waitZNode) until path does not exist.
func (c *Cluster) waitNoZNode(ctx context.Context, path, what string) error {
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		if ok, _, err := conn.Exists(path); err == nil && !ok {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond): // polling the condition
		case <-ctx.Done():
			return fmt.Errorf("testcluster: waiting for %s (%s): %w", what, path, ctx.Err())
		}
	}
}

// StopZooKeeper stops every ZooKeeper server (SIGTERM) and waits for
// their exit; brokers keep running and reconnect when it is back.
func (c *Cluster) StopZooKeeper() error { return c.stopZooKeepers(syscall.SIGTERM, 20*time.Second) }

// KillZooKeeper kills every ZooKeeper server with SIGKILL.
func (c *Cluster) KillZooKeeper() error { return c.stopZooKeepers(syscall.SIGKILL, 0) }

func (c *Cluster) stopZooKeepers(sig syscall.Signal, grace time.Duration) error {
	var errs []error
	for _, z := range c.zks {
		if z.proc != nil {
			errs = append(errs, z.proc.stop(sig, grace))
		}
	}
	return errors.Join(errs...)
}

// StartZooKeeper starts every ZooKeeper server that is not running (again,
// with its data) and waits until each serves clients: a standalone server
// answers "ruok", an ensemble's servers have elected a leader and each is
// leading or following.
func (c *Cluster) StartZooKeeper(ctx context.Context) error {
	for _, z := range c.zks {
		if !z.proc.running() {
			if err := z.proc.start(); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	for _, z := range c.zks {
		if err := c.waitZooKeeperServing(ctx, z); err != nil {
			return err
		}
	}
	return nil
}

// waitZooKeeperServing waits until server z serves clients.
func (c *Cluster) waitZooKeeperServing(ctx context.Context, z *zkServer) error {
	for {
		if len(c.zks) == 1 && ruok(z.addr()) || len(c.zks) > 1 && serving(z.addr()) {
			return nil
		}
		if err := z.proc.exitError(); err != nil {
			return fmt.Errorf("testcluster: %s exited: %v\n%s", z.proc.name, err, z.proc.tail(30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testcluster: %s not serving on %s: %w\n%s", z.proc.name, z.addr(), ctx.Err(), z.proc.tail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ruok sends ZooKeeper's four-letter "ruok" and expects "imok".
func ruok(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return false
	}
	buf := make([]byte, 4)
	n, _ := conn.Read(buf)
	return string(buf[:n]) == "imok"
}

// Connect opens a go-zookeeper session to the cluster's ZooKeeper (no
// chroot: paths are absolute, e.g. c.Chroot()+"/brokers/ids"). The caller
// closes it.
func (c *Cluster) Connect(timeout time.Duration) (*zk.Conn, error) {
	conn, _, err := zk.Connect(c.ZooKeeperAddrs(), timeout, zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		return nil, fmt.Errorf("testcluster: connect zookeeper: %w", err)
	}
	return conn, nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...interface{}) {}

// WaitReady waits until every running broker is registered under
// /brokers/ids and a controller is elected.
func (c *Cluster) WaitReady(ctx context.Context) error {
	if c.opts.KRaft {
		return c.waitKRaft(ctx)
	}
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		if !b.proc.running() {
			continue
		}
		if err := c.waitBroker(ctx, b); err != nil {
			return err
		}
	}
	return c.waitZNode(ctx, c.opts.Chroot+"/controller", nil, "a controller")
}

// waitBroker waits until broker b is registered in ZooKeeper and answers a
// metadata request: a broker registers before its socket server serves.
func (c *Cluster) waitBroker(ctx context.Context, b *broker) error {
	if c.opts.KRaft {
		_, err := c.waitServing(ctx, b, 0)
		return err
	}
	path := c.opts.Chroot + "/brokers/ids/" + strconv.Itoa(int(b.id))
	if err := c.waitZNode(ctx, path, b.proc, fmt.Sprintf("broker %d", b.id)); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", b.port)
	var last error
	for {
		if last = metadataOK(addr); last == nil {
			return nil
		}
		select {
		case <-b.proc.done():
			return fmt.Errorf("testcluster: broker %d exited: %v\n%s", b.id, b.proc.exitError(), b.proc.tail(40))
		case <-ctx.Done():
			return fmt.Errorf("testcluster: broker %d registered but not serving on %s (%v): %w", b.id, addr, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// metadataOK sends one metadata request to addr.
func metadataOK(addr string) error {
	_, err := askMetadata(addr, sarama.V3_9_0_0, &sarama.MetadataRequest{Version: 7})
	return err
}

// waitZNode polls until path exists. If p exits in the meantime, it fails
// with the tail of p's log. It sets no watch: go-zookeeper v1.0.4 races on
// re-sending watches after a reconnect (upstream PR #35), which -race runs
// of the harness must not trip over.
func (c *Cluster) waitZNode(ctx context.Context, path string, p *process, what string) error {
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	var exited <-chan struct{}
	if p != nil {
		exited = p.done()
	}
	for {
		if ok, _, err := conn.Exists(path); err == nil && ok {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond): // polling the condition
		case <-exited:
			return fmt.Errorf("testcluster: %s exited before registering: %v\n%s", what, p.exitError(), p.tail(40))
		case <-ctx.Done():
			tail := ""
			if p != nil {
				tail = "\n" + p.tail(40)
			}
			return fmt.Errorf("testcluster: waiting for %s (%s): %w%s", what, path, ctx.Err(), tail)
		}
	}
}

// PIDs returns the pids of the running JVMs.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, z := range c.zks {
		if pid := z.proc.pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		if pid := b.proc.pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// note records something the harness did to get the cluster up.
func (c *Cluster) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, s)
}

// Notes returns what the harness did to get the cluster up beyond
// starting its processes (a stuck KRaft node restarted), for test logs.
func (c *Cluster) Notes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notes)
}

// Logs returns the tails of every process log, for a failing test.
func (c *Cluster) Logs(lines int) string {
	var sb strings.Builder
	for _, z := range c.zks {
		if z.proc != nil {
			fmt.Fprintf(&sb, "=== %s\n%s\n", z.proc.name, z.proc.tail(lines))
		}
	}
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		fmt.Fprintf(&sb, "=== broker %d\n%s\n", id, b.proc.tail(lines))
	}
	return sb.String()
}

// Close stops every broker (SIGTERM, concurrently, SIGKILL after a grace
// period), then ZooKeeper, and removes the working folder if Start made it.
// It is idempotent and blocks until every JVM has exited.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, id := range c.BrokerIDs() {
			b, _ := c.broker(id)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A broker that is the last one alive waits on controlled
				// shutdown retries; 15 s is plenty on loopback.
				if err := b.proc.stop(syscall.SIGTERM, 15*time.Second); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, z := range c.zks {
			if z.proc == nil {
				continue
			}
			if err := z.proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if c.ownsDir && os.Getenv("ZKGROUP_KEEP_CLUSTER_DIR") == "" {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, err)
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
