package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/notify"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// errSink marks a failure to start the sink.
var errSink = errors.New("sink")

// daemon is one run of `zkgroup run`.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	level  *slog.LevelVar // log's level, which the admin server may change
	stdout io.Writer
	stderr io.Writer
	notify *notify.Notifier
	start  time.Time
	live   *admin.Liveness
	timer  *admin.SinkTimer
	viewer *admin.Viewer // nil when the group view cannot be read
	// joined is the consumer once the daemon joined: the group view reads
	// through its ZooKeeper session.
	joined atomic.Pointer[manager.Consumer]
	// hurry tells the pipeline's workers to stop lingering for fuller
	// batches (set once the pipeline runs; shutdown calls it).
	hurry func()
}

// newDaemon builds the daemon. The logger run built has a fixed level: the
// daemon logs through the same format over a level the admin server can
// change, and routes sarama's logs there too.
func newDaemon(cfg *config.Config, _ *slog.Logger, stdout, stderr io.Writer) *daemon {
	log, level := levelLogger(cfg.Log, stderr)
	routeSarama(log)
	return &daemon{cfg: cfg, log: log, level: level, stdout: stdout, stderr: stderr, notify: notify.New(log),
		start: time.Now(), live: admin.NewLiveness(livenessBound(cfg.SessionTimeout.D())),
		timer: admin.NewSinkTimer(cfg.Group, sinkType(cfg))}
}

// sinkType names the configured sink (the sink label of its metrics).
func sinkType(cfg *config.Config) string {
	if cfg.Sink.Type == "" {
		return config.SinkStdout
	}
	return cfg.Sink.Type
}

// buildHandler builds the sink with its retry and failure policy. The
// dead-letter producer needs brokers: configured, or read from ZooKeeper
// (a read only).
func (d *daemon) buildHandler() (*sink.Handler, error) {
	c := d.cfg.Sink
	var s sink.Sink
	var err error
	switch c.Type {
	case config.SinkExec:
		s, err = sink.NewExecSink(sink.ExecConfig{Command: c.Exec.Command, Timeout: c.Exec.Timeout.D(),
			Env: os.Environ(), Stdout: d.stdout, Stderr: d.stderr, Mode: c.Exec.Mode,
			Batch: sink.BatchLimits{MaxMessages: c.Exec.Batch.MaxMessages, MaxBytes: c.Exec.Batch.MaxBytes, Linger: c.Exec.Batch.Linger.D()}})
	case config.SinkHTTP:
		s, err = sink.NewHTTPSink(sink.HTTPConfig{URL: c.HTTP.URL, Timeout: c.HTTP.Timeout.D(), Headers: c.HTTP.Headers,
			Mode: c.HTTP.Mode, MaxInFlight: c.HTTP.MaxInFlight,
			Batch: sink.BatchLimits{MaxMessages: c.HTTP.Batch.MaxMessages, MaxBytes: c.HTTP.Batch.MaxBytes, Linger: c.HTTP.Batch.Linger.D()}})
	default:
		s = sink.NewStdout(d.stdout)
	}
	if err != nil {
		return nil, err
	}
	s = d.timer.WrapSink(s)
	pol := sink.Policy{MaxAttempts: c.Retry.MaxAttempts, InitialBackoff: c.Retry.InitialBackoff.D(),
		MaxBackoff: c.Retry.MaxBackoff.D(), OnFailure: c.OnFailure, Logger: d.log}
	if c.OnFailure == config.OnFailureDeadLetter {
		dl, err := newDeadLetter(d.cfg, d.log) // deadletter.go: the configured TLS, SASL and ZooKeeper access
		if err != nil {
			return nil, err
		}
		pol.DeadLetter = dl
	}
	return sink.NewHandler(s, pol)
}

