package notify

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends state changes to systemd. Safe for concurrent use; each
// call blocks on one datagram send.
type Notifier struct {
	log *slog.Logger
}

// New returns a Notifier logging failures to log (nil discards).
func New(log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{log: log}
}

func (n *Notifier) send(state string) bool {
	sent, err := daemon.SdNotify(false, state)
	if err != nil {
		n.log.Warn("systemd notify failed", "state", state, "error", err)
	}
	return sent
}

// Ready sends READY=1 with a STATUS line; it reports whether a socket
// took it.
func (n *Notifier) Ready(status string) bool {
	return n.send(daemon.SdNotifyReady + "\nSTATUS=" + status)
}

// Stopping sends STOPPING=1 with a STATUS line.
func (n *Notifier) Stopping(status string) bool {
	return n.send(daemon.SdNotifyStopping + "\nSTATUS=" + status)
}

// Status sends a STATUS line.
func (n *Notifier) Status(status string) bool {
	return n.send("STATUS=" + status)
}

// Watchdog sends WATCHDOG=1.
func (n *Notifier) Watchdog() bool { return n.send(daemon.SdNotifyWatchdog) }

// WatchdogInterval returns how often to ping: half of WATCHDOG_USEC, as
// systemd recommends; ok is false when the watchdog is off (or meant for
// another process by WATCHDOG_PID).
func WatchdogInterval() (time.Duration, bool, error) {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, false, fmt.Errorf("notify: %w", err)
	}
	if d <= 0 {
		return 0, false, nil
	}
	return d / 2, true, nil
}
