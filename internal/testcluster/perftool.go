package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ProducerPerformanceClass is the main class of Kafka's
// kafka-producer-perf-test tool in the kafka-tools jar of KafkaVersion.
const ProducerPerformanceClass = "org.apache.kafka.tools.ProducerPerformance"

// ErrPerfTool is wrapped by ProducerPerfTest errors: the tool failed or did
// not report every record sent.
var ErrPerfTool = errors.New("testcluster: kafka-producer-perf-test")

// ProducerPerfTest runs Kafka's own `kafka-producer-perf-test` (a JVM: java
// -cp LibDir/* ProducerPerformanceClass) against the running brokers: it
// writes records records of size bytes each (random payloads, no key) to
// topic, unthrottled, with the producer's compression.type set to
// compression (none, gzip, snappy, lz4 or zstd) and acks=all, and returns
// once the tool reported all of them sent. Records spread over the
// topic's partitions as Kafka's producer chooses. It blocks while the JVM
// runs (a few seconds) and until ctx is done; safe for concurrent use.
func (c *Cluster) ProducerPerfTest(ctx context.Context, topic string, records, size int, compression string) error {
	addrs := c.Addrs()
	if len(addrs) == 0 {
		return fmt.Errorf("%w: no running broker", ErrPerfTool)
	}
	if err := writeToolLog4j(c.dir); err != nil {
		return fmt.Errorf("%w: %w", ErrPerfTool, err)
	}
	args := append(toolArgs(c.LibDir(), c.dir), ProducerPerformanceClass,
		"--topic", topic, "--num-records", strconv.Itoa(records), "--record-size", strconv.Itoa(size),
		"--throughput", "-1", "--producer-props",
		"bootstrap.servers="+strings.Join(addrs, ","), "compression.type="+compression,
		"acks=all", "linger.ms=5", "batch.size=65536")
	cmd := exec.CommandContext(ctx, "java", args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: topic %q, compression %s: %w\nstdout:\n%s\nstderr:\n%s",
			ErrPerfTool, topic, compression, err, stdout.String(), stderr.String())
	}
	// The last line sums the run: "N records sent, ...".
	want := strconv.Itoa(records) + " records sent"
	if !strings.Contains(stdout.String(), want) {
		return fmt.Errorf("%w: topic %q, compression %s: no %q in its output:\n%s\nstderr:\n%s",
			ErrPerfTool, topic, compression, want, stdout.String(), stderr.String())
	}
	return nil
}
