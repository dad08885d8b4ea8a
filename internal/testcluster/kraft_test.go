package testcluster

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKRaftRestartsStuckNode: a KRaft node that never joins (its JVM is
// stopped with SIGSTOP as soon as it starts) is restarted once after the
// stuck window, the start then succeeds with every node serving metadata
// that lists all of them, and Notes says what was done.
func TestKRaftRestartsStuckNode(t *testing.T) {
	if testing.Short() && !InCI() {
		t.Skip("integration test: skipped with -short")
	}
	t.Parallel()
	const stuck int32 = 3
	hooks := func(o *Options) {
		// Long enough for the two running nodes to be listed on a busy
		// 2-core machine (at 10 s, CI once saw node 2 restarted too).
		o.kraftStuckAfter = 30 * time.Second
		o.afterStart = func(c *Cluster) {
			b, _ := c.broker(stuck)
			if err := syscall.Kill(-b.proc.pid(), syscall.SIGSTOP); err != nil {
				t.Errorf("SIGSTOP node %d: %v", stuck, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Launch(ctx, Brokers(3), KRaft(), hooks)
	if err != nil {
		unavailable(t, err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
	}()
	notes := c.Notes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "KRaft node 3 was not listed") {
		t.Fatalf("notes: want one restart of node 3, got %d: %q", len(notes), notes)
	}
	for _, id := range c.BrokerIDs() {
		ids, err := metadataBrokers(c.BrokerAddr(id))
		if err != nil || len(ids) != 3 {
			t.Errorf("node %d: metadata lists %v (%v), want all 3 nodes", id, sortedIDs(ids), err)
		}
	}
}

// TestNewClusterID: ids are 22 characters of URL-safe base64 and never
// start with '-' (the storage tool would take one for an option), over
// enough draws that a leading '-' (1 in 64) would have come many times.
func TestNewClusterID(t *testing.T) {
	seen := map[string]bool{}
	for range 5000 {
		id := newClusterID()
		if len(id) != 22 || id[0] == '-' || strings.ContainsAny(id, "+/=") {
			t.Fatalf("cluster id %q", id)
		}
		seen[id] = true
	}
	if len(seen) != 5000 {
		t.Errorf("%d distinct ids of 5000", len(seen))
	}
}
