package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/manager"
)

// httpBatchOf returns n messages of partition 3 from offset 100, with values
// that JSON must escape or base64-encode among them.
func httpBatchOf(n int) []*manager.Message {
	values := [][]byte{[]byte("plain"), {0xff, 0xfe, 0}, []byte("line\nbreak \u2028 \"q\" <&>"), nil, []byte{}}
	out := make([]*manager.Message, n)
	for i := range out {
		out[i] = &manager.Message{Topic: "t", Partition: 3, Offset: int64(100 + i), Key: []byte(fmt.Sprint("k", i)),
			Value: values[i%len(values)], Timestamp: time.Date(2024, 5, 1, 10, 0, i, 0, time.UTC),
			Headers: []*sarama.RecordHeader{{Key: []byte("h"), Value: []byte{byte(i)}}}}
	}
	return out
}

// deliverSome hands msgs to s as one batch when s is a BatchSink, and
// msgs[0] alone otherwise.
func deliverSome(s Sink, msgs []*manager.Message) error {
	if b, ok := s.(BatchSink); ok {
		return b.DeliverBatch(context.Background(), msgs)
	}
	return s.Deliver(context.Background(), msgs[0])
}

// lines returns what the stdout sink writes for msgs.
func lines(t testing.TB, msgs []*manager.Message) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		l, err := EncodeJSONLine(m)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, l...)
	}
	return b
}

// recorder is an HTTP endpoint answering status and keeping the last
// request and its body.
type recorder struct {
	status atomic.Int32
	mu     sync.Mutex
	req    *http.Request
	body   []byte
	count  atomic.Int32
}

func newRecorder(t *testing.T) (*recorder, *httptest.Server) {
	r := &recorder{}
	r.status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.req, r.body = req, b
		r.mu.Unlock()
		r.count.Add(1)
		w.WriteHeader(int(r.status.Load()))
		_, _ = w.Write([]byte("answer"))
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *recorder) last() (*http.Request, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.req, r.body
}

