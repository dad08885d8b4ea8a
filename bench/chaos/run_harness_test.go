package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// run is one chaos run.
type run struct {
	c          *testcluster.Cluster
	out, bin   string
	topic      string
	group      string
	partitions int32
	session    time.Duration
	rng        *rand.Rand
	col        *collector
	fw         *firewall
	daemons    []*daemon

	t0        int64 // unix ns: schedule start
	healed    int64 // unix ns: everything healed after the schedule
	drained   int64 // unix ns: drain condition met (or given up)
	drainOK   bool
	termSent  int64
	faults    []executed
	termExits []string
	hwm       map[int32]int64
	committed map[int32]int64
	hist      *offsetsHistory // Kafka's commit history of the group, read after the run
	histErr   error
}

// runAll starts the daemons, the producer and the poller, carries out the
// schedule, heals everything, drains and stops the daemons with SIGTERM.
func (r *run) runAll(ctx context.Context, sched []Fault) error {
	ds, err := newDaemons()
	if err != nil {
		return err
	}
	r.daemons = ds
	for _, d := range ds {
		if err := r.start(d, false); err != nil {
			return err
		}
	}
	pctx, stopPoll := context.WithCancel(ctx)
	var pollDone sync.WaitGroup
	pollDone.Add(1)
	go func() {
		defer pollDone.Done()
		poll(pctx, r.c.Addrs(), r.group, r.topic, r.partitions, 50*time.Millisecond, r.col)
	}()
	prod, err := startProducer(r.c.Addrs(), r.topic, *flagRate, *flagKeys, *flagSeed, r.col)
	if err != nil {
		stopPoll()
		return err
	}
	stopMon := make(chan struct{})
	var monDone sync.WaitGroup
	monDone.Add(1)
	go func() { defer monDone.Done(); r.monitor(stopMon) }()

	t0 := time.Now()
	r.t0 = t0.UnixNano()
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	for i, f := range sched {
		if wait := time.Until(t0.Add(f.At)); wait > 0 {
			r.sleepReporting(wait, progress, prod)
		}
		benchkit.Say("  [%3d/%d] %6.1fs %s", i+1, len(sched), time.Since(t0).Seconds(), f)
		ex := r.exec(ctx, f)
		if ex.Kind == kZKLeader && ex.Server != 0 {
			benchkit.Say("          server %d led", ex.Server)
		}
		if ex.Err != "" {
			benchkit.Say("          error: %s", ex.Err)
		}
		r.faults = append(r.faults, ex)
	}
	if wait := time.Until(t0.Add(*flagDuration)); wait > 0 {
		r.sleepReporting(wait, progress, prod)
	}
	r.healAll()
	r.healed = time.Now().UnixNano()
	benchkit.Say("  %6.1fs schedule done, everything healed; producer stops, drain", time.Since(t0).Seconds())
	prod.stop()
	benchkit.Say("  produced %d, acked %d, produce errors %d", prod.sent.Load(), r.col.ackedCount(), r.col.produceErrs.Load())

	// Drain: every acked record printed and every partition committed up
	// to its log end.
	deadline := time.Now().Add(*flagDrain)
	for {
		hwm, herr := r.c.HighWaterMarks(r.topic)
		com, cerr := r.c.CommittedOffsets(ctx, r.group, r.topic, r.partitions)
		left := r.col.unprinted()
		behind := 0
		if herr == nil && cerr == nil {
			for p, h := range hwm {
				if com[p] != h {
					behind++
				}
			}
			r.hwm, r.committed = hwm, com
		}
		if herr == nil && cerr == nil && left == 0 && behind == 0 {
			r.drainOK = true
			break
		}
		if time.Now().After(deadline) {
			benchkit.Say("  drain: DID NOT CONVERGE within %s: %d acked records unprinted, %d partitions not committed to their end (errors: %v %v)", *flagDrain, left, behind, herr, cerr)
			break
		}
		time.Sleep(time.Second)
	}
	r.drained = time.Now().UnixNano()
	benchkit.Say("  drained in %.1f s after the heal", float64(r.drained-r.healed)/1e9)
	close(stopMon)
	monDone.Wait()

	// SIGTERM all at once; each must exit 0.
	r.termSent = time.Now().UnixNano()
	var incs []*incarnation
	for _, d := range r.daemons {
		inc, err := d.signal(syscall.SIGTERM, true)
		if err != nil {
			r.col.note("final SIGTERM daemon %d: %v", d.idx, err)
			continue
		}
		incs = append(incs, inc)
	}
	for _, inc := range incs {
		select {
		case <-inc.done:
		case <-time.After(60 * time.Second):
			r.col.note("daemon %d did not exit within 60 s of the final SIGTERM: killed", inc.d.idx)
			_ = inc.cmd.Process.Kill()
			<-inc.done
		}
		r.termExits = append(r.termExits, fmt.Sprintf("daemon %d (%s): %s", inc.d.idx, inc.instanceID, r.col.incExit(inc.id)))
	}
	time.Sleep(2 * time.Second) // the poller sees the final commits
	stopPoll()
	pollDone.Wait()
	if hwm, err := r.c.HighWaterMarks(r.topic); err == nil {
		if com, err := r.c.CommittedOffsets(ctx, r.group, r.topic, r.partitions); err == nil {
			r.hwm, r.committed = hwm, com
		}
	}
	return nil
}

func (r *run) sleepReporting(d time.Duration, progress *time.Ticker, prod *producer) {
	end := time.After(d)
	for {
		select {
		case <-end:
			return
		case <-progress.C:
			r.col.mu.Lock()
			np, na := len(r.col.prints), len(r.col.acked)
			r.col.mu.Unlock()
			benchkit.Say("  %6.1fs produced %d, acked %d, printed %d", float64(time.Now().UnixNano()-r.t0)/1e9, prod.sent.Load(), na, np)
		}
	}
}
