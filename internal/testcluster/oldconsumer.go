package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// OldConsumerClass is the main class of Kafka011Version's console
// consumer, which runs the old high-level consumer
// (ZookeeperConsumerConnector) when given a ZooKeeper connect string.
const OldConsumerClass = "kafka.tools.ConsoleConsumer"

// ErrOldConsumer is wrapped by OldConsumer errors: the JVM failed to
// start, or exited before it was stopped.
var ErrOldConsumer = errors.New("testcluster: old high-level consumer")

// OldConsumerConfig configures an old high-level consumer.
type OldConsumerConfig struct {
	Group, Topic string
	// Strategy is partition.assignment.strategy: "range" (default) or
	// "roundrobin".
	Strategy string
	// OffsetStorage is offsets.storage: "zookeeper" (default) or
	// "kafka"; DualCommit sets dual.commit.enabled (commits to both, and
	// reads the larger of the two offsets).
	OffsetStorage string
	DualCommit    bool
	// FromBeginning starts partitions without a committed offset at the
	// oldest message. The console consumer maps it to auto.offset.reset
	// (smallest, else largest, whatever the properties say) and refuses
	// to start with it once the group has an offsets node in ZooKeeper:
	// set it for the first member of a new group only.
	FromBeginning bool
	// Properties are further consumer properties (they win over the
	// ones above, except auto.offset.reset, see FromBeginning).
	Properties map[string]string
}

// OldConsumer is a running kafka.tools.ConsoleConsumer of Kafka011Version
// (a JVM of its own) in a ZooKeeper-coordinated group. Each value it
// prints goes to the OnValue function given to StartOldConsumer. Safe for
// concurrent use.
type OldConsumer struct {
	name    string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the JVM has exited and stdout is read
	exitErr error         // set before exited is closed
	stopped atomic.Bool
	lines   atomic.Int64
}

var oldConsumerSeq atomic.Int64

// StartOldConsumer starts a console consumer of Kafka011Version against
// c's ZooKeeper (with the chroot), fetching its jars on first use. Every
// line it prints (a message value) is passed to onValue, from one
// goroutine, in the order printed. It returns once the JVM is started,
// not once it joined the group: wait for its registration under
// /consumers/<group>/ids. The JVM is killed if the test binary dies.
func (c *Cluster) StartOldConsumer(cfg OldConsumerConfig, onValue func(string)) (*OldConsumer, error) {
	fr, err := FetchKafka011()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("oldconsumer-%d", oldConsumerSeq.Add(1))
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOldConsumer, err)
	}
	if err := writeLog4j(dir, filepath.Join(dir, "consumer.log")); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOldConsumer, err)
	}
	props := map[string]string{
		"group.id":                      cfg.Group,
		"partition.assignment.strategy": or(cfg.Strategy, "range"),
		"offsets.storage":               or(cfg.OffsetStorage, "zookeeper"),
		"dual.commit.enabled":           fmt.Sprint(cfg.DualCommit),
		"auto.commit.enable":            "true",
		"auto.commit.interval.ms":       "1000",
		// A loaded test machine stalls the JVM for seconds at times;
		// the defaults (6 s, 4 retries 2 s apart) give up too soon.
		"zookeeper.session.timeout.ms": "15000",
		"rebalance.backoff.ms":         "1000",
		"rebalance.max.retries":        "20",
	}
	for k, v := range cfg.Properties {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	propsPath := filepath.Join(dir, "consumer.properties")
	if err := os.WriteFile(propsPath, []byte(sb.String()), 0o644); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOldConsumer, err)
	}
	args := append(jvmArgs(fr.LibDir, dir, 256), OldConsumerClass,
		"--zookeeper", c.ZooKeeperConnect(), "--topic", cfg.Topic, "--consumer.config", propsPath)
	if cfg.FromBeginning {
		args = append(args, "--from-beginning")
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOldConsumer, err)
	}
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	// As for the cluster's JVMs: a process group of its own, killed when
	// the thread that started it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		stderr.Close()
		return nil, fmt.Errorf("%w: %w", ErrOldConsumer, err)
	}
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return nil, fmt.Errorf("%w: start: %w", ErrOldConsumer, err)
	}
	o := &OldConsumer{name: name, dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			o.lines.Add(1)
			onValue(sc.Text())
		}
		o.exitErr = cmd.Wait()
		stderr.Close()
		close(o.exited)
	}()
	return o, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Pid returns the JVM's process id.
