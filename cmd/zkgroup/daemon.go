package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/notify"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/pipeline"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
	"github.com/zkgroup/zkgroup/internal/partition"
)

// daemon is one run of `zkgroup run`.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	stdout io.Writer
	stderr io.Writer
	notify *notify.Notifier
	start  time.Time
}

func newDaemon(cfg *config.Config, log *slog.Logger, stdout, stderr io.Writer) *daemon {
	return &daemon{cfg: cfg, log: log, stdout: stdout, stderr: stderr, notify: notify.New(log), start: time.Now()}
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
		s, err = sink.NewExec(sink.ExecConfig{Command: c.Exec.Command, Timeout: c.Exec.Timeout.D(),
			Env: os.Environ(), Stdout: d.stdout, Stderr: d.stderr})
	case config.SinkHTTP:
		s, err = sink.NewHTTP(sink.HTTPConfig{URL: c.HTTP.URL, Timeout: c.HTTP.Timeout.D(), Headers: c.HTTP.Headers})
	default:
		s = sink.NewStdout(d.stdout)
	}
	if err != nil {
		return nil, err
	}
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
// the exit status.
func (d *daemon) run() int {
	log := d.log
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)

	handler, err := d.buildHandler()
	if err != nil {
		log.Error("starting the sink failed", "err", err)
		return exitFailure
	}
	defer func() {
		if err := handler.Close(); err != nil {
			log.Warn("closing the sink", "err", err)
		}
	}()

	var srv *admin.Server
	if d.cfg.Admin.Listen != "" {
		srv = admin.New(admin.Config{Group: d.cfg.Group, Version: version, SinkStats: handler.Stats, Logger: log})
		if _, err := srv.Listen(d.cfg.Admin.Listen); err != nil {
			log.Error("starting the admin server failed", "err", err)
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
		log.Error("bad configuration", "err", err)
		return exitUsage
	}
	d.notify.Status("joining group " + d.cfg.Group)
	joined := make(chan struct{})
	var cons *manager.Consumer
	joinCtx, cancelJoin := context.WithCancel(context.Background())
	defer cancelJoin()
	go func() {
		defer close(joined)
		cons, err = manager.Join(joinCtx, d.cfg.Group, sub, d.cfg.ZooKeeper, mcfg)
	}()
	select {
	case <-joined:
	case sig := <-signals:
		log.Warn("signal while joining; the join is cancelled", "signal", sig.String())
		d.notify.Stopping("stopping")
		cancelJoin()
		select {
		case <-joined:
		case sig := <-signals:
			log.Error("second signal: exiting at once", "signal", sig.String())
			return exitFailure
		}
		if err == nil {
			_ = cons.Close()
		}
		return exitOK
	}
	if err != nil {
		log.Error("joining the group failed", "err", err)
		return exitFailure
	}
	log.Info("joined", "instance", cons.ID(), "took", time.Since(d.start).Round(time.Millisecond))
	if srv != nil {
		srv.SetSource(cons)
	}
	go func() {
		for err := range cons.Errors() {
			log.Warn("consumer error", "err", err)
		}
	}()

	// sinkCtx bounds sink calls; it ends once a shutdown's drains gave up.
	sinkCtx, cancelSinks := context.WithCancel(context.Background())
	defer cancelSinks()
	fatal := make(chan error, 1)
	pl := pipeline.New(pipeline.Config{
		Handler: handler,
		Ack:     func(m *partition.Message) { cons.Ack(m) },
		Fatal: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
		Logger: log,
	})
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		pipeline.Run(sinkCtx, pl, cons.Partitions())
	}()

	return d.loop(cons, signals, fatal, workersDone, cancelSinks)
}

// loop waits for readiness (READY=1), pings the watchdog, and on a signal
// or a fatal sink error shuts down.
func (d *daemon) loop(cons *manager.Consumer, signals chan os.Signal, fatal chan error, workersDone chan struct{}, cancelSinks func()) int {
	log := d.log
	readyTick := time.NewTicker(50 * time.Millisecond)
	defer readyTick.Stop()
	var watchdog <-chan time.Time
	if every, ok, err := notify.WatchdogInterval(); err != nil {
		log.Warn("systemd watchdog setting ignored", "err", err)
	} else if ok {
		t := time.NewTicker(every)
		defer t.Stop()
		watchdog = t.C
		d.notify.Watchdog()
	}
	var failure error
	for {
		select {
		case <-readyTick.C:
			if st := cons.Stats(); st.Ready {
				readyTick.Stop()
				log.Info("ready", "partitions", len(st.Partitions), "members", len(st.Members),
					"since_start", time.Since(d.start).Round(time.Millisecond))
				d.notify.Ready(fmt.Sprintf("consuming %d partitions", len(st.Partitions)))
			}
		case <-watchdog:
			d.notify.Watchdog()
		case sig := <-signals:
			log.Info("signal received; shutting down", "signal", sig.String(), "timeout", d.cfg.ShutdownTimeout.D())
			return d.shutdown(cons, signals, watchdog, workersDone, cancelSinks, nil)
		case failure = <-fatal:
			log.Error("a message failed for good (on_failure stop); shutting down", "err", failure)
			return d.shutdown(cons, signals, watchdog, workersDone, cancelSinks, failure)
		}
	}
}

// shutdown closes the consumer (drain, commit, release, deregister) and
// waits for the workers, within ShutdownTimeout; a second signal exits at
// once.
func (d *daemon) shutdown(cons *manager.Consumer, signals chan os.Signal, watchdog <-chan time.Time, workersDone chan struct{}, cancelSinks func(), failure error) int {
	log := d.log
	begun := time.Now()
	d.notify.Stopping("stopping: draining partitions")
	deadline := time.NewTimer(d.cfg.ShutdownTimeout.D())
	defer deadline.Stop()
	// After the drain timeout a late ack is stale: stop sinks retrying.
	giveUp := time.AfterFunc(d.cfg.Partition.DrainTimeout.D()+time.Second, cancelSinks)
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
		case <-watchdog:
			d.notify.Watchdog()
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
		log.Error("stopped after a failed message", "took", took, "err", failure)
		return exitFailure
	case closeErr != nil:
		log.Error("stopped with an error", "took", took, "err", closeErr)
		return exitFailure
	}
	log.Info("stopped cleanly", "took", took)
	return exitOK
}
