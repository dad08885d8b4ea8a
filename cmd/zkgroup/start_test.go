package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/admin"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/notify"
	"github.com/zkgroup/zkgroup/internal/logcheck"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/manager"
)

func TestZooKeeperUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("ops: zookeeper h:1: %w", zkconn.ErrTimeout), true},
		{fmt.Errorf("%w: %w", manager.ErrJoin, fmt.Errorf("%w: no session: %w", zkconn.ErrDial, zkconn.ErrTimeout)), true},
		{fmt.Errorf("check: %w", zk.ErrConnectionClosed), true},
		{fmt.Errorf("%w: hint: %w", errRefused, fmt.Errorf("%w: x509", zkconn.ErrDial)), false},
		{fmt.Errorf("%w: hint: %w", errRefused, zk.ErrNoAuth), false},
		{fmt.Errorf("zkconn: connect [zk:2181]: %w", &net.DNSError{Err: "no such host", Name: "zk", IsNotFound: true}), true},
		{errors.New("no Kafka brokers known"), false},
		{nil, false},
	} {
		if got := zooKeeperUnreachable(tc.err); got != tc.want {
			t.Errorf("zooKeeperUnreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// startDaemonOnly is a daemon with what startWait uses, logging JSON into
// a buffer.
func startDaemonOnly(t *testing.T, bound time.Duration) (*daemon, *testcluster.Buffer) {
	cfg := config.Default()
	cfg.ZooKeeper = "zk:2181"
	cfg.ZooKeeperStartTimeout = config.Duration(bound)
	buf := &testcluster.Buffer{}
	log := slog.New(logcheck.Check(t, slog.NewJSONHandler(buf, nil)))
	return &daemon{cfg: cfg, log: log, notify: notify.New(log), live: admin.NewLiveness(time.Minute)}, buf
}

var errUnreachable = fmt.Errorf("ops: zookeeper zk:2181: %w", zkconn.ErrTimeout)

// TestStartWait: attempts are repeated while ZooKeeper is unreachable,
// with a log line each and /readyz saying why; any other error, the bound
// and a signal end the wait.
func TestStartWait(t *testing.T) {
	t.Run("unreachable then up", func(t *testing.T) {
		d, logs := startDaemonOnly(t, 0)
		srv := admin.New(admin.Config{Group: "g"})
		n := 0
		var readyz []string
		out, err := d.startWait(nil, srv, func(context.Context) error {
			if n > 0 {
				code, body := get(t, srv, "/readyz")
				readyz = append(readyz, fmt.Sprintf("%d %s", code, strings.TrimSpace(body)))
			}
			if n++; n < 3 {
				return errUnreachable
			}
			return nil
		})
		if out != startDone || err != nil || n != 3 {
			t.Fatalf("startWait = %v, %v after %d attempts", out, err, n)
		}
		for i, r := range readyz {
			if want := fmt.Sprintf("503 waiting for ZooKeeper (zk:2181), attempt %d failed: ", i+1); !strings.HasPrefix(r, want) {
				t.Errorf("/readyz before attempt %d: %q, want %q...", i+2, r, want)
			}
		}
		if code, body := get(t, srv, "/readyz"); code != 503 || !strings.Contains(body, "joining the group") {
			t.Errorf("/readyz after the wait: %d %q", code, body)
		}
		if got := strings.Count(logs.String(), startWaitLine); got != 2 {
			t.Errorf("%d attempt lines, want 2:\n%s", got, logs)
		}
	})
	t.Run("other error", func(t *testing.T) {
		d, _ := startDaemonOnly(t, 0)
		n := 0
		refused := fmt.Errorf("%w: ZooKeeper refused the credentials: %w", errRefused, zk.ErrAuthFailed)
		out, err := d.startWait(nil, nil, func(context.Context) error {
			if n++; n == 1 {
				return errUnreachable
			}
			return refused
		})
		if out != startFailed || !errors.Is(err, errRefused) || exitFor(err) != exitRefused || n != 2 {
			t.Fatalf("startWait = %v, %v (exit %d) after %d attempts", out, err, exitFor(err), n)
		}
	})
	t.Run("bound", func(t *testing.T) {
		d, _ := startDaemonOnly(t, time.Second)
		begun := time.Now()
		out, err := d.startWait(nil, nil, func(ctx context.Context) error {
			<-ctx.Done() // an attempt that hangs until cancelled
			return ctx.Err()
		})
		took := time.Since(begun)
		if out != startFailed || !errors.Is(err, errStartTimeout) || exitFor(err) != exitFailure || !strings.Contains(err.Error(), "within 1s") {
			t.Fatalf("startWait = %v, %v (exit %d)", out, err, exitFor(err))
		}
		if took < time.Second || took > 3*time.Second {
			t.Errorf("the 1s bound ended the wait after %v", took)
		}
	})
	t.Run("signal during an attempt", func(t *testing.T) {
		d, _ := startDaemonOnly(t, 0)
		signals := make(chan os.Signal, 1)
		cancelled := make(chan struct{})
		out, err := d.startWait(signals, nil, func(ctx context.Context) error {
			signals <- syscall.SIGTERM
			<-ctx.Done()
			close(cancelled)
			return ctx.Err()
		})
		if out != startStopped || err != nil {
			t.Fatalf("startWait = %v, %v", out, err)
		}
		select {
		case <-cancelled:
		default:
			t.Error("the attempt under way was not cancelled")
		}
	})
	t.Run("signal during the backoff", func(t *testing.T) {
		d, _ := startDaemonOnly(t, 0)
		signals := make(chan os.Signal, 1)
		n := 0
		out, err := d.startWait(signals, nil, func(context.Context) error {
			n++
			signals <- syscall.SIGTERM
			return errUnreachable
		})
		if out != startStopped || err != nil || n != 1 {
			t.Fatalf("startWait = %v, %v after %d attempts", out, err, n)
		}
	})
}

// get serves a GET of path from srv's handler.
func get(t *testing.T, srv *admin.Server, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}
