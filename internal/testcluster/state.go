package testcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// State describes a detached cluster (started by `zkcluster up`) so that a
// later process can print its addresses or stop it.
type State struct {
	KafkaVersion     string   `json:"kafka_version"`
	ZooKeeperVersion string   `json:"zookeeper_version"`
	ZooKeeper        string   `json:"zookeeper"`         // host:port (an ensemble: each, comma-separated), no chroot
	ZooKeeperConnect string   `json:"zookeeper_connect"` // with chroot, for zkgroup
	Brokers          []string `json:"brokers"`
	Dir              string   `json:"dir"`
	ZooKeeperPID     int      `json:"zookeeper_pid"`
	// ZooKeeperPIDs are every server's pids (an ensemble only).
	ZooKeeperPIDs []int  `json:"zookeeper_pids,omitempty"`
	BrokerPIDs    []int  `json:"broker_pids"`
	LibDir        string `json:"lib_dir"`
	// ZooKeeperLibDir holds ZooKeeper's jars when they differ from
	// LibDir's (KRaft); KRaft says the brokers run Kafka 4 in KRaft mode.
	ZooKeeperLibDir string `json:"zookeeper_lib_dir,omitempty"`
	KRaft           bool   `json:"kraft,omitempty"`
}

// StateFile is the name of the state file inside a detached cluster's folder.
const StateFile = "cluster.json"

// State returns the cluster's description.
func (c *Cluster) State() State {
	s := State{
		KafkaVersion:     c.Version(),
		ZooKeeperVersion: ZooKeeperVersion(c.zkLib),
		ZooKeeper:        c.ZooKeeperAddr(),
		ZooKeeperConnect: c.ZooKeeperConnect(),
		Brokers:          c.Addrs(),
		Dir:              c.dir,
		ZooKeeperPID:     c.zks[0].proc.pid(),
		LibDir:           c.lib,
		KRaft:            c.opts.KRaft,
	}
	if c.zkLib != c.lib {
		s.ZooKeeperLibDir = c.zkLib
	}
	for _, id := range c.BrokerIDs() {
		b, _ := c.broker(id)
		if pid := b.proc.pid(); pid != 0 {
			s.BrokerPIDs = append(s.BrokerPIDs, pid)
		}
	}
	if len(c.zks) > 1 {
		for _, z := range c.zks {
			if pid := z.proc.pid(); pid != 0 {
				s.ZooKeeperPIDs = append(s.ZooKeeperPIDs, pid)
			}
		}
	}
	return s
}

// WriteState writes the state file into the cluster's folder.
func (c *Cluster) WriteState() error {
	b, err := json.MarshalIndent(c.State(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, StateFile), append(b, '\n'), 0o644)
}

// ReadState reads the state file of a detached cluster in dir.
func ReadState(dir string) (State, error) {
	var s State
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return s, fmt.Errorf("testcluster: no cluster in %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("testcluster: %s: %w", filepath.Join(dir, StateFile), err)
	}
	return s, nil
}

// alive reports whether pid runs a java process (a pid may have been reused).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return false
	}
	return len(comm) >= 4 && string(comm[:4]) == "java"
}

// stopPID sends SIGTERM to pid's process group, waits up to grace, then
// SIGKILL, and waits for it to be gone.
func stopPID(pid int, grace time.Duration) error {
	if !alive(pid) {
		return nil
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling another process's exit: no event to wait on
	}
	if alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for i := 0; alive(pid) && i < 300; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			return fmt.Errorf("testcluster: pid %d survived SIGKILL", pid)
		}
	}
	return nil
}

// StopDetached stops the cluster described by the state file in dir:
// brokers first (SIGTERM, concurrently), then the ZooKeeper servers; then
// removes dir.
func StopDetached(dir string) error {
	s, err := ReadState(dir)
	if err != nil {
		return err
	}
	errc := make(chan error, len(s.BrokerPIDs))
	for _, pid := range s.BrokerPIDs {
		go func(pid int) { errc <- stopPID(pid, 20*time.Second) }(pid)
	}
	var errs []error
	for range s.BrokerPIDs {
		errs = append(errs, <-errc)
	}
	zkPIDs := []int{s.ZooKeeperPID}
	for _, pid := range s.ZooKeeperPIDs {
		if pid != s.ZooKeeperPID {
			zkPIDs = append(zkPIDs, pid)
		}
	}
	for _, pid := range zkPIDs {
		errs = append(errs, stopPID(pid, 10*time.Second))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
