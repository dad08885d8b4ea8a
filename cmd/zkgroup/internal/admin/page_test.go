package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"github.com/zkgroup/zkgroup/manager"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

// TestPage: the page is one self-contained file: no external resource,
// its inline style and script allowed by hash and nothing else.
func TestPage(t *testing.T) {
	code, body, hdr := do(t, New(Config{Group: "g"}).Handler(), "GET", "/", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(body, `id="members"`) {
		t.Fatalf("%d %q", code, hdr)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`).FindString(body); m != "" {
		t.Errorf("the page loads an external resource: %s", m)
	}
	if strings.Contains(body, "<script src") || strings.Contains(body, "<link") {
		t.Error("the page is not self-contained")
	}
	csp := hdr.Get("Content-Security-Policy")
	for _, tag := range []string{"style", "script"} {
		i, j := strings.Index(body, "<"+tag+">"), strings.Index(body, "</"+tag+">")
		sum := sha256.Sum256([]byte(body[i+len(tag)+2 : j]))
		if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, tag+"-src "+want) {
			t.Errorf("CSP %q lacks %s %s", csp, tag, want)
		}
	}
	if strings.Count(body, "<script") != 1 || strings.Contains(csp, "unsafe") {
		t.Errorf("one inline script, no unsafe source: %q", csp)
	}
}

type fakeSink struct{ err error }

func (f fakeSink) Deliver(context.Context, *manager.Message) error { return f.err }
func (f fakeSink) Close() error                                    { return nil }

type fakeHandler struct {
	o   sink.Outcome
	err error
}

func (f fakeHandler) Handle(context.Context, *manager.Message) (sink.Outcome, error) {
	time.Sleep(time.Millisecond) // a sink that takes time
	return f.o, f.err
}

func TestSinkTimer(t *testing.T) {
	st := NewSinkTimer("g")
	s := New(Config{Group: "g", SinkTimer: st})
	ctx := t.Context()
	_ = st.WrapSink(fakeSink{}).Deliver(ctx, nil)
	_ = st.WrapSink(fakeSink{errors.New("down")}).Deliver(ctx, nil)
	_, _ = st.WrapHandler(fakeHandler{o: sink.Delivered}).Handle(ctx, nil)
	_, _ = st.WrapHandler(fakeHandler{o: sink.DeadLettered}).Handle(ctx, nil)
	_, _ = st.WrapHandler(fakeHandler{err: sink.ErrStop}).Handle(ctx, nil)
	_, body, _ := do(t, s.Handler(), "GET", "/metrics", "")
	for _, want := range []string{
		`zkgroup_sink_attempt_duration_seconds_count{group="g",result="ok"} 1`,
		`zkgroup_sink_attempt_duration_seconds_count{group="g",result="error"} 1`,
		`zkgroup_sink_message_duration_seconds_count{group="g",outcome="delivered"} 1`,
		`zkgroup_sink_message_duration_seconds_count{group="g",outcome="dead_lettered"} 1`,
		`zkgroup_sink_message_duration_seconds_count{group="g",outcome="failed"} 1`,
		`zkgroup_sink_message_duration_seconds_bucket{group="g",outcome="delivered",le="0.0005"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
