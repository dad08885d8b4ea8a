package zkconn

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestGoZooKeeperVersion: go.mod pins the tested go-zookeeper, and
// checkGoZooKeeper keeps the shims for it (or for a build without it)
// and turns them off, naming what it found, for another version or a
// replaced one.
func TestGoZooKeeperVersion(t *testing.T) {
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
	if _, why := checkGoZooKeeper(builtDeps()); why != "" {
		t.Errorf("this build: %s", why)
	}
	for _, tc := range []struct {
		name  string
		mod   *debug.Module
		found string
		shims bool
	}{
		{"tested", &debug.Module{Path: goZooKeeperModule, Version: TestedGoZooKeeper}, TestedGoZooKeeper, true},
		{"newer", &debug.Module{Path: goZooKeeperModule, Version: "v1.0.5"}, "v1.0.5", false},
		{"replaced", &debug.Module{Path: goZooKeeperModule, Version: TestedGoZooKeeper, Replace: &debug.Module{Path: "example.com/fork", Version: "v0.0.1"}},
			TestedGoZooKeeper + " => example.com/fork v0.0.1", false},
		{"absent", &debug.Module{Path: "example.com/other", Version: "v1.0.0"}, "", true},
	} {
		found, why := checkGoZooKeeper([]*debug.Module{tc.mod})
		if found != tc.found || (why == "") != tc.shims {
			t.Errorf("%s: found %q, why %q; want found %q, shims %v", tc.name, found, why, tc.found, tc.shims)
		}
	}
}
