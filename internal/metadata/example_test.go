package metadata_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

func ExampleConfig_Validate() {
	cfg := metadata.NewConfig()
	fmt.Println(cfg.Validate())
	cfg.Resync = 500 * time.Millisecond
	fmt.Println(cfg.Validate())
	// Output:
	// <nil>
	// metadata: invalid config: Resync 500ms: must be at least 1s
}

func ExampleSnapshot_Selected() {
	s := metadata.Snapshot{Topics: map[string][]metadata.Partition{
		"orders":   {{Topic: "orders", ID: 0, Leader: 1, Replicas: []int32{1, 2}}},
		"payments": {{Topic: "payments", ID: 0, Leader: 2, Replicas: []int32{2, 1}}},
		"audit":    nil, // not selected by the filter
	}, Version: 3}
	fmt.Println(s.Selected(), s.Version)
	// Output: [orders payments] 3
}

// printSelected prints the selected topics and their partition counts at
// every change of w's view, until ctx ends.
func printSelected(ctx context.Context, w *metadata.Watcher, out io.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.Changes():
		}
		s := w.Snapshot()
		for _, topic := range s.Selected() {
			fmt.Fprintln(out, topic, len(s.Topics[topic]), "partitions")
		}
	}
}

// The usual loop (printSelected) over a Watcher of the topics named
// "orders.*" on the member's session. No Output: it needs ZooKeeper;
// TestExampleOpenSession runs printSelected against the test cluster.
func ExampleOpenSession() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := zkconn.Dial(zkconn.Config{Servers: []string{"127.0.0.1:2181"}, Chroot: "/kafka", SessionTimeout: 10 * time.Second, Logger: logger})
	if err != nil {
		logger.Error("dial", "error", err)
		return
	}
	defer s.Close()
	w, err := metadata.OpenSession(s, func(t string) bool { return strings.HasPrefix(t, "orders.") }, metadata.NewConfig(), logger)
	if err != nil {
		logger.Error("open", "error", err)
		return
	}
	defer w.Close()
	printSelected(context.Background(), w, os.Stdout)
}

// TestExampleOpenSession runs ExampleOpenSession's loop on a topic created while it
// runs: it prints the topic with its partition count, and returns when
// its context ends.
func TestExampleOpenSession(t *testing.T) {
	c := testcluster.Start(t, testcluster.Brokers(1))
	topic := testcluster.Name(t, "orders")
	w := open(t, c, only(topic))
	var out testcluster.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		printSelected(ctx, w, &out)
	}()
	testcluster.MustCreateTopic(t, c, topic, 2, 1)
	want := topic + " 2 partitions\n"
	testcluster.Await(t, 90*time.Second, 10*time.Millisecond, "the loop to print "+want, func() bool {
		return strings.Contains(out.String(), want)
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not return when its context ended")
	}
}