// run runs the daemon until a signal or a fatal sink failure and returns
// the exit status. The admin server comes up first, so that /healthz and
// /readyz answer while the daemon waits for ZooKeeper (startWait): each
// attempt runs the preflight, builds the sink (once) and joins.
func (d *daemon) run() int {
	log := d.log
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)

	view, err := admin.NewZooKeeperView(d.groupViewSession, d.cfg.Group, d.cfg.Subscription)
	if err != nil { // Validate parsed the subscription already
		log.Error("bad configuration", "error", err)
		return exitUsage
	}
	defer view.Close()
	d.viewer = admin.NewViewer(view.Read, groupViewEvery, log)

	var srv *admin.Server
	var built atomic.Pointer[sink.Handler] // for the admin server's sink counters
	if d.cfg.Admin.Listen != "" {
		ac, err := d.adminConfig(func() sink.Stats {
			if h := built.Load(); h != nil {
				return h.Stats()
			}
			return sink.Stats{}
		})
		if err != nil {
			log.Error("bad configuration", "error", err)
			return exitUsage
		}
		srv = admin.New(ac)
		if _, err := srv.Listen(d.cfg.Admin.Listen); err != nil {
			log.Error("starting the admin server failed", "error", err)
			return exitFailure
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
	}

	mcfg, sub, err := d.cfg.Manager(log)
	if err != nil { // Validate ran already; kept for safety
		log.Error("bad configuration", "error", err)
		return exitUsage
	}
	d.notify.Status("joining group " + d.cfg.Group)
	var (
		handler *sink.Handler
		cons    *manager.Consumer
	)
	outcome, err := d.startWait(signals, srv, func(ctx context.Context) error {
		if err := preflight(ctx, d.cfg, log, nil); err != nil {
			return err
		}
		if handler == nil {
			h, err := d.buildHandler()
			if err != nil {
				return fmt.Errorf("%w: %w", errSink, err)
			}
			handler = h
			built.Store(h)
		}
		c, err := manager.Join(ctx, d.cfg.Group, sub, d.cfg.ZooKeeper, mcfg)
		if err != nil {
			return err
		}
		cons = c
		return nil
	})
	// Past startWait no attempt runs (but for startAbandoned): handler and
	// cons are this goroutine's.
	if outcome != startAbandoned && handler != nil {
		defer func() {
			if err := handler.Close(); err != nil {
				log.Warn("closing the sink", "error", err)
			}
		}()
	}
	switch outcome {
	case startStopped, startAbandoned:
		d.notify.Stopping("stopping")
		if outcome == startStopped && cons != nil {
			_ = cons.Close()
		}
		return exitOK
	case startFailed:
		switch {
		case errors.Is(err, errSink):
			log.Error("starting the sink failed", "error", err)
			return exitFailure
		case errors.Is(err, manager.ErrJoin):
			log.Error("joining the group failed", "error", err)
			return exitFailure
		}
		log.Error("cannot start", "error", err)
		return exitFor(err)
	}
	log.Info("joined", "instance", cons.ID(), "took", time.Since(d.start).Round(time.Millisecond))
	d.joined.Store(cons)
	if srv != nil {
		srv.SetSource(cons)
	}
	watching, stopWatching := context.WithCancel(context.Background())
	defer stopWatching()
	go d.viewer.Run(watching)
	go d.watch(watching, cons)
	go func() {
		for err := range cons.Errors() {
			log.Warn("consumer error", "error", err)
		}
	}()

	// sinkCtx bounds sink calls; it ends once a shutdown's drains gave up.
	sinkCtx, cancelSinks := context.WithCancel(context.Background())
	defer cancelSinks()
	fatal := make(chan error, 1)
	pl := pipeline.New(pipeline.Config{
		Handler: d.timer.WrapHandler(handler),
		Ack:     func(m *manager.Message) { cons.Ack(m) },
		Fatal: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
		Logger: log,
	})
	d.hurry = pl.Hurry
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		if err := pipeline.Run(sinkCtx, pl, cons.EachPartition(context.Background())); err != nil {
			log.Error("partition streams failed", "error", err)
		}
	}()

	return d.loop(cons, signals, fatal, workersDone, cancelSinks)
}

