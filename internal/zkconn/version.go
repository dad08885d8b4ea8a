package zkconn

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// goZooKeeperModule is the module whose internals the connection shims
// (side.go, gate.go, replycap.go, handshake.go) rely on: its xid
// numbering, one Write per request, the timing of setWatches and its
// answers to a failed write. TestedGoZooKeeper is the version they were
// written and tested against.
const (
	goZooKeeperModule = "github.com/go-zookeeper/zk"
	TestedGoZooKeeper = "v1.0.4"
)

// ErrGoZooKeeperVersion: the program was built with a go-zookeeper other
// than TestedGoZooKeeper (a newer one selected by another dependency, or a
// replace), whose internals the connection shims were not checked
// against. Dial refuses it rather than run them unchecked.
var ErrGoZooKeeperVersion = errors.New("zkconn: untested go-zookeeper version")

var checkedVersion = sync.OnceValue(func() error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil // no build information (a stripped or unusual build): nothing to check
	}
	return checkGoZooKeeper(info.Deps)
})

// checkGoZooKeeper checks the go-zookeeper module among deps, as built.
func checkGoZooKeeper(deps []*debug.Module) error {
	for _, m := range deps {
		if m.Path != goZooKeeperModule {
			continue
		}
		if m.Replace != nil {
			return fmt.Errorf("%w: %s is replaced by %s %s; zkgroup needs %s %s as it is",
				ErrGoZooKeeperVersion, goZooKeeperModule, m.Replace.Path, m.Replace.Version, goZooKeeperModule, TestedGoZooKeeper)
		}
		if m.Version != TestedGoZooKeeper {
			return fmt.Errorf("%w: built with %s %s; zkgroup's connection layer relies on the internals of %s (pin it in go.mod)",
				ErrGoZooKeeperVersion, goZooKeeperModule, m.Version, TestedGoZooKeeper)
		}
	}
	return nil
}
