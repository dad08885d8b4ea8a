package metadata_test

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/internal/metadata"
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

// ExampleOpenSession shows the usual loop over the member's session; it
// needs a cluster, so it only compiles.
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
	for range w.Changes() {
		s := w.Snapshot()
		for _, topic := range s.Selected() {
			fmt.Println(topic, len(s.Topics[topic]), "partitions")
		}
	}
}
