package admin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/manager"
)

// Source gives the consumer's state; *manager.Consumer satisfies it.
// Stats must be safe for concurrent use and must not block on I/O.
type Source interface {
	Stats() manager.Stats
}

// Config configures a Server. Only Group is required; every other field
// has a safe default (off, for what could leak).
type Config struct {
	Group   string
	Version string
	// SinkStats returns the sink counters; nil reports none.
	SinkStats func() sink.Stats
	// SinkTimer adds the sink latency histograms; nil: none.
	SinkTimer *SinkTimer
	// View is the whole group as ZooKeeper shows it (members, owners,
	// the topics the subscription matches); nil: only what this member
	// knows.
	View *Viewer
	// Liveness decides /healthz; nil: 200 while the server serves.
	Liveness *Liveness
	// Token, when set, is required (bearer, or basic-auth password) for
	// every endpoint but /healthz and /readyz.
	Token string
	// TLSCertFile and TLSKeyFile (PEM), when both set, make the server
	// serve HTTPS only.
	TLSCertFile, TLSKeyFile string
	// IdleTimeout closes keep-alive connections idle this long; default
	// 60s.
	IdleTimeout time.Duration
	// LogLevel, when set, is served at GET/PUT /loglevel; nil: no such
	// endpoint.
	LogLevel *slog.LevelVar
	// Pprof serves net/http/pprof under /debug/pprof/; off by default
	// (profiles show memory and stacks).
	Pprof bool
	// LagSampleEvery is how often the lag is sampled for the page's chart
	// (default 5s); LagSamples how many samples are kept (default 180:
	// 15 minutes at 5s).
	LagSampleEvery time.Duration
	LagSamples     int
	Logger         *slog.Logger
}

type sourceBox struct{ src Source }

// Server serves the admin endpoints. Safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	source  atomic.Pointer[sourceBox]
	waiting atomic.Pointer[string] // why the member has not joined yet; nil: joining
	// viewAttempt: when /status last read the group view (unix ns).
	viewAttempt atomic.Int64
	lags        *lagHistory
	handler     http.Handler
	srv         *http.Server
	served      chan error
	stop        chan struct{}
	stopped     sync.Once
	stopErr     error
	wg          sync.WaitGroup
}

// New builds a server with its own Prometheus registry (the consumer's
// metrics, the sink's, Go runtime and process metrics). It does not listen
// yet. Does not block.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 60 * time.Second
	}
	if cfg.LagSampleEvery <= 0 {
		cfg.LagSampleEvery = 5 * time.Second
	}
	if cfg.LagSamples <= 0 {
		cfg.LagSamples = 180
	}
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry(), lags: newLagHistory(cfg.LagSamples), stop: make(chan struct{})}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.reg.MustRegister(newCollector(s))
	if cfg.SinkTimer != nil {
		s.reg.MustRegister(cfg.SinkTimer)
	}
	s.handler = s.routes()
	return s
}

// routes builds the mux: health and readiness open, the rest behind the
// token (when one is set).
func (s *Server) routes() http.Handler {
	open := http.NewServeMux()
	open.HandleFunc("GET /healthz", s.healthz)
	open.HandleFunc("GET /readyz", s.readyz)
	guarded := http.NewServeMux()
	guarded.HandleFunc("GET /{$}", s.page)
	guarded.HandleFunc("GET /status", s.status)
	guarded.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s.log}}))
	if s.cfg.LogLevel != nil {
		guarded.HandleFunc("GET /loglevel", s.logLevel)
		guarded.HandleFunc("PUT /loglevel", s.logLevel)
	}
	if s.cfg.Pprof {
		guarded.HandleFunc("/debug/pprof/", pprof.Index)
		guarded.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		guarded.HandleFunc("/debug/pprof/profile", pprof.Profile)
		guarded.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		guarded.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	open.Handle("/", requireToken(s.cfg.Token, guarded))
	return open
}

