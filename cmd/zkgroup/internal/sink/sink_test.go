package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/zkgroup/zkgroup/manager"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func msg(value []byte) *manager.Message {
	return &manager.Message{Topic: "t", Partition: 3, Offset: 42, Key: []byte("k1"), Value: value,
		Timestamp: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		Headers:   []*sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}}}
}

func TestEncodeJSONLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"utf8", []byte("héllo"), `"value":"héllo","headers"`},
		{"binary", []byte{0xff, 0x00, 0x01}, `"value":"/wAB","value_encoding":"base64"`},
		{"nil", nil, `"value":null`},
		{"empty", []byte{}, `"value":""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeJSONLine(msg(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if !strings.HasSuffix(s, "}\n") || strings.Count(s, "\n") != 1 {
				t.Fatalf("not one line: %q", s)
			}
			for _, w := range []string{`"topic":"t"`, `"partition":3`, `"offset":42`, `"timestamp":"2024-05-01T10:00:00Z"`, `"key":"k1"`, tc.want, `"headers":[{"key":"h","value":"v"}]`} {
				if !strings.Contains(s, w) {
					t.Errorf("%s lacks %s", s, w)
				}
			}
		})
	}
}

// FuzzRecordRoundTrip: any key and value come back byte for byte from the
// JSON line.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add([]byte("k"), []byte("v"))
	f.Add([]byte{0xff}, []byte{0xc3, 0x28})
	f.Add([]byte(""), []byte("\x00\n\"\\"))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		b, err := EncodeJSONLine(&manager.Message{Topic: "t", Key: key, Value: value})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte("\n")) != 1 {
			t.Fatalf("line breaks in %q", b)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		decode := func(s *string, enc string) []byte {
			if s == nil {
				return nil
			}
			if enc == Base64 {
				d, err := base64.StdEncoding.DecodeString(*s)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			return []byte(*s)
		}
		if got := decode(r.Key, r.KeyEncoding); !bytes.Equal(got, key) || (got == nil) != (key == nil) {
			t.Fatalf("key %q -> %q", key, got)
		}
		if got := decode(r.Value, r.ValueEncoding); !bytes.Equal(got, value) {
			t.Fatalf("value %q -> %q", value, got)
		}
	})
}

func TestStdout(t *testing.T) {
	var buf bytes.Buffer
	s := NewStdout(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Deliver(context.Background(), msg([]byte(strings.Repeat("x", 1000)))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved line %q", l[:50])
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStdoutWriteError(t *testing.T) {
	err := NewStdout(failWriter{}).Deliver(context.Background(), msg([]byte("v")))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	e, err := NewExec(ExecConfig{
		Command: []string{"/bin/sh", "-c", `{ echo "$ZKGROUP_TOPIC $ZKGROUP_PARTITION $ZKGROUP_OFFSET $ZKGROUP_KEY $ZKGROUP_KEY_ENCODING $ZKGROUP_HEADERS"; cat; } > "$OUT"`},
		Timeout: 10 * time.Second,
		Env:     []string{"OUT=" + out, "PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Deliver(context.Background(), msg([]byte("the value"))); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if want := "t 3 42 k1  [{\"key\":\"h\",\"value\":\"v\"}]\nthe value"; string(b) != want {
		t.Fatalf("child saw %q, want %q", b, want)
	}
	m := msg(nil)
	m.Key = []byte{0, 1}
	if err := e.Deliver(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(out)
	if !strings.HasPrefix(string(b), "t 3 42 AAE= base64 ") {
		t.Fatalf("binary key: child saw %q", b)
	}
}

func TestExecFailures(t *testing.T) {
	e, _ := NewExec(ExecConfig{Command: []string{"/bin/sh", "-c", "echo boom >&2; exit 3"}, Timeout: 10 * time.Second})
	err := e.Deliver(context.Background(), msg([]byte("v")))
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	e, _ = NewExec(ExecConfig{Command: []string{"/bin/sleep", "10"}, Timeout: 100 * time.Millisecond})
	start := time.Now()
	err = e.Deliver(context.Background(), msg([]byte("v")))
	if err == nil || !strings.Contains(err.Error(), "killed after") || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if _, err := NewExec(ExecConfig{Timeout: time.Second}); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty command: %v", err)
	}
}

func TestHTTP(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	h, err := NewHTTP(HTTPConfig{URL: srv.URL + "/in", Timeout: 5 * time.Second, Headers: map[string]string{"Authorization": "Bearer x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	m := msg([]byte("payload"))
	m.Headers = append(m.Headers, &sarama.RecordHeader{Key: []byte("é"), Value: []byte("ü")})
	if err := h.Deliver(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if got.Method != "POST" || got.URL.Path != "/in" || string(body) != "payload" {
		t.Fatalf("%s %s %q", got.Method, got.URL.Path, body)
	}
	for k, v := range map[string]string{"X-Kafka-Topic": "t", "X-Kafka-Partition": "3", "X-Kafka-Offset": "42", "X-Kafka-Key": "k1",
		"Authorization": "Bearer x", "X-Kafka-Headers": `[{"key":"h","value":"v"},{"key":"\u00e9","value":"\u00fc"}]`} {
		if got.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, got.Header.Get(k), v)
		}
	}
	status.Store(503)
	if err := h.Deliver(context.Background(), m); err == nil || errors.Is(err, ErrPermanent) {
		t.Errorf("503: %v, want a retriable error", err)
	}
	status.Store(400)
	if err := h.Deliver(context.Background(), m); !errors.Is(err, ErrPermanent) {
		t.Errorf("400: %v, want permanent", err)
	}
	status.Store(302)
	if err := h.Deliver(context.Background(), m); !errors.Is(err, ErrPermanent) {
		t.Errorf("302: %v, want permanent (redirects not followed)", err)
	}
	if _, err := NewHTTP(HTTPConfig{URL: "ftp://x", Timeout: time.Second}); !errors.Is(err, ErrConfig) {
		t.Errorf("ftp URL: %v", err)
	}
}

// flaky fails its first n deliveries of every offset.
type flaky struct {
	mu    sync.Mutex
	fails int
	seen  map[int64]int
	err   error
}

func (f *flaky) Deliver(_ context.Context, m *manager.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[m.Offset]++
	if f.seen[m.Offset] <= f.fails {
		return f.err
	}
	return nil
}
func (f *flaky) Close() error { return nil }

type fakeDL struct {
	got []int64
	err error
}

func (d *fakeDL) DeadLetter(_ context.Context, m *manager.Message, _ error) error {
	if d.err != nil {
		return d.err
	}
	d.got = append(d.got, m.Offset)
	return nil
}
func (d *fakeDL) Close() error { return nil }

func newTestHandler(t *testing.T, s Sink, p Policy) (*Handler, *[]time.Duration) {
	t.Helper()
	h, err := NewHandler(s, p)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	h.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
	return h, &waits
}

func TestHandler(t *testing.T) {
	boom := errors.New("boom")
	base := Policy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 250 * time.Millisecond}
	t.Run("transient failure retried", func(t *testing.T) {
		p := base
		p.OnFailure = PolicyStop
		h, waits := newTestHandler(t, &flaky{fails: 3, seen: map[int64]int{}, err: boom}, p)
		out, err := h.Handle(context.Background(), msg(nil))
		if err != nil || out != Delivered {
			t.Fatalf("%v %v", out, err)
		}
		checkWaits(t, *waits, 100*time.Millisecond, 200*time.Millisecond, 250*time.Millisecond)
		if st := h.Stats(); st.Delivered != 1 || st.Errors != 3 || st.Retries != 3 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("stop", func(t *testing.T) {
		p := base
		p.OnFailure = PolicyStop
		h, _ := newTestHandler(t, &flaky{fails: 10, seen: map[int64]int{}, err: boom}, p)
		_, err := h.Handle(context.Background(), msg(nil))
		if !errors.Is(err, ErrStop) || !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if st := h.Stats(); st.Failed != 1 || st.Errors != 4 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("permanent not retried", func(t *testing.T) {
		p := base
		p.OnFailure = PolicySkip
		f := &flaky{fails: 10, seen: map[int64]int{}, err: Permanent(boom)}
		h, _ := newTestHandler(t, f, p)
		out, err := h.Handle(context.Background(), msg(nil))
		if err != nil || out != Skipped || f.seen[42] != 1 {
			t.Fatalf("%v %v, %d attempts", out, err, f.seen[42])
		}
	})
	t.Run("dead-letter", func(t *testing.T) {
		p := base
		p.OnFailure = PolicyDeadLetter
		dl := &fakeDL{}
		p.DeadLetter = dl
		h, _ := newTestHandler(t, &flaky{fails: 10, seen: map[int64]int{}, err: boom}, p)
		out, err := h.Handle(context.Background(), msg(nil))
		if err != nil || out != DeadLettered || len(dl.got) != 1 {
			t.Fatalf("%v %v %v", out, err, dl.got)
		}
		dl.err = errors.New("kafka down")
		_, err = h.Handle(context.Background(), msg(nil))
		if !errors.Is(err, ErrStop) || !strings.Contains(err.Error(), "kafka down") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		p := base
		p.OnFailure = PolicySkip
		h, _ := newTestHandler(t, &flaky{fails: 10, seen: map[int64]int{}, err: boom}, p)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := h.Handle(ctx, msg(nil)); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v (a canceled message must not be skipped)", err)
		}
	})
	for _, bad := range []Policy{{}, {MaxAttempts: 1, InitialBackoff: 1, MaxBackoff: 0, OnFailure: PolicyStop},
		{MaxAttempts: 1, InitialBackoff: 1, MaxBackoff: 1, OnFailure: "x"}, {MaxAttempts: 1, InitialBackoff: 1, MaxBackoff: 1, OnFailure: PolicyDeadLetter}} {
		if _, err := NewHandler(NewStdout(io.Discard), bad); !errors.Is(err, ErrConfig) {
			t.Errorf("NewHandler(%+v) = %v", bad, err)
		}
	}
}

// checkWaits fails t unless waits are the intervals want, each jittered
// by at most ±retry.Jitter (50 %).
func checkWaits(t *testing.T, waits []time.Duration, want ...time.Duration) {
	t.Helper()
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want about %v", waits, want)
	}
	for i, w := range waits {
		if w < want[i]/2 || w > want[i]*3/2+1 {
			t.Fatalf("wait %d is %v, want %v ± 50%% (waits %v)", i, w, want[i], waits)
		}
	}
}

// TestBackoffJittered: the handler's waits are jittered, so that
// partitions failing together do not retry in step.
func TestBackoffJittered(t *testing.T) {
	p := Policy{MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: time.Second, OnFailure: PolicySkip}
	seen := map[time.Duration]bool{}
	for range 20 {
		h, waits := newTestHandler(t, &flaky{fails: 10, seen: map[int64]int{}, err: errors.New("boom")}, p)
		if _, err := h.Handle(context.Background(), msg(nil)); err != nil {
			t.Fatal(err)
		}
		checkWaits(t, *waits, time.Second)
		seen[(*waits)[0]] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 handlers waited the same %v", seen)
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {5, 10 * time.Second}, {100, 10 * time.Second}} {
		if got := Backoff(tc.n, time.Second, 10*time.Second); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestDeadLetterMessage(t *testing.T) {
	pm := Message("dlq", "g", msg([]byte("v")), errors.New("why"))
	hs := map[string]string{}
	for _, h := range pm.Headers {
		hs[string(h.Key)] = string(h.Value)
	}
	if pm.Topic != "dlq" || hs["h"] != "v" || hs[HeaderSourceTopic] != "t" || hs[HeaderSourcePartition] != "3" ||
		hs[HeaderSourceOffset] != "42" || hs[HeaderError] != "why" || hs[HeaderGroup] != "g" {
		t.Fatalf("%+v %v", pm, hs)
	}
}

// refusedURL returns an http URL where nothing listens (a connection to
// it is refused).
func refusedURL(t *testing.T) string {
	t.Helper()
	return "http://" + testcluster.RefusedAddr(t)
}

// failedTexts delivers one message through an http sink to url (which
// fails it) with two attempts and returns what a reader sees of it: the
// error of the failed delivery and the handler's log.
func failedTexts(t *testing.T, url string) []string {
	t.Helper()
	s, err := NewHTTP(HTTPConfig{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h, err := NewHandler(s, Policy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		OnFailure: PolicyStop, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = h.Handle(context.Background(), msg([]byte("v"))); err == nil {
		t.Fatal("delivered to a failing server")
	}
	return []string{err.Error(), logs.String()}
}
