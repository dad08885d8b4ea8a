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

// TestGoroutinesPerPartition: an idle owned partition costs no
// goroutine (its run parks; partition.Manager.Step), and one that had
// messages to hand out gives its goroutine back once they are read. One
// member owns a topic of few partitions, then a second topic of many
// more, empty: the goroutines it gains with them are a few that do not
// grow with the partitions (a topic's watch, say). Then every partition
// of the second topic gets messages, which the member reads and
// commits: its goroutines come back to where they were. The member's
// other goroutines (its loops, the ZooKeeper client, the fetch loops and
// sarama's goroutine per broker connection) are on both sides of the
// difference: before it is taken, the member has read, fetched and
// committed messages of every partition of the first topic, which has
// partitions on every broker. A goroutine per partition, as before the
// runs parked, would be 100 more.
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
	committed := func(n int) func() bool {
		return func() bool {
			st := in.c.Stats().Partitions
			if len(st) != n {
				return false
			}
			for _, p := range st {
				if p.Committed != per {
					return false
				}
			}
			return true
		}
	}
	await(t, time.Minute, "the first topic owned, read and committed", func() bool {
		return balanced(few, in) && committed(few)()
	})
	g1 := runtime.NumGoroutine()
	added := func() int {
		var n int
		testcluster.Poll(30*time.Second, 10*time.Millisecond, func() bool {
			n = runtime.NumGoroutine() - g1
			return n <= slack
		})
		return n
	}
	check := func(when string, n int) {
		t.Logf("%s: %d goroutines with %d partitions, %d more with %d more partitions", when, g1, few, n, many)
		if n > slack {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Errorf("%s: %d more goroutines for %d more owned partitions, want at most %d (none per idle partition); goroutines:\n%s",
				when, n, many, slack, sb.String())
		}
	}

	createTopic(t, c, base+"-b", many, 1)
	await(t, time.Minute, "both topics owned", func() bool { return balanced(few+many, in) })
	check("idle", added())

	testcluster.MustProduce(t, c, base+"-b", many, 0, many*per)
	await(t, time.Minute, "the second topic read and committed", committed(few+many))
	check("read", added())
}
