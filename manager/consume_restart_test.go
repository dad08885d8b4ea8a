package manager_test

import (
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestConsumeCleanRestartNoDuplicates: while a producer writes, each of 3
// instances is restarted cleanly, one at a time (Close, then Join again
// with the same instance id), and a 4th instance joins and leaves (one
// clean rebalance each way). Clean restarts and rebalances drain and
// commit before a partition changes hands, so every message is consumed
// exactly once (checked by content and by offset), no two instances ever
// hold a partition at once, and the committed offsets end at the log-end
// offsets.
func TestConsumeCleanRestartNoDuplicates(t *testing.T) {
	c := testcluster.Shared(t)
	const parts = 12
	topic, group, sub := newTopic(t, c, parts)
	testcluster.MustProduce(t, c, topic, parts, 0, 1200)
	rec := newRecorder(t)
	led := rec.Ledger
	o := poolOpts{workers: 4, maxDelay: 500 * time.Microsecond, slowEvery: 100, slowDelay: 10 * time.Millisecond, strict: true}
	prod := testcluster.StartProducer(t, c, topic, parts, 1200, 24, 20*time.Millisecond)

	ins := map[string]*poolInstance{}
	for _, name := range []string{"a", "b", "c"} {
		ins[name] = joinPool(t, c, group, sub, name, rec, o)
	}
	all := func() []*poolInstance { return []*poolInstance{ins["a"], ins["b"], ins["c"]} }
	await(t, 60*time.Second, "a, b, c balanced", func() bool { return poolBalanced(parts, all()...) })

	for _, name := range []string{"a", "b", "c"} {
		before := led.Total()
		ins[name].close(t)
		t.Logf("%s closed", name)
		ins[name] = joinPool(t, c, group, sub, name, rec, o)
		took := await(t, 60*time.Second, name+" back, balanced", func() bool { return poolBalanced(parts, all()...) })
		t.Logf("%s restarted: balanced again in %v", name, took)
		// Let the group consume for a while between restarts.
		await(t, 60*time.Second, "progress after restarting "+name, func() bool { return led.Total() >= before+500 })
	}

	d := joinPool(t, c, group, sub, "d", rec, o)
	took := await(t, 60*time.Second, "a, b, c, d balanced", func() bool { return poolBalanced(parts, append(all(), d)...) })
	t.Logf("d joined: balanced in %v", took)
	before := led.Total()
	await(t, 60*time.Second, "progress with d", func() bool { return led.Total() >= before+500 })
	d.close(t)
	took = await(t, 60*time.Second, "a, b, c balanced", func() bool { return poolBalanced(parts, all()...) })
	t.Logf("d left: balanced in %v", took)

	n := prod.Halt(t)
	await(t, 2*time.Minute, "every message consumed", func() bool { return led.Count(topic, n) == n })
	hwm := testcluster.AwaitCommittedAtEnd(t, c, group, topic, parts)
	for _, in := range all() {
		in.close(t)
	}
	t.Logf("%d messages produced, %d deliveries", n, led.Total())
	led.CheckExactlyOnce(t, topic, n)
	led.CheckContiguous(t, hwm)
	rec.checkViolations(t)
	checkCommitted(t, c, group, topic, parts, hwm)
	if got := led.Total(); got != n {
		t.Errorf("%d deliveries for %d messages", got, n)
	}
}
