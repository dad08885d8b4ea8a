package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/internal/sessionlink"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// groupViewEvery is how often the daemon reads the whole group (members,
// owner nodes, the topics the subscription matches) from ZooKeeper for
// the admin server and the no-topic warning.
const groupViewEvery = 5 * time.Second

// errNotJoined: the group view is read through the member's session,
// which exists once the daemon joined.
var errNotJoined = errors.New("zkgroup: not joined yet")

// groupViewSession returns the session the group view reads through: the
// running consumer's (one ZooKeeper connection per daemon).
func (d *daemon) groupViewSession() (*zkconn.Session, error) {
	s, ok := sessionlink.Session(d.joined.Load())
	if !ok {
		return nil, errNotJoined
	}
	return s, nil
}

// levelLogger rebuilds the daemon's logger (newLogger's format, on
// stderr) over a LevelVar, so that the admin server can change the level
// at run time; it returns both.
func levelLogger(c config.Log, stderr io.Writer) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	if l, err := config.ParseLevel(c.Level); err == nil {
		lv.Set(l)
	}
	all := newLogger(config.Log{Format: c.Format, Level: "debug"}, stderr)
	return slog.New(admin.LevelHandler(all.Handler(), lv)), lv
}

// livenessBound is how long a loop of the daemon may stay silent before
// /healthz fails and the systemd watchdog is no longer fed: well above
// anything a rebalance may block the manager for.
func livenessBound(session time.Duration) time.Duration {
	return max(30*time.Second, 3*session)
}

// adminConfig maps the configuration onto the admin server's. The admin
// settings the config package does not have yet keep their defaults: no
// token, no TLS, idle timeout 60s, pprof off; the log level control is on
// only where it cannot leak (a loopback listener, or a token).
func (d *daemon) adminConfig(sinkStats func() sink.Stats) (admin.Config, error) {
	a := d.cfg.Admin
	ac := admin.Config{
		Group: d.cfg.Group, Version: version, SinkStats: sinkStats,
		SinkTimer: d.timer, View: d.viewer, Liveness: d.live, Logger: d.log,
		IdleTimeout: a.IdleTimeout.D(), TLSCertFile: a.TLSCertFile, TLSKeyFile: a.TLSKeyFile,
		Pprof: a.Pprof,
	}
	if a.TokenFile != "" {
		b, err := os.ReadFile(a.TokenFile)
		if err != nil {
			return admin.Config{}, fmt.Errorf("admin.token_file: %w", err)
		}
		if ac.Token = strings.TrimSpace(string(b)); ac.Token == "" {
			return admin.Config{}, fmt.Errorf("admin.token_file: %s is empty", a.TokenFile)
		}
	}
	if loopback(a.Listen) || (a.LogLevelControl && ac.Token != "") {
		ac.LogLevel = d.level
	}
	return ac, nil
}

// loopback reports whether a listen address binds loopback only.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
