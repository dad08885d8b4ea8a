package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// Config configures a Server.
type Config struct {
	Group   string
	Version string
	// SinkStats returns the sink counters; nil reports none.
	SinkStats func() sink.Stats
	Logger    *slog.Logger
}

type sourceBox struct{ src Source }

// Server serves the admin endpoints. Safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	source  atomic.Pointer[sourceBox]
	handler http.Handler
	srv     *http.Server
	ln      net.Listener
	served  chan error
}

// New builds a server with its own Prometheus registry (the consumer's
// metrics, the sink's, Go runtime and process metrics). It does not listen
// yet. Does not block.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.reg.MustRegister(newCollector(s))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{log}}))
	s.handler = mux
	return s
}

type slogPrinter struct{ l *slog.Logger }

// Println logs promhttp errors as warnings.
func (p slogPrinter) Println(v ...any) { p.l.Warn("metrics: " + fmt.Sprint(v...)) }

// SetSource makes the server report src (once Join returned). Safe for
// concurrent use.
func (s *Server) SetSource(src Source) { s.source.Store(&sourceBox{src}) }

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

// Listen binds addr and serves in the background; it returns the bound
// address (useful with port 0). Blocks only for the bind.
func (s *Server) Listen(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen %s: %w", addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second}
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(ln) }()
	s.log.Info("admin server listening", "addr", ln.Addr().String())
	return ln.Addr(), nil
}

// Shutdown stops the server, waiting for requests under way until ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, msg)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	st, ok := s.stats()
	switch {
	case !ok:
		writeText(w, http.StatusServiceUnavailable, "joining the group")
	case !st.SessionHealthy:
		writeText(w, http.StatusServiceUnavailable, "zookeeper session unhealthy")
	default:
		writeText(w, http.StatusOK, "ok")
	}
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st, ok := s.stats()
	switch {
	case !ok:
		writeText(w, http.StatusServiceUnavailable, "joining the group")
	case !st.Ready:
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("not ready: %d partitions assigned, %d fetching", len(st.Assigned), len(st.Partitions)))
	default:
		writeText(w, http.StatusOK, fmt.Sprintf("ready: %d partitions", len(st.Partitions)))
	}
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	st, ok := s.stats()
	out := NewStatus(s.cfg.Group, s.cfg.Version, st, ok)
	if s.cfg.SinkStats != nil {
		ss := s.cfg.SinkStats()
		out.Sink = &ss
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
