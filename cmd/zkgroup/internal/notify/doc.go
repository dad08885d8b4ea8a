// Package notify tells systemd (Type=notify) about the daemon's state
// through NOTIFY_SOCKET: READY=1 once the consumer is ready, STOPPING=1 at
// shutdown, STATUS= lines, and WATCHDOG=1 pings when the unit sets
// WatchdogSec (WATCHDOG_USEC). Without NOTIFY_SOCKET every call is a no-op.
package notify