// loop waits for readiness (READY=1), beats the daemon's liveness, and on
// a signal or a fatal sink error shuts down. The watchdog is fed by watch.
func (d *daemon) loop(cons *manager.Consumer, signals chan os.Signal, fatal chan error, workersDone chan struct{}, cancelSinks func()) int {
	log := d.log
	readyTick := time.NewTicker(50 * time.Millisecond)
	defer readyTick.Stop()
	beat := time.NewTicker(time.Second)
	defer beat.Stop()
	d.live.Beat(loopDaemon)
	var failure error
	for {
		select {
		case <-readyTick.C:
			if st := cons.Stats(); st.Ready {
				readyTick.Stop()
				d.announceReady(st)
			}
		case <-beat.C:
			d.live.Beat(loopDaemon)
		case sig := <-signals:
			log.Info("signal received; shutting down", "signal", sig.String(), "timeout", d.cfg.ShutdownTimeout.D())
			return d.shutdown(cons, signals, beat.C, workersDone, cancelSinks, nil)
		case failure = <-fatal:
			log.Error("a message failed for good (on_failure stop); shutting down", "error", failure)
			return d.shutdown(cons, signals, beat.C, workersDone, cancelSinks, failure)
		}
	}
}

// announceReady logs readiness and sends READY=1. A member with no
// partition says why: the subscription matches no topic (the group view
// warns about it), or the others hold every partition.
func (d *daemon) announceReady(st manager.Stats) {
	status := fmt.Sprintf("consuming %d partitions", len(st.Partitions))
	if len(st.Assigned) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		v, err := d.viewer.Refresh(ctx)
		cancel()
		switch {
		case err != nil:
			status = "idle: no partition assigned"
		case len(v.Topics) == 0:
			status = "idle: the subscription matches no topic"
		default:
			status = fmt.Sprintf("idle: no partition assigned (%d members share %d partitions)", len(v.Members), len(v.Partitions))
		}
	}
	d.log.Info("ready", "partitions", len(st.Partitions), "members", len(st.Members),
		"since_start", time.Since(d.start).Round(time.Millisecond), "status", status)
	d.notify.Ready(status)
}

// shutdown closes the consumer (drain, commit, release, deregister) and
// waits for the workers, within ShutdownTimeout; a second signal exits at
// once.
func (d *daemon) shutdown(cons *manager.Consumer, signals chan os.Signal, beat <-chan time.Time, workersDone chan struct{}, cancelSinks func(), failure error) int {
	log := d.log
	begun := time.Now()
	d.notify.Stopping("stopping: draining partitions")
	if d.hurry != nil {
		d.hurry() // a batch lingering for more goes now: the drain waits for it
	}
	deadline := time.NewTimer(d.cfg.ShutdownTimeout.D())
	defer deadline.Stop()
	// After the drain timeout a late ack is stale: stop sinks retrying.
	giveUp := time.AfterFunc(d.cfg.Partition.DrainTimeout+time.Second, cancelSinks)
	defer giveUp.Stop()
	closed := make(chan error, 1)
	go func() { closed <- cons.Close() }()
	var closeErr error
	waitingClose := true
	for {
		var wd <-chan struct{}
		if !waitingClose {
			wd = workersDone
		}
		select {
		case closeErr = <-closed:
			waitingClose = false
			continue
		case <-wd:
		case <-beat:
			d.live.Beat(loopDaemon)
			continue
		case sig := <-signals:
			log.Error("second signal: exiting at once", "signal", sig.String())
			return exitFailure
		case <-deadline.C:
			log.Error("shutdown timed out", "timeout", d.cfg.ShutdownTimeout.D())
			return exitFailure
		}
		break
	}
	took := time.Since(begun).Round(time.Millisecond)
	switch {
	case failure != nil:
		log.Error("stopped after a failed message", "took", took, "error", failure)
		return exitFailure
	case closeErr != nil:
		log.Error("stopped with an error", "took", took, "error", closeErr)
		return exitFailure
	}
	log.Info("stopped cleanly", "took", took)
	return exitOK
}
