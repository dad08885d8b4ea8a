package zkconn

import (
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestGoZooKeeperVersion: the module as built passes the check, and a
// build with another go-zookeeper, or a replaced one, is refused with
// ErrGoZooKeeperVersion naming what it was built with.
func TestGoZooKeeperVersion(t *testing.T) {
	if err := checkedVersion(); err != nil {
		t.Fatalf("this build: %v", err)
	}
	// go test records no dependencies in the test binary's build
	// information (programs built with go build do): go.mod is what this
	// build selects.
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if want := goZooKeeperModule + " " + TestedGoZooKeeper; !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %s: pin it, or check the shims against the new version and change TestedGoZooKeeper", want)
	}
	for _, tc := range []struct {
		name string
		mod  *debug.Module
		ok   bool
	}{
		{"tested", &debug.Module{Path: goZooKeeperModule, Version: TestedGoZooKeeper}, true},
		{"newer", &debug.Module{Path: goZooKeeperModule, Version: "v1.0.5"}, false},
		{"replaced", &debug.Module{Path: goZooKeeperModule, Version: TestedGoZooKeeper, Replace: &debug.Module{Path: "example.com/fork", Version: "v0.0.1"}}, false},
		{"absent", &debug.Module{Path: "example.com/other", Version: "v1.0.0"}, true},
	} {
		err := checkGoZooKeeper([]*debug.Module{tc.mod})
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, ErrGoZooKeeperVersion) {
			t.Errorf("%s: %v does not wrap ErrGoZooKeeperVersion", tc.name, err)
		}
	}
}
