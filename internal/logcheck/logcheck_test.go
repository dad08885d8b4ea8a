package logcheck

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestHandlerFindsRepeatedKeys(t *testing.T) {
	var buf bytes.Buffer
	rec := &Recorder{}
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}), rec))
	g := log.With("group", "g1", "instance", "i1")
	p := g.With("topic", "t", "partition", 3)
	p.Info("fine", "offset", 5)
	p.WithGroup("req").Info("grouped keys differ", "topic", "t", slog.Group("inner", "partition", 1))
	g.Info("empty keys and groups are left out", "", 1, slog.Group("x"), slog.Group("", "offset", 2))
	if d := rec.Duplicates(); len(d) != 0 {
		t.Fatalf("duplicates in clean records: %v", d)
	}
	p.With("partition", 3).Debug("commit failed", "group", "g1", "offset", 7)
	g.Warn("msg as attribute", "msg", "x")
	p.Info("inline group", slog.Group("", "topic", "t"))
	g.Info("a group named as a key", slog.Group("instance", "id", 1))
	g.With("req", 1).WithGroup("req").Info("a WithGroup named as a key", "id", 1)
	d := rec.Duplicates()
	if len(d) != 6 {
		t.Fatalf("got %v, want 6 records", d)
	}
	if !slices.Equal(d[4].Keys, []string{"instance"}) || d[5].Message != "(WithGroup)" || !slices.Equal(d[5].Keys, []string{"req"}) {
		t.Errorf("groups: %v", d[4:])
	}
	if d[0].Message != "(WithAttrs)" || !slices.Equal(d[0].Keys, []string{"partition"}) {
		t.Errorf("With: %v", d[0])
	}
	if d[1].Message != "commit failed" || !slices.Equal(d[1].Keys, []string{"group"}) {
		t.Errorf("debug record: %v", d[1])
	}
	if !slices.Equal(d[2].Keys, []string{"msg"}) || !slices.Equal(d[3].Keys, []string{"topic"}) {
		t.Errorf("%v", d[2:])
	}
	// The wrapped handler's level still applies to what is written.
	if strings.Contains(buf.String(), "commit failed") || !strings.Contains(buf.String(), "msg as attribute") {
		t.Errorf("written: %s", buf.String())
	}
}

func TestJSONKeys(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  bool
	}{
		{`{"a":1,"b":{"a":2,"c":[{"a":1},{"a":2}]}}`, nil, false},
		{`{"group":"g","topic":"t","group":"g"}`, []string{"group"}, false},
		{`{"a":{"b":1,"b":2},"c":[{"d":1,"d":1}]}`, []string{"a.b", "c.d"}, false},
		{`[1]`, nil, true},
		{`{"a":1`, nil, true},
		{`{"a":1} x`, nil, true},
	} {
		got, err := JSONKeys([]byte(tc.line))
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v (error %v)", tc.line, got, err, tc.want, tc.err)
		}
	}
	// What slog's JSON handler writes for a repeated key is caught.
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).With("group", "g").Info("m", "group", "g")
	if got, err := JSONKeys(bytes.TrimSpace(buf.Bytes())); err != nil || !slices.Equal(got, []string{"group"}) {
		t.Errorf("slog line %s: %v %v", buf.String(), got, err)
	}
}

// fakeTB records what a TestLogger does with its test.
type fakeTB struct {
	logs, errs []string
	cleanups   []func()
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Cleanup(fn func())              { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, _ ...any) { f.errs = append(f.errs, format) }
func (f *fakeTB) Log(args ...any)                { f.logs = append(f.logs, args[0].(string)) }

// TestTestLogger: records at the level and above become one Log line each;
// a repeated key fails the test at its cleanup.
func TestTestLogger(t *testing.T) {
	tb := &fakeTB{}
	log := TestLogger(tb, slog.LevelInfo)
	log.Debug("hidden")
	log.Info("shown", "k", 1)
	log.With("k", 1).Info("repeated", "k", 2)
	if len(tb.logs) != 2 || !strings.Contains(tb.logs[0], "msg=shown k=1") || strings.HasSuffix(tb.logs[0], "\n") {
		t.Errorf("logged %q", tb.logs)
	}
	for _, fn := range tb.cleanups {
		fn()
	}
	if len(tb.errs) != 1 {
		t.Errorf("errors at cleanup %q; want the repeated key", tb.errs)
	}
}
