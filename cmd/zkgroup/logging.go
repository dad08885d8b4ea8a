package main

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

// newLogger builds the daemon's logger on w (stderr).
func newLogger(c config.Log, w io.Writer) *slog.Logger {
	level, err := config.ParseLevel(c.Level)
	if err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// slogWriter turns each line written by a log.Logger into a debug record.
type slogWriter struct{ l *slog.Logger }

func (s slogWriter) Write(p []byte) (int, error) {
	if s.l.Enabled(context.Background(), slog.LevelDebug) {
		s.l.Debug(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// routeSarama points sarama's global logger at l, at debug level. sarama's
// logger is a package variable: only this command sets it.
func routeSarama(l *slog.Logger) {
	sarama.Logger = log.New(slogWriter{l.With("component", "sarama")}, "", 0)
}
