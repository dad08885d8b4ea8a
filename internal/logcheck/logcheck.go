// Package logcheck finds log lines that carry an attribute key more than
// once, for tests. slog does not deduplicate: a logger built with
// With("group", g) that logs "group" again writes the key twice, and log
// pipelines that parse JSON keep one value or reject the line.
//
// Handler wraps a slog.Handler and checks every record (at every level,
// whatever the wrapped handler's level) against the attributes fixed by
// WithAttrs and WithGroup; JSONKeys checks a written JSON line.
package logcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Duplicate is one record that carried a key more than once.
type Duplicate struct {
	Message string
	Keys    []string // each key seen more than once, with its group path ("g.k")
}

func (d Duplicate) String() string {
	return fmt.Sprintf("%q repeats %s", d.Message, strings.Join(d.Keys, ", "))
}

// Recorder collects the duplicates found by the Handlers made from it.
// Safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	found []Duplicate
}

// Duplicates returns the duplicates found so far.
func (r *Recorder) Duplicates() []Duplicate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Duplicate(nil), r.found...)
}

func (r *Recorder) add(d Duplicate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.found) < 100 {
		r.found = append(r.found, d)
	}
}

// Handler wraps next and records, in its Recorder, every record that
// would carry a key twice. It checks records of every level (Enabled is
// always true) and passes on those next is enabled for.
type Handler struct {
	next   slog.Handler
	rec    *Recorder
	prefix string          // group path of the attributes to come: "" or "a.b."
	keys   map[string]bool // keys fixed by WithAttrs, with their group path
}

// NewHandler returns a Handler over next recording into rec.
func NewHandler(next slog.Handler, rec *Recorder) *Handler {
	return &Handler{next: next, rec: rec, keys: builtins()}
}

// builtins are the keys the built-in handlers write before any attribute.
func builtins() map[string]bool {
	return map[string]bool{slog.TimeKey: true, slog.LevelKey: true, slog.MessageKey: true}
}

// Enabled is always true: every record is checked.
func (h *Handler) Enabled(context.Context, slog.Level) bool { return true }

// Handle checks r and passes it on when next is enabled for its level.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	keys := make(map[string]bool, len(h.keys)+r.NumAttrs())
	for k := range h.keys {
		keys[k] = true
	}
	var dup []string
	r.Attrs(func(a slog.Attr) bool {
		dup = addAttr(keys, h.prefix, a, dup)
		return true
	})
	if len(dup) > 0 {
		slices.Sort(dup)
		h.rec.add(Duplicate{Message: r.Message, Keys: slices.Compact(dup)})
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// addAttr adds a's key (or its group's keys) under prefix to keys and
// appends to dup every key already there. Empty keys and empty groups are
// left out, as the built-in handlers do; a group with an empty key is
// inlined.
func addAttr(keys map[string]bool, prefix string, a slog.Attr, dup []string) []string {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		attrs := v.Group()
		if len(attrs) == 0 {
			return dup
		}
		p := prefix
		if a.Key != "" {
			// The group's name is a key at its level too: a leaf or
			// another group of that name repeats it.
			if keys[prefix+a.Key] {
				dup = append(dup, prefix+a.Key)
			}
			keys[prefix+a.Key] = true
			p = prefix + a.Key + "."
		}
		for _, g := range attrs {
			dup = addAttr(keys, p, g, dup)
		}
		return dup
	}
	if a.Key == "" {
		return dup
	}
	k := prefix + a.Key
	if keys[k] {
		dup = append(dup, k)
	}
	keys[k] = true
	return dup
}

// WithAttrs returns a Handler that also carries attrs; a key repeated
// there is recorded at once.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	keys := make(map[string]bool, len(h.keys)+len(attrs))
	for k := range h.keys {
		keys[k] = true
	}
	var dup []string
	for _, a := range attrs {
		dup = addAttr(keys, h.prefix, a, dup)
	}
	if len(dup) > 0 {
		h.rec.add(Duplicate{Message: "(WithAttrs)", Keys: dup})
	}
	return &Handler{next: h.next.WithAttrs(attrs), rec: h.rec, prefix: h.prefix, keys: keys}
}

// WithGroup returns a Handler whose attributes to come are under name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	keys := h.keys
	if keys[h.prefix+name] {
		h.rec.add(Duplicate{Message: "(WithGroup)", Keys: []string{h.prefix + name}})
	} else {
		keys = make(map[string]bool, len(h.keys)+1)
		for k := range h.keys {
			keys[k] = true
		}
		keys[h.prefix+name] = true
	}
	return &Handler{next: h.next.WithGroup(name), rec: h.rec, prefix: h.prefix + name + ".", keys: keys}
}

// ErrNotObject is returned by JSONKeys for a line that is not a JSON
// object.
var ErrNotObject = errors.New("logcheck: not a JSON object")

// JSONKeys returns the keys that occur more than once in the same object
// of the JSON document line (nested objects are checked too, their keys
// given with the path: "a.b"). encoding/json keeps the last of duplicate
// keys silently, so the document is walked token by token.
func JSONKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, ErrNotObject
	}
	var dup []string
	if err := walkObject(dec, "", &dup); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("logcheck: trailing data after the object")
	}
	return dup, nil
}

// walkObject reads an object's members up to its closing brace (the
// opening one was read).
func walkObject(dec *json.Decoder, path string, dup *[]string) error {
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("logcheck: object key %v is not a string", tok)
		}
		if seen[key] {
			*dup = append(*dup, path+key)
		}
		seen[key] = true
		if err := walkValue(dec, path+key+".", dup); err != nil {
			return err
		}
	}
}

// walkValue reads one value; objects inside it are checked.
func walkValue(dec *json.Decoder, path string, dup *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return walkObject(dec, path, dup)
	case '[':
		for dec.More() {
			if err := walkValue(dec, path, dup); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return fmt.Errorf("logcheck: unexpected %v", d)
}

// TB is the part of testing.TB that Check uses.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
}

// Check returns a Handler over next whose duplicates fail t when t's
// cleanups run (records logged after that are not checked).
func Check(t TB, next slog.Handler) *Handler {
	t.Helper()
	rec := &Recorder{}
	t.Cleanup(func() {
		for _, d := range rec.Duplicates() {
			t.Errorf("log record with a repeated key: %v", d)
		}
	})
	return NewHandler(next, rec)
}

// LogTB is what TestLogger needs of a test: TB, and Log.
type LogTB interface {
	TB
	Log(args ...any)
}

// TestLogger returns a text logger, at level, that writes through tb.Log
// and fails tb on a record with a repeated key (Check). Only for loggers
// that nothing uses once the test returned: tb.Log panics then.
func TestLogger(tb LogTB, level slog.Level) *slog.Logger {
	return slog.New(Check(tb, slog.NewTextHandler(&tbWriter{tb: tb}, &slog.HandlerOptions{Level: level})))
}

// tbWriter writes each record as one tb.Log line. Safe for concurrent use.
type tbWriter struct {
	mu sync.Mutex
	tb LogTB
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