func TestHTTPBatchBody(t *testing.T) {
	rec, srv := newRecorder(t)
	h, err := NewHTTPBatch(HTTPConfig{URL: srv.URL + "/in", Timeout: 5 * time.Second, Headers: map[string]string{"Authorization": "Bearer x"},
		Batch: BatchLimits{MaxMessages: 500, MaxBytes: 1 << 20, Linger: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := h.BatchLimits(); got != (BatchLimits{MaxMessages: 500, MaxBytes: 1 << 20, Linger: 5 * time.Millisecond}) {
		t.Errorf("BatchLimits = %+v", got)
	}
	msgs := httpBatchOf(23)
	if err := h.DeliverBatch(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	req, body := rec.last()
	if want := lines(t, msgs); !bytes.Equal(body, want) {
		t.Fatalf("body:\n%s\nwant the stdout lines:\n%s", body, want)
	}
	for k, v := range map[string]string{"Content-Type": "application/x-ndjson", "Authorization": "Bearer x", "X-Kafka-Topic": "t",
		"X-Kafka-Partition": "3", "X-Kafka-First-Offset": "100", "X-Kafka-Last-Offset": "122", "X-Kafka-Count": "23"} {
		if got := req.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if req.Method != http.MethodPost || req.URL.Path != "/in" {
		t.Errorf("%s %s", req.Method, req.URL.Path)
	}

	// Deliver, the handler's per-message fallback, posts one line.
	if err := h.Deliver(context.Background(), msgs[2]); err != nil {
		t.Fatal(err)
	}
	req, body = rec.last()
	if want := lines(t, msgs[2:3]); !bytes.Equal(body, want) || req.Header.Get("X-Kafka-Count") != "1" {
		t.Fatalf("Deliver posted %q (count %s), want %q", body, req.Header.Get("X-Kafka-Count"), want)
	}

	// An empty batch is nothing to send.
	n := rec.count.Load()
	if err := h.DeliverBatch(context.Background(), nil); err != nil || rec.count.Load() != n {
		t.Fatalf("empty batch: %v, %d requests", err, rec.count.Load()-n)
	}
}

// TestHTTPBatchStatus: 2xx acks; 408, 429, 5xx and transport failures are
// retriable; other statuses are permanent (the handler then falls back to
// one message at a time), in batch and message mode alike.
func TestHTTPBatchStatus(t *testing.T) {
	rec, srv := newRecorder(t)
	for _, mode := range []string{ModeBatch, ModeMessage} {
		s, err := NewHTTPSink(HTTPConfig{URL: srv.URL, Timeout: 5 * time.Second, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		deliver := func() error { return deliverSome(s, httpBatchOf(3)) }
		for _, tc := range []struct {
			status    int
			ok, retry bool
		}{
			{200, true, false}, {204, true, false}, {299, true, false},
			{408, false, true}, {429, false, true}, {500, false, true}, {502, false, true}, {503, false, true},
			{400, false, false}, {404, false, false}, {413, false, false}, {302, false, false}, {100 + 199, true, false},
		} {
			rec.status.Store(int32(tc.status))
			err := deliver()
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s %d: %v, want delivered", mode, tc.status, err)
			case !tc.ok && err == nil:
				t.Errorf("%s %d: delivered, want an error", mode, tc.status)
			case !tc.ok && errors.Is(err, ErrPermanent) == tc.retry:
				t.Errorf("%s %d: %v: permanent %v, want %v", mode, tc.status, err, !tc.retry, !tc.retry)
			case !tc.ok && !strings.Contains(err.Error(), "answer"):
				t.Errorf("%s %d: %v does not quote the response", mode, tc.status, err)
			}
		}
		s.Close()
	}
	if _, ok := mustSink(t, HTTPConfig{URL: srv.URL, Timeout: time.Second}).(BatchSink); ok {
		t.Error("message mode (the default) is a BatchSink: the handler would batch it")
	}

	// A transport failure (nothing listens) is retriable.
	url := refusedURL(t)
	b, _ := NewHTTPBatch(HTTPConfig{URL: url, Timeout: 5 * time.Second})
	if err := b.DeliverBatch(context.Background(), httpBatchOf(2)); err == nil || errors.Is(err, ErrPermanent) {
		t.Errorf("connection refused: %v, want a retriable error", err)
	}
}

func mustSink(t *testing.T, cfg HTTPConfig) Sink {
	t.Helper()
	s, err := NewHTTPSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestHTTPConfigRefused(t *testing.T) {
	for name, cfg := range map[string]HTTPConfig{
		"mode":          {URL: "http://h/", Timeout: time.Second, Mode: "stream"},
		"max in flight": {URL: "http://h/", Timeout: time.Second, MaxInFlight: -1},
		"max messages":  {URL: "http://h/", Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{MaxMessages: -1}},
		"max bytes":     {URL: "http://h/", Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{MaxBytes: -1}},
		"linger":        {URL: "http://h/", Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{Linger: -1}},
		"url":           {URL: "ftp://h/", Timeout: time.Second, Mode: ModeBatch},
		"timeout":       {URL: "http://h/", Mode: ModeBatch},
	} {
		if _, err := NewHTTPSink(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// TestHTTPKeepAlive: concurrent requests reuse about MaxInFlight
// connections; with the transport's default of 2 idle connections per
// host, the others were dialled anew for each request (33 and 40 of 240
// when measured).
func TestHTTPKeepAlive(t *testing.T) {
	for _, mode := range []string{ModeBatch, ModeMessage} {
		t.Run(mode, func(t *testing.T) {
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write(bytes.Repeat([]byte("x"), 10_000)) // a body the sink must drain
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			const inFlight = 6
			s := mustSink(t, HTTPConfig{URL: srv.URL, Timeout: 5 * time.Second, Mode: mode, MaxInFlight: inFlight})
			var wg sync.WaitGroup
			for p := 0; p < 12; p++ { // twelve partitions' workers
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						if err := deliverSome(s, httpBatchOf(10)); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			// Mostly exactly inFlight; now and then net/http dials one
			// more (seen: inFlight+1), never closing one early.
			if n := conns.Load(); n > 2*inFlight || n < 1 {
				t.Fatalf("240 requests opened %d connections, want 1 to about %d", n, inFlight)
			}
		})
	}
}

// TestHTTPInFlightBound: concurrent callers never have more than
// MaxInFlight requests open, and do reach it.
func TestHTTPInFlightBound(t *testing.T) {
	for _, mode := range []string{ModeBatch, ModeMessage} {
		t.Run(mode, func(t *testing.T) {
			var cur, peak atomic.Int32
			arrived := make(chan struct{}, 100)
			gate := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := cur.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				arrived <- struct{}{}
				<-gate
				cur.Add(-1)
			}))
			defer srv.Close()
			const inFlight = 3
			s := mustSink(t, HTTPConfig{URL: srv.URL, Timeout: 10 * time.Second, Mode: mode, MaxInFlight: inFlight})
			var wg sync.WaitGroup
			for p := 0; p < 20; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := deliverSome(s, httpBatchOf(5)); err != nil {
						t.Error(err)
					}
				}()
			}
			for i := 0; i < inFlight; i++ {
				<-arrived
			}
			close(gate)
			wg.Wait()
			if p := peak.Load(); p != inFlight {
				t.Fatalf("peak of %d requests in flight, want %d", p, inFlight)
			}
			if n := len(arrived); n != 20-inFlight {
				t.Fatalf("%d more requests arrived, want %d", n, 20-inFlight)
			}
		})
	}
}

// TestHTTPBatchCancel: a done ctx aborts a request in flight and the wait
// for a request slot.
func TestHTTPBatchCancel(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go away
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	h, err := NewHTTPBatch(HTTPConfig{URL: srv.URL, Timeout: time.Minute, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.DeliverBatch(ctx, httpBatchOf(4)) }()
	<-arrived

	// The only slot is taken: a second batch waits for it until its ctx
	// ends.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := h.DeliverBatch(ctx2, httpBatchOf(1)); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "slot") {
		t.Errorf("waiting for a slot: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
}

// TestHTTPBatchUnencodable: a message that cannot be encoded fails its
// batch permanently, so that the handler finds it alone.
func TestHTTPBatchUnencodable(t *testing.T) {
	rec, srv := newRecorder(t)
	h, err := NewHTTPBatch(HTTPConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	msgs := httpBatchOf(3)
	msgs[1].Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := h.DeliverBatch(context.Background(), msgs); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "t/3@101") {
		t.Fatalf("DeliverBatch = %v, want a permanent error naming t/3@101", err)
	}
	if err := h.Deliver(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	if err := h.Deliver(context.Background(), msgs[1]); !errors.Is(err, ErrPermanent) {
		t.Fatalf("Deliver = %v", err)
	}
	if n := rec.count.Load(); n != 1 {
		t.Fatalf("%d requests, want the one of msgs[0]", n)
	}
}
