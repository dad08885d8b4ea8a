package main

import (
	"context"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/notify"
	"github.com/zkgroup/zkgroup/manager"
)

// managerStale: a manager loop at one piece of work for this long is
// wedged (Stats.LoopAt stays current while the loop waits for work; a
// rebalance's ZooKeeper reads are bounded by the session timeout).
const managerStale = 2 * time.Minute

// Loop names in the daemon's Liveness.
const (
	loopDaemon  = "daemon"  // the daemon's select loop (signals, readiness, shutdown)
	loopManager = "manager" // the consumer, as seen through Stats
)

// watch feeds the manager's liveness from Consumer.Stats once a second (or
// at the watchdog's pace, if faster) and pings the systemd watchdog while
// every loop of the daemon is alive, until ctx ends. Stats does no I/O: it
// returns unless the consumer's state is locked up; the manager's beat is
// given only while its loop is not stuck at one piece of work for
// managerStale (Stats.LoopAt).
func (d *daemon) watch(ctx context.Context, cons *manager.Consumer) {
	every, ping := time.Second, time.Duration(0)
	if iv, ok, err := notify.WatchdogInterval(); err != nil {
		d.log.Warn("systemd watchdog setting ignored", "error", err)
	} else if ok {
		every, ping = min(every, iv), iv
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var pinged time.Time
	warned := false
	for {
		if st := cons.Stats(); time.Since(st.LoopAt) < managerStale {
			d.live.Beat(loopManager)
		}
		if ping > 0 && time.Since(pinged) >= ping {
			if err := d.live.Check(); err != nil {
				if !warned {
					d.log.Error("not feeding the systemd watchdog: a loop is stalled", "error", err)
					warned = true
				}
			} else {
				d.notify.Watchdog()
				pinged, warned = time.Now(), false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
