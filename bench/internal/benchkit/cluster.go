// Package benchkit holds what the benchmarks of this module share: the
// cluster they run against, a producer at a fixed rate, a dialer that
// counts Kafka requests by API key, the ZooKeeper transaction counter, and
// small statistics and process figures.
package benchkit

import (
	"fmt"
	"os"
	"testing"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// ClusterEnv names the folder of a detached cluster (`make cluster-up`) to
// use instead of starting one for the benchmark binary.
const ClusterEnv = "ZKGROUP_BENCH_CLUSTER"

// Cluster returns the cluster of this benchmark binary: the detached one
// named by $ZKGROUP_BENCH_CLUSTER, or else the shared 3-broker test
// cluster, started on first use and stopped by testcluster.Main.
func Cluster(tb testing.TB) *testcluster.Cluster {
	tb.Helper()
	if dir := os.Getenv(ClusterEnv); dir != "" {
		st, err := testcluster.ReadState(dir)
		if err != nil {
			tb.Fatalf("%s=%s: %v", ClusterEnv, dir, err)
		}
		return testcluster.Attach(st)
	}
	return testcluster.Shared(tb)
}

// Say prints one line to stdout at once (the benchmark log keeps only a
// few lines and prints them at the end).
func Say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// UseLogAppendTime sets message.timestamp.type=LogAppendTime on topics,
// so that a record's timestamp is when the broker appended it: the time a
// consumer took to deliver it then holds nothing of the producer's delays.
// Call it before producing.
func UseLogAppendTime(addrs []string, topics []string) error {
	admin, err := sarama.NewClusterAdmin(addrs, testcluster.SaramaConfig())
	if err != nil {
		return fmt.Errorf("log append time: admin: %w", err)
	}
	defer admin.Close()
	v := "LogAppendTime"
	for _, t := range topics {
		entries := map[string]sarama.IncrementalAlterConfigsEntry{
			"message.timestamp.type": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
		}
		if err := admin.IncrementalAlterConfig(sarama.TopicResource, t, entries, false); err != nil {
			return fmt.Errorf("log append time: topic %q: %w", t, err)
		}
	}
	return nil
}
