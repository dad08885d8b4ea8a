package zkconn

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// goZooKeeperModule is the module whose internals the connection shims
// (side.go, gate.go, replycap.go, handshake.go) rely on: its xid
// numbering, one Write per request, the timing of setWatches and its
// answers to a failed write. TestedGoZooKeeper is the version they were
// written and tested against. A build with another version, or a
// replaced one, runs its sessions without them: see plainOff.
const (
	goZooKeeperModule = "github.com/go-zookeeper/zk"
	TestedGoZooKeeper = "v1.0.4"
)

// plainOff is what a session run on an untested go-zookeeper does
// without, as Dial logs it.
const plainOff = "multiRead batching (GetMany reads each node with one getData), " +
	"the reply cap's naming of the read (a reply over MaxReply is go-zookeeper's own failure, each time the node is read), " +
	"the reconnect gate (go-zookeeper v1.0.4's setWatches data race, if the version has it), " +
	"the connect deadline cap, and the half-close after the close request"

// builtDeps is the modules this program was built with; nil without
// build information (a stripped or unusual build: nothing to check).
var builtDeps = sync.OnceValue(func() []*debug.Module {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info.Deps
})

// checkGoZooKeeper finds the go-zookeeper module among deps, as built.
// It returns what was found ("v1.0.5", or "v1.0.4 => example.com/fork
// v0.0.1" for a replace) and why the connection shims must stay off for
// it, or "" when they fit it (the tested version, or no go-zookeeper in
// deps).
func checkGoZooKeeper(deps []*debug.Module) (found, why string) {
	for _, m := range deps {
		if m.Path != goZooKeeperModule {
			continue
		}
		if m.Replace != nil {
			return fmt.Sprintf("%s => %s %s", m.Version, m.Replace.Path, m.Replace.Version),
				fmt.Sprintf("%s is replaced; the connection shims were tested with %s %s as published", goZooKeeperModule, goZooKeeperModule, TestedGoZooKeeper)
		}
		if m.Version != TestedGoZooKeeper {
			return m.Version, fmt.Sprintf("the connection shims rely on the internals of %s %s (pin it in go.mod to keep them)", goZooKeeperModule, TestedGoZooKeeper)
		}
		return m.Version, ""
	}
	return "", ""
}
