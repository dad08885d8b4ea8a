package testcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
)

// storageToolClass formats a KRaft node's log directory
// (bin/kafka-storage.sh format).
const storageToolClass = "kafka.tools.StorageTool"

// newClusterID returns a random Kafka cluster id: 16 bytes, URL-safe
// base64 without padding, as kafka-storage random-uuid prints, and, as
// Kafka's own Uuid.randomUuid does, never one that starts with '-': the
// storage tool's argument parser would take it for an option (one start
// in 64 failed so).
func newClusterID() string {
	b := make([]byte, 16)
	for {
		_, _ = rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

// setupKRaft writes the configuration of every node (combined broker and
// controller, static quorum of all nodes) and formats its storage.
func (c *Cluster) setupKRaft() error {
	c.clusterID = newClusterID()
	n := c.opts.Brokers
	nodes := make([]*broker, 0, n)
	var voters []string
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		b := &broker{id: int32(i), dir: filepath.Join(c.dir, fmt.Sprintf("broker-%d", i))}
		b.port, b.ctrlPort = ports[2*i-2], ports[2*i-1]
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, b.ctrlPort))
		nodes = append(nodes, b)
	}
	rf := n
	for _, b := range nodes {
		if err := os.MkdirAll(filepath.Join(b.dir, "data"), 0o755); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		cfg := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
broker.session.timeout.ms=%d
`, b.id, strings.Join(voters, ","), b.port, b.ctrlPort, b.port, kraftSessionTimeout.Milliseconds()) + serverProps(filepath.Join(b.dir, "data"), rf) + c.opts.BrokerProps[b.id]
		props := filepath.Join(b.dir, "server.properties")
		if err := os.WriteFile(props, []byte(cfg), 0o644); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		if err := writeLog4j(b.dir, filepath.Join(b.dir, "server.log")); err != nil {
			return fmt.Errorf("testcluster: %w", err)
		}
		args := append(jvmArgs(c.lib, b.dir, c.opts.BrokerHeapMB), "kafka.Kafka", props)
		b.proc = newProcess(fmt.Sprintf("broker-%d", b.id), b.dir, c.opts.Detach, nil, args...)
		b.proc.appLog = filepath.Join(b.dir, "server.log")
		c.mu.Lock()
		c.brokers[b.id] = b
		c.mu.Unlock()
	}
	// Format every node's storage at once: each is a JVM of a few seconds.
	errs := make(chan error, len(nodes))
	for _, b := range nodes {
		go func() { errs <- c.formatStorage(b.dir, filepath.Join(b.dir, "server.properties")) }()
	}
	var all []error
	for range nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// formatStorage runs kafka-storage format on a node's configuration.
func (c *Cluster) formatStorage(dir, props string) error {
	args := append(jvmArgs(c.lib, dir, 256), storageToolClass, "format", "-t", c.clusterID, "-c", props)
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testcluster: kafka-storage format %s: %w\n%s", props, err, out.String())
	}
	return nil
}

// kraftStuckAfter is how long waitKRaft lets a running node stay out of
// the metadata the others serve before it restarts that node, once
// (Options.kraftStuckAfter overrides it).
const kraftStuckAfter = 45 * time.Second

// kraftSessionTimeout is broker.session.timeout.ms of a KRaft node: how
// long the controller waits for a node's heartbeat before it fences the
// node. Kafka's 9 s is missed when a dozen JVMs start on 2 cores.
const kraftSessionTimeout = 20 * time.Second

// waitKRaft waits until every running node serves metadata that lists
// all running nodes (the quorum formed and every broker registered with
// the controller and was unfenced). A node left out for kraftStuckAfter
// is restarted once, and the restart is kept in Notes: in CI, on a
// starved 2-core machine, the controller once fenced a node that then
// stayed fenced for the whole StartTimeout.
func (c *Cluster) waitKRaft(ctx context.Context) error {
	stuck := kraftStuckAfter
	if c.opts.kraftStuckAfter > 0 {
		stuck = c.opts.kraftStuckAfter
	}
	restarted := map[int32]bool{}
	for {
		sub, cancel := context.WithTimeout(ctx, stuck)
		unlisted, err := c.waitAllListed(sub)
		windowEnded := sub.Err() != nil
		cancel()
		if err == nil || ctx.Err() != nil || !windowEnded {
			return err // ready, out of time, or a node exited
		}
		for _, id := range unlisted {
			if restarted[id] {
				continue
			}
			restarted[id] = true
			b, _ := c.broker(id)
			c.note(fmt.Sprintf("KRaft node %d was not listed by the others after %v (%v); restarting it. Its log before:\n%s", id, stuck, err, b.proc.tail(60)))
			// Killed: a stuck node's controlled shutdown may hang too,
			// and a KRaft node recovers from a crash.
			if err := b.proc.stop(syscall.SIGKILL, 0); err != nil {
				return err
			}
			if err := b.proc.start(); err != nil {
				return err
			}
		}
	}
}

// waitAllListed waits until every running node lists all running nodes.
// When ctx ends first, it returns the running nodes the last answer of
// the node it was waiting for left out.
func (c *Cluster) waitAllListed(ctx context.Context) ([]int32, error) {
	var running []int32
	for _, id := range c.BrokerIDs() {
		if b, _ := c.broker(id); b.proc.running() {
			running = append(running, id)
		}
	}
	for _, id := range running {
		b, _ := c.broker(id)
		listed, err := c.waitServing(ctx, b, len(running))
		if err == nil {
			continue
		}
		var unlisted []int32
		for _, o := range running {
			if listed != nil && !listed[o] {
				unlisted = append(unlisted, o)
			}
		}
		return unlisted, err
	}
	return nil, nil
}

// waitServing waits until broker b answers a metadata request listing at
// least want brokers (0: any answer). It returns the brokers of the last
// answer (nil: none came). If it times out, the error carries the log
// tails of b and of every running node b does not list: a node the
// controller keeps fenced is seen in its own log, not in b's.
func (c *Cluster) waitServing(ctx context.Context, b *broker, want int) (map[int32]bool, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", b.port)
	var (
		last   error
		listed map[int32]bool
	)
	for {
		ids, err := metadataBrokers(addr)
		if err == nil {
			listed = ids
			if len(ids) < want {
				err = fmt.Errorf("metadata lists brokers %v, %d of %d", sortedIDs(ids), len(ids), want)
			}
		}
		if last = err; last == nil {
			return listed, nil
		}
		select {
		case <-b.proc.done():
			return listed, fmt.Errorf("testcluster: broker %d exited: %v\n%s", b.id, b.proc.exitError(), b.proc.tail(40))
		case <-ctx.Done():
			return listed, fmt.Errorf("testcluster: broker %d not serving on %s (%v): %w\n%s%s", b.id, addr, last, ctx.Err(), b.proc.tail(40), c.unlistedTails(b.id, listed))
		case <-time.After(200 * time.Millisecond): // polling: no event to wait on
		}
	}
}

// unlistedTails returns the log tails of the running nodes other than
// self that the last metadata answer did not list (nil: none came).
func (c *Cluster) unlistedTails(self int32, listed map[int32]bool) string {
	if listed == nil {
		return ""
	}
	var sb strings.Builder
	for _, id := range c.BrokerIDs() {
		o, _ := c.broker(id)
		if id == self || listed[id] || !o.proc.running() {
			continue
		}
		fmt.Fprintf(&sb, "\n=== broker %d, not listed:\n%s", id, o.proc.tail(60))
	}
	return sb.String()
}

// sortedIDs returns the keys of ids in order.
func sortedIDs(ids map[int32]bool) []int32 {
	out := make([]int32, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// metadataBrokers sends one metadata request to addr and returns the ids
// of the brokers it lists (a KRaft controller lists only unfenced ones).
func metadataBrokers(addr string) (map[int32]bool, error) {
	resp, err := askMetadata(addr, sarama.V2_1_0_0, &sarama.MetadataRequest{Version: 7})
	if err != nil {
		return nil, err
	}
	ids := make(map[int32]bool, len(resp.Brokers))
	for _, x := range resp.Brokers {
		ids[x.ID()] = true
	}
	return ids, nil
}

// ensureChroot creates zkgroup's chroot in ZooKeeper (in ZooKeeper mode
// the brokers create theirs).
func (c *Cluster) ensureChroot() error {
	if c.opts.Chroot == "" {
		return nil
	}
	conn, err := c.Connect(10 * time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Create(c.opts.Chroot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("testcluster: creating the chroot %s: %w", c.opts.Chroot, err)
	}
	return nil
}

// IsKRaft reports whether the cluster runs Kafka 4 in KRaft mode, with
// nothing registered in ZooKeeper.
func (c *Cluster) IsKRaft() bool { return c.opts.KRaft }

// Version returns the Kafka release the brokers run.
func (c *Cluster) Version() string {
	if c.opts.KRaft {
		return Kafka4Version
	}
	return KafkaVersion
}
