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
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-zookeeper/zk"
)

// storageToolClass formats a KRaft node's log directory
// (bin/kafka-storage.sh format).
const storageToolClass = "kafka.tools.StorageTool"

// newClusterID returns a random Kafka cluster id: 16 bytes, URL-safe
// base64 without padding, as kafka-storage random-uuid prints.
func newClusterID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
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
`, b.id, strings.Join(voters, ","), b.port, b.ctrlPort, b.port) + serverProps(filepath.Join(b.dir, "data"), rf)
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

// waitKRaft waits until every running node serves metadata that lists
// all running nodes (the quorum formed and every broker registered with
// the controller).
func (c *Cluster) waitKRaft(ctx context.Context) error {
	running := 0
	for _, id := range c.BrokerIDs() {
		if b, _ := c.broker(id); b.proc.running() {
			running++
		}
	}
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		if !b.proc.running() {
			continue
		}
		if err := c.waitServing(ctx, b, running); err != nil {
			return err
		}
	}
	return nil
}

// waitServing waits until broker b answers a metadata request listing at
// least want brokers (0: any answer).
func (c *Cluster) waitServing(ctx context.Context, b *broker, want int) error {
	addr := fmt.Sprintf("127.0.0.1:%d", b.port)
	var last error
	for {
		n, err := metadataBrokers(addr)
		if err == nil && n < want {
			err = fmt.Errorf("metadata lists %d of %d brokers", n, want)
		}
		if last = err; last == nil {
			return nil
		}
		select {
		case <-b.proc.done():
			return fmt.Errorf("testcluster: broker %d exited: %v\n%s", b.id, b.proc.exitError(), b.proc.tail(40))
		case <-ctx.Done():
			return fmt.Errorf("testcluster: broker %d not serving on %s (%v): %w\n%s", b.id, addr, last, ctx.Err(), b.proc.tail(40))
		case <-time.After(200 * time.Millisecond): // polling: no event to wait on
		}
	}
}

// metadataBrokers sends one metadata request to addr and returns how many
// brokers it lists.
func metadataBrokers(addr string) (int, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 5 * time.Second
	br := sarama.NewBroker(addr)
	if err := br.Open(cfg); err != nil {
		return 0, err
	}
	defer br.Close()
	resp, err := br.GetMetadata(&sarama.MetadataRequest{Version: 7})
	if err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
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
