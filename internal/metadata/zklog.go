package metadata

import (
	"fmt"
	"log/slog"
)

// zkLogger passes the ZooKeeper client's messages (connects, reconnects,
// failures) to slog at debug level: the watcher logs what matters itself.
// It is safe for concurrent use.
type zkLogger struct{ l *slog.Logger }

// Printf logs one client message.
func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "source", "zookeeper-client")
}