func (o *OldConsumer) Pid() int { return o.cmd.Process.Pid }

// Printed returns how many values the consumer printed so far.
func (o *OldConsumer) Printed() int64 { return o.lines.Load() }

// Exited returns a channel closed once the JVM has exited and every value
// it printed was passed on.
func (o *OldConsumer) Exited() <-chan struct{} { return o.exited }

// Err returns why the JVM exited when it exited without being stopped,
// else nil.
func (o *OldConsumer) Err() error {
	select {
	case <-o.exited:
		if o.stopped.Load() {
			return nil
		}
		return fmt.Errorf("%w: %s exited unasked (%v):\n%s", ErrOldConsumer, o.name, o.exitErr, o.Tail(30))
	default:
		return nil
	}
}

// Stop sends SIGTERM, which runs the consumer's shutdown hook (it commits
// the offsets of what it printed, then leaves the group), and waits up to
// grace for the exit, then kills it. It returns once the JVM is gone and
// every value it printed was passed on; an error when it had to be
// killed. Idempotent.
func (o *OldConsumer) Stop(grace time.Duration) error {
	return o.signal(syscall.SIGTERM, grace)
}

// Kill kills the JVM with SIGKILL (a crash: no commit; its registration
// stays until its ZooKeeper session expires) and waits for its exit.
func (o *OldConsumer) Kill() error { return o.signal(syscall.SIGKILL, 0) }

func (o *OldConsumer) signal(sig syscall.Signal, grace time.Duration) error {
	o.stopped.Store(true)
	select {
	case <-o.exited:
		return nil
	default:
	}
	pgid := o.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	if sig != syscall.SIGKILL {
		select {
		case <-o.exited:
			return nil
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	select {
	case <-o.exited:
		if sig != syscall.SIGKILL {
			return fmt.Errorf("%w: %s did not stop within %v after SIGTERM: killed", ErrOldConsumer, o.name, grace)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%w: %s (pid %d) did not exit after SIGKILL", ErrOldConsumer, o.name, pgid)
	}
}

// Rebalances counts the rebalances the consumer completed so far, from
// its log. Each one, and its shutdown, may hand one message out twice:
// the old consumer's iterator records a message as consumed only after
// it returned it, so a commit made meanwhile (by the rebalance or the
// shutdown hook, on another thread) leaves it uncommitted and the next
// owner fetches it again.
func (o *OldConsumer) Rebalances() int {
	b, _ := os.ReadFile(filepath.Join(o.dir, "consumer.log"))
	return strings.Count(string(b), "end rebalancing consumer")
}

// Tail returns the last n lines of the consumer's log and stderr, for
// failure messages.
func (o *OldConsumer) Tail(n int) string {
	var lines []string
	for _, f := range []string{"consumer.log", "stderr"} {
		b, _ := os.ReadFile(filepath.Join(o.dir, f))
		if s := strings.TrimRight(string(b), "\n"); s != "" {
			lines = append(lines, strings.Split(s, "\n")...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// OldConsumer starts an old high-level consumer for a test (see
// StartOldConsumer) and stops it when the test ends, printing its log
// tail if the test failed. Without java or mvn it skips tb, or fails it
// in CI, like the cluster helpers.
func (c *Cluster) OldConsumer(tb testing.TB, cfg OldConsumerConfig, onValue func(string)) *OldConsumer {
	tb.Helper()
	o, err := c.StartOldConsumer(cfg, onValue)
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("%s (group %s) log tail:\n%s", o.name, cfg.Group, o.Tail(40))
		}
		if err := o.Stop(20 * time.Second); err != nil {
			tb.Logf("stopping %s: %v", o.name, err)
		}
	})
	return o
}
