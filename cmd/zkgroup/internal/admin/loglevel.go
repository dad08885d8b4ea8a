package admin

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// LevelHandler returns a slog.Handler that passes to inner the records at
// or above lv's level: the daemon's level, changed at run time through
// PUT /loglevel. inner must accept every level lv may be set to.
func LevelHandler(inner slog.Handler, lv *slog.LevelVar) slog.Handler {
	return levelHandler{inner, lv}
}

type levelHandler struct {
	inner slog.Handler
	lv    *slog.LevelVar
}

// Enabled reports whether level is at or above the current level.
func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.lv.Level() && h.inner.Enabled(ctx, level)
}

// Handle passes the record to the inner handler.
func (h levelHandler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

// WithAttrs keeps the level filter over the inner handler's WithAttrs.
func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{h.inner.WithAttrs(as), h.lv}
}

// WithGroup keeps the level filter over the inner handler's WithGroup.
func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{h.inner.WithGroup(name), h.lv}
}

// logLevel serves GET (the current level) and PUT (a new level: debug,
// info, warn or error, as the body) on /loglevel.
func (s *Server) logLevel(w http.ResponseWriter, r *http.Request) {
	lv := s.cfg.LogLevel
	if r.Method == http.MethodPut {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64))
		if err != nil {
			writeText(w, http.StatusBadRequest, "reading the body: "+err.Error())
			return
		}
		var level slog.Level
		text := strings.TrimSpace(string(body))
		if err := level.UnmarshalText([]byte(text)); err != nil || text == "" {
			writeText(w, http.StatusBadRequest, "log level "+strconv.Quote(text)+": want debug, info, warn or error")
			return
		}
		old := lv.Level()
		lv.Set(level)
		s.log.Warn("log level changed through the admin server", "from", old.String(), "to", level.String(), "remote", r.RemoteAddr)
	}
	writeText(w, http.StatusOK, strings.ToLower(lv.Level().String()))
}
