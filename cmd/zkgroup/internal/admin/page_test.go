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

// fakeBatchHandler takes batches; fails those holding offset 13.
type fakeBatchHandler struct{ fakeHandler }

func (fakeBatchHandler) HandleBatch(_ context.Context, msgs []*manager.Message) (int, error) {
	for i, m := range msgs {
		if m.Offset == 13 {
			return i, sink.ErrStop
		}
	}
	return len(msgs), nil
}

func (fakeBatchHandler) BatchLimits() (sink.BatchLimits, bool) {
	return sink.BatchLimits{MaxMessages: 5}, true
}

// fakeBatchSink is a BatchSink.
type fakeBatchSink struct{ fakeSink }

func (f fakeBatchSink) DeliverBatch(context.Context, []*manager.Message) error { return f.err }
func (fakeBatchSink) BatchLimits() sink.BatchLimits                            { return sink.BatchLimits{Linger: time.Second} }

// TestSinkTimerBatches: the wrapped sink stays a BatchSink and its batch
// attempts are timed; batches handled are timed and sized.
func TestSinkTimerBatches(t *testing.T) {
	st := NewSinkTimer("g", "http")
	s := New(Config{Group: "g", SinkTimer: st})
	ctx := t.Context()
	bs, ok := st.WrapSink(fakeBatchSink{}).(sink.BatchSink)
	if !ok || bs.BatchLimits().Linger != time.Second {
		t.Fatalf("WrapSink hid the BatchSink: %T", st.WrapSink(fakeBatchSink{}))
	}
	_ = bs.DeliverBatch(ctx, nil)
	if _, ok := st.WrapSink(fakeSink{}).(sink.BatchSink); ok {
		t.Fatal("WrapSink made a plain sink a BatchSink")
	}
	h := st.WrapHandler(fakeBatchHandler{})
	if l, ok := h.BatchLimits(); !ok || l.MaxMessages != 5 {
		t.Fatalf("BatchLimits %+v %v", l, ok)
	}
	if _, ok := st.WrapHandler(fakeHandler{}).BatchLimits(); ok {
		t.Fatal("a plain handler takes batches once wrapped")
	}
	msgs := []*manager.Message{{Offset: 11, Value: make([]byte, 300)}, {Offset: 12, Key: make([]byte, 1000)}}
	if n, err := h.HandleBatch(ctx, msgs); n != 2 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
	if n, err := h.HandleBatch(ctx, append(msgs, &manager.Message{Offset: 13})); n != 2 || !errors.Is(err, sink.ErrStop) {
		t.Fatalf("%d %v", n, err)
	}
	_, body, _ := do(t, s.Handler(), "GET", "/metrics", "")
	for _, want := range []string{
		`zkgroup_sink_attempt_duration_seconds_count{group="g",result="ok"} 1`,
		`zkgroup_sink_batch_duration_seconds_count{group="g",result="ok",sink="http"} 1`,
		`zkgroup_sink_batch_duration_seconds_count{group="g",result="failed",sink="http"} 1`,
		`zkgroup_sink_batch_messages_bucket{group="g",sink="http",le="2"} 1`,
		`zkgroup_sink_batch_messages_sum{group="g",sink="http"} 5`,
		`zkgroup_sink_batch_bytes_bucket{group="g",sink="http",le="1024"} 0`,
		`zkgroup_sink_batch_bytes_sum{group="g",sink="http"} 2600`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestSinkTimer(t *testing.T) {
	st := NewSinkTimer("g", "stdout")
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
