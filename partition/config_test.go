package partition_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/partition"
)

// TestConfigValidate: the defaults are valid and as documented; each bad
// field is refused with an error wrapping zkgroup.ErrConfig that names it.
func TestConfigValidate(t *testing.T) {
	def := partition.NewConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	want := partition.Config{MaxUnacked: 10000, CommitInterval: 5 * time.Second, DrainTimeout: 10 * time.Second,
		CommitTimeout: 10 * time.Second, Initial: partition.InitialOldest,
		RetryBackoff: 100 * time.Millisecond, RetryBackoffMax: 5 * time.Second}
	if def != want {
		t.Errorf("defaults %+v, want %+v", def, want)
	}
	for field, edit := range map[string]func(*partition.Config){
		"MaxUnacked":      func(c *partition.Config) { c.MaxUnacked = 0 },
		"CommitInterval":  func(c *partition.Config) { c.CommitInterval = 0 },
		"DrainTimeout":    func(c *partition.Config) { c.DrainTimeout = -time.Second },
		"CommitTimeout":   func(c *partition.Config) { c.CommitTimeout = 0 },
		"Initial":         func(c *partition.Config) { c.Initial = "latest" },
		"RetryBackoff":    func(c *partition.Config) { c.RetryBackoff = 0 },
		"RetryBackoffMax": func(c *partition.Config) { c.RetryBackoffMax = c.RetryBackoff / 2 },
	} {
		c := partition.NewConfig()
		edit(&c)
		err := c.Validate()
		if !errors.Is(err, zkgroup.ErrConfig) || !strings.Contains(err.Error(), ": "+field+": ") {
			t.Errorf("bad %s: %v; want zkgroup.ErrConfig naming it", field, err)
		}
	}
	c := partition.NewConfig()
	c.Initial, c.DrainTimeout = partition.InitialNewest, 0
	if err := c.Validate(); err != nil {
		t.Errorf("newest, no drain wait: %v", err)
	}
}