type slogPrinter struct{ l *slog.Logger }

// Println logs promhttp errors as warnings.
func (p slogPrinter) Println(v ...any) { p.l.Warn("metrics: " + fmt.Sprint(v...)) }

// SetSource makes the server report src (once Join returned). Safe for
// concurrent use.
func (s *Server) SetSource(src Source) {
	s.source.Store(&sourceBox{src})
	s.lags.add(time.Now(), src.Stats())
}

// SetWaiting says why the member is not joining yet (e.g. ZooKeeper
// does not answer): until SetSource, /readyz answers 503 with it and
// /healthz 200 naming it. "" goes back to "joining the group". Safe for
// concurrent use.
func (s *Server) SetWaiting(reason string) {
	if reason == "" {
		s.waiting.Store(nil)
		return
	}
	s.waiting.Store(&reason)
}

// waitingReason returns what SetWaiting last said, or "".
func (s *Server) waitingReason() string {
	if r := s.waiting.Load(); r != nil {
		return *r
	}
	return ""
}

func (s *Server) stats() (manager.Stats, bool) {
	b := s.source.Load()
	if b == nil || b.src == nil {
		return manager.Stats{}, false
	}
	return b.src.Stats(), true
}

// Registry returns the server's Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds addr and serves in the background (HTTPS when TLS files
// are configured), and starts sampling the lag; it returns the bound
// address (useful with port 0). Blocks only for the bind.
func (s *Server) Listen(addr string) (net.Addr, error) {
	var tlsCfg *tls.Config
	switch {
	case s.cfg.TLSCertFile != "" && s.cfg.TLSKeyFile != "":
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("admin: TLS certificate %s, key %s: %w", s.cfg.TLSCertFile, s.cfg.TLSKeyFile, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	case s.cfg.TLSCertFile != "" || s.cfg.TLSKeyFile != "":
		return nil, errors.New("admin: TLS needs both a certificate file and a key file")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen %s: %w", addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		// pprof's profile and trace run 30s by default.
		WriteTimeout: 60 * time.Second, IdleTimeout: s.cfg.IdleTimeout,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(ln) }()
	s.wg.Add(1)
	go s.sampleLag()
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	s.log.Info("admin server listening", "addr", ln.Addr().String(), "scheme", scheme,
		"token", s.cfg.Token != "", "pprof", s.cfg.Pprof, "loglevel_control", s.cfg.LogLevel != nil)
	return ln.Addr(), nil
}

// sampleLag records the lag every LagSampleEvery until Shutdown.
func (s *Server) sampleLag() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.LagSampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if st, ok := s.stats(); ok {
				s.lags.add(now, st)
			}
		}
	}
}

// Shutdown stops the server, waiting for requests under way until ctx.
// Idempotent: later calls return the first one's result.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	s.stopped.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.stopErr = s.srv.Shutdown(ctx)
		if serr := <-s.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && s.stopErr == nil {
			s.stopErr = serr
		}
	})
	return s.stopErr
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, msg)
}

// status answers /status: the member's stats, its readiness and the
// group view from one snapshot (see snapshot), so that they agree.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, joined, view, readAt, viewErr := s.snapshot(r.Context())
	out := NewStatus(s.cfg.Group, s.cfg.Version, st, joined)
	out.Ready, out.Readiness = s.readinessOf(st, joined, view, readAt)
	out.Alive, out.Liveness = true, "alive"
	if s.cfg.Liveness != nil {
		if err := s.cfg.Liveness.Check(); err != nil {
			out.Alive, out.Liveness = false, err.Error()
		}
	}
	if view != nil {
		out.GroupView = NewGroupViewStatus(*view, readAt, viewErr, st.Instance)
	}
	out.LagHistory = s.lags.list()
	if s.cfg.SinkStats != nil {
		ss := s.cfg.SinkStats()
		out.Sink = &ss
	}
	out.Now = time.Now().UTC()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
