package manager_test

import (
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/manager"
)

// TestGoroutinesPerPartition: an owned partition costs at most one
// goroutine (its slot, which claims it, runs its partition manager and
// releases it; the fetch runs none per partition). One member owns a
// topic of few partitions, then a second topic of many more: the
// goroutines it gains with them are at most one per partition, plus a
// few that do not grow with the partitions (a topic's watch, say). The
// member's other goroutines (its loops, the ZooKeeper client, the fetch
// loops and sarama's goroutine per broker connection) are on both sides
// of the difference: before it is taken, the member has read, fetched
// and committed messages of every partition of the first topic, which
// has partitions on every broker. Two goroutines per partition, as before
// the slot ran the partition manager itself, would be 100 more.
func TestGoroutinesPerPartition(t *testing.T) {
	c := testcluster.Shared(t)
	base, group := testcluster.Name(t, "t"), testcluster.Name(t, "g")
	const few, many, slack, per = 6, 100, 10, 3
	createTopic(t, c, base+"-a", few, 1)
	testcluster.MustProduce(t, c, base+"-a", few, 0, few*per)
	sub, err := manager.Whitelist(regexp.QuoteMeta(base) + "-.*") // whole names
	if err != nil {
		t.Fatal(err)
	}
	in := join(t, c, group, sub, "m", newRecorder(t), joinOpts{})
	defer in.close(t)
	await(t, time.Minute, "the first topic owned, read and committed", func() bool {
		if !balanced(few, in) {
			return false
		}
		for _, p := range in.c.Stats().Partitions {
			if p.Committed != per {
				return false
			}
		}
		return true
	})
	g1 := runtime.NumGoroutine()

	createTopic(t, c, base+"-b", many, 1)
	await(t, time.Minute, "both topics owned", func() bool { return balanced(few+many, in) })
	var added int
	testcluster.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		added = runtime.NumGoroutine() - g1
		return added <= many+slack
	})
	t.Logf("%d goroutines with %d partitions, %d more with %d more partitions (%.2f per partition)",
		g1, few, added, many, float64(added)/many)
	if added > many+slack {
		var sb strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
		t.Errorf("%d more goroutines for %d more owned partitions, want at most %d (one per partition + %d); goroutines:\n%s",
			added, many, many+slack, slack, sb.String())
	}
}
