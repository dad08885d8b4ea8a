package manager_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// TestValidateBounds: values that would panic in Join (a channel of
// MaxInt), run it out of memory (an errors buffer of 1<<40), or that
// ZooKeeper would silently cut are refused, naming the field.
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*manager.Config)
		field string // "" : valid
	}{
		{"defaults", func(*manager.Config) {}, ""},
		{"errors buffer MaxInt", func(c *manager.Config) { c.ErrorsBufferSize = math.MaxInt }, "ErrorsBufferSize"},
		{"errors buffer 1<<40", func(c *manager.Config) { c.ErrorsBufferSize = 1 << 40 }, "ErrorsBufferSize"},
		{"errors buffer max", func(c *manager.Config) { c.ErrorsBufferSize = manager.MaxErrorsBufferSize }, ""},
		{"errors buffer negative", func(c *manager.Config) { c.ErrorsBufferSize = -1 }, "ErrorsBufferSize"},
		{"reply cap negative", func(c *manager.Config) { c.ZooKeeperMaxReply = -1 }, "ZooKeeperMaxReply"},
		{"reply cap under min", func(c *manager.Config) { c.ZooKeeperMaxReply = manager.MinZooKeeperMaxReply - 1 }, "ZooKeeperMaxReply"},
		{"reply cap over max", func(c *manager.Config) { c.ZooKeeperMaxReply = manager.MaxZooKeeperMaxReply + 1 }, "ZooKeeperMaxReply"},
		{"reply cap min", func(c *manager.Config) { c.ZooKeeperMaxReply = manager.MinZooKeeperMaxReply }, ""},
		{"reply cap max", func(c *manager.Config) { c.ZooKeeperMaxReply = manager.MaxZooKeeperMaxReply }, ""},
		{"session 6s", func(c *manager.Config) { c.SessionTimeout = 6 * time.Second }, ""},
		{"session 2m", func(c *manager.Config) { c.SessionTimeout = manager.MaxSessionTimeout }, ""},
		{"session 5s", func(c *manager.Config) { c.SessionTimeout = 5 * time.Second }, "SessionTimeout"},
		{"session 10m", func(c *manager.Config) { c.SessionTimeout = 10 * time.Minute }, "SessionTimeout"},
		{"brokers ok", func(c *manager.Config) { c.Brokers = []string{"k1:9092", "[::1]:9093", "10.0.0.1:1"} }, ""},
		{"broker empty", func(c *manager.Config) { c.Brokers = []string{""} }, "Brokers[0]"},
		{"broker no port", func(c *manager.Config) { c.Brokers = []string{"k1:9092", "k2"} }, "Brokers[1]"},
		{"broker no host", func(c *manager.Config) { c.Brokers = []string{":9092"} }, "Brokers[0]"},
		{"broker port 0", func(c *manager.Config) { c.Brokers = []string{"k1:0"} }, "Brokers[0]"},
		{"broker port 65536", func(c *manager.Config) { c.Brokers = []string{"k1:65536"} }, "Brokers[0]"},
		{"broker port word", func(c *manager.Config) { c.Brokers = []string{"k1:kafka"} }, "Brokers[0]"},
		{"broker URL", func(c *manager.Config) { c.Brokers = []string{"PLAINTEXT://k1:9092"} }, "Brokers[0]"},
		{"kafka unreachable 0", func(c *manager.Config) { c.KafkaUnreachableTimeout = 0 }, ""},
		{"kafka unreachable min", func(c *manager.Config) { c.KafkaUnreachableTimeout = manager.MinKafkaUnreachableTimeout }, ""},
		{"kafka unreachable max", func(c *manager.Config) { c.KafkaUnreachableTimeout = manager.MaxKafkaUnreachableTimeout }, ""},
		{"kafka unreachable 1s", func(c *manager.Config) { c.KafkaUnreachableTimeout = time.Second }, "KafkaUnreachableTimeout"},
		{"kafka unreachable negative", func(c *manager.Config) { c.KafkaUnreachableTimeout = -time.Second }, "KafkaUnreachableTimeout"},
		{"kafka unreachable 1h", func(c *manager.Config) { c.KafkaUnreachableTimeout = time.Hour }, "KafkaUnreachableTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := manager.NewConfig()
			tc.mod(cfg)
			err := cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, manager.ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

// TestValidateStrategy: the strategy must be set and carry a name that can
// travel in a registration; custom strategies with such a name pass.
func TestValidateStrategy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     assign.Strategy
		valid bool
	}{
		{"nil", nil, false},
		{"sticky", assign.Sticky(), true},
		{"custom", assign.Func("mine", assign.Range().Assign), true},
		{"unnamed", assign.Func("", assign.Range().Assign), false},
		{"name with a space", assign.Func("my own", assign.Range().Assign), false},
	} {
		cfg := manager.NewConfig()
		cfg.Strategy = tc.s
		err := cfg.Validate()
		if tc.valid != (err == nil) {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
		if err != nil && (!errors.Is(err, manager.ErrConfig) || !strings.Contains(err.Error(), "Strategy:")) {
			t.Errorf("%s: error %q is not ErrConfig naming Strategy", tc.name, err)
		}
	}
}
