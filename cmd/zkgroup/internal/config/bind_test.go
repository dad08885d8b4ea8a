package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/partition"
)

// TestPartitionBinding: the partition keys land in the library's own
// partition.Config, which reaches manager.Config whole: the settings the
// daemon has no key for keep the library's defaults.
func TestPartitionBinding(t *testing.T) {
	c := load(t, validYAML+"  initial: newest\n", map[string]string{"ZKGROUP_PARTITION_DRAIN_TIMEOUT": "3s"})
	m := consumer(t, c)
	want := partition.NewConfig()
	want.MaxUnacked, want.CommitInterval, want.DrainTimeout, want.Initial = 50, 250*time.Millisecond, 3*time.Second, partition.InitialNewest
	if m.Partition != want {
		t.Errorf("manager partition config %+v, want %+v", m.Partition, want)
	}
	if got := c.Origin("partition.initial"); got != "zkgroup.yaml line 7" {
		t.Errorf("origin %q", got)
	}
	b, err := json.Marshal(c.Partition)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"max_unacked":50,"commit_interval":"250ms","drain_timeout":"3s","initial":"newest"}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}

// TestPartitionBindingErrors: a bound field's YAML errors read as any
// other field's: the daemon's key, and the plain type, not the library's.
func TestPartitionBindingErrors(t *testing.T) {
	for yml, want := range map[string]string{
		"partition:\n  initial: [a]\n":       "line 2: partition.initial: cannot unmarshal !!seq into string",
		"partition:\n  max_unacked: x\n":     "line 2: partition.max_unacked: cannot unmarshal !!str `x` into int",
		"partition:\n  drain_timeout: 5\n":   `line 2: partition.drain_timeout: "5" is not a duration`,
		"partition:\n  commit_timeout: 5s\n": `unknown key "commit_timeout"`,
		"partition:\n  - max_unacked\n":      "line 2: partition: want a mapping of keys, got a YAML sequence",
		"partition:\n  max_unacked: 1.5\n":   "line 2: partition.max_unacked: want a whole number",
	} {
		_, err := Load(Sources{File: writeFile(t, yml)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
}
