package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// Backoff between start attempts while ZooKeeper does not answer (each
// attempt itself waits up to the session timeout for a session).
const (
	startBackoffMin = 500 * time.Millisecond
	startBackoffMax = 15 * time.Second
)

// errStartTimeout: ZooKeeper did not answer within zookeeper_start_timeout.
var errStartTimeout = errors.New("zookeeper_start_timeout passed")

// zooKeeperUnreachable reports whether err says only that ZooKeeper did
// not answer (no session, the connection went away, or its name does not
// resolve yet, as in a container started before ZooKeeper's), which a
// later attempt may get past; a refusal (credentials, certificates) is
// not.
func zooKeeperUnreachable(err error) bool {
	if err == nil || errors.Is(err, errRefused) {
		return false
	}
	var dns *net.DNSError
	return errors.Is(err, zkconn.ErrTimeout) || errors.Is(err, zkconn.ErrDial) || errors.Is(err, zkconn.ErrClosed) ||
		errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.As(err, &dns)
}

// How a start wait ended.
type startOutcome int

const (
	startDone    startOutcome = iota // an attempt succeeded
	startFailed                      // for good, or zookeeper_start_timeout passed: see the error
	startStopped                     // a signal came; no attempt is under way any more
	// startAbandoned: a signal came while an attempt was still under way
	// after abandonGrace; what it sets up must not be touched.
	startAbandoned
)

// abandonGrace is how long a signal waits for the cancelled attempt (Join
// returns at once; a Kafka dial of the preflight may not).
const abandonGrace = 2 * time.Second

// startWait runs attempt until it succeeds, fails for a reason other than
// an unreachable ZooKeeper, a signal comes, or zookeeper_start_timeout
// passes (0: never). Between attempts it backs off (jittered), logs each
// failure with its reason, tells /readyz (srv may be nil) and systemd why
// it waits, and beats the daemon's liveness. A signal cancels the attempt
// under way through its context.
func (d *daemon) startWait(signals <-chan os.Signal, srv *admin.Server, attempt func(context.Context) error) (startOutcome, error) {
	bound := d.cfg.ZooKeeperStartTimeout.D()
	var deadline <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		deadline = t.C
	}
	beat := time.NewTicker(time.Second)
	defer beat.Stop()
	backoff := retry.New(startBackoffMin, startBackoffMax)
	begun := time.Now()
	var last error // of the attempt before
	for n := 1; ; n++ {
		d.live.Beat(loopDaemon)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- attempt(ctx) }()
		if n == 1 {
			go d.noteRefused(ctx)
		}
		var aerr error
	running:
		for {
			select {
			case aerr = <-done:
				break running
			case <-beat.C:
				d.live.Beat(loopDaemon)
			case sig := <-signals:
				cancel()
				d.log.Info("signal while starting; exiting", "signal", sig.String(), "attempt", n)
				select {
				case <-done:
					return startStopped, nil
				case <-time.After(abandonGrace):
					return startAbandoned, nil
				}
			case <-deadline:
				cancel()
				// Cancelled, it returns at once but for a preflight's
				// Kafka dial (bounded by the session timeout).
				if err := <-done; err == nil {
					return startDone, nil
				}
				return startFailed, d.startTimedOut(bound, n, last)
			}
		}
		cancel()
		if aerr == nil {
			if n > 1 {
				d.log.Info("ZooKeeper answers", "attempts", n, "waited", time.Since(begun).Round(time.Millisecond))
			}
			if srv != nil {
				srv.SetWaiting("")
			}
			return startDone, nil
		}
		if !zooKeeperUnreachable(aerr) {
			return startFailed, aerr
		}
		last = aerr
		wait := backoff.Next()
		reason := fmt.Sprintf("waiting for ZooKeeper (%s), attempt %d failed: %v", d.cfg.ZooKeeper, n, aerr)
		d.log.Warn("ZooKeeper does not answer; trying again", "attempt", n, "retry_in", wait.Round(time.Millisecond),
			"waited", time.Since(begun).Round(time.Millisecond), "start_timeout", bound, "error", aerr)
		if srv != nil {
			srv.SetWaiting(reason)
		}
		d.notify.Status(fmt.Sprintf("waiting for ZooKeeper (attempt %d)", n))
		t := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-t.C:
				break waiting
			case <-beat.C:
				d.live.Beat(loopDaemon)
			case sig := <-signals:
				t.Stop()
				d.log.Info("signal while waiting for ZooKeeper; exiting", "signal", sig.String(), "attempts", n)
				return startStopped, nil
			case <-deadline:
				t.Stop()
				return startFailed, d.startTimedOut(bound, n, aerr)
			}
		}
	}
}

// noteRefused says at once, when every ZooKeeper server refuses the
// connection, what the first attempt waits for (a session, up to the
// session timeout) instead of leaving the log silent until it fails.
// Nothing is said once ctx ends (the attempt ended) or when a server
// accepts. It blocks for up to 2s.
func (d *daemon) noteRefused(ctx context.Context) {
	err := ops.ProbeRefused(ctx, d.cfg.ZooKeeper)
	if errors.Is(err, ops.ErrZooKeeperRefused) && ctx.Err() == nil {
		d.log.Warn("ZooKeeper refuses connections; waiting for a session", "zookeeper", d.cfg.ZooKeeper,
			"wait", d.cfg.SessionTimeout.D(), "error", err)
	}
}

// startTimedOut is the error of a wait that zookeeper_start_timeout ended
// during attempt n; last is the previous attempt's error, if any.
func (d *daemon) startTimedOut(bound time.Duration, n int, last error) error {
	if last == nil {
		return fmt.Errorf("%w: ZooKeeper (%s) did not answer within %v (%d attempts)", errStartTimeout, d.cfg.ZooKeeper, bound, n)
	}
	return fmt.Errorf("%w: ZooKeeper (%s) did not answer within %v (%d attempts; last: %w)", errStartTimeout, d.cfg.ZooKeeper, bound, n, last)
}
