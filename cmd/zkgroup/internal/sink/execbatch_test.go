package sink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExecBatchStdin(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	s, err := NewExecSink(ExecConfig{
		Command: []string{"/bin/sh", "-c", `cat > "$OUT"; echo "$ZKGROUP_TOPIC $ZKGROUP_PARTITION $ZKGROUP_FIRST_OFFSET $ZKGROUP_LAST_OFFSET $ZKGROUP_COUNT" > "$OUT.env"`},
		Timeout: 10 * time.Second, Env: []string{"OUT=" + out, "PATH=/usr/bin:/bin"},
		Mode: ModeBatch, Batch: BatchLimits{MaxMessages: 1000, MaxBytes: 1 << 20, Linger: 10 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := s.(BatchSink)
	if !ok {
		t.Fatalf("batch mode gave a %T", s)
	}
	if got := b.BatchLimits(); got != (BatchLimits{MaxMessages: 1000, MaxBytes: 1 << 20, Linger: 10 * time.Millisecond}) {
		t.Errorf("BatchLimits = %+v", got)
	}
	msgs := httpBatchOf(57)
	if err := b.DeliverBatch(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if want := lines(t, msgs); !bytes.Equal(got, want) {
		t.Fatalf("stdin:\n%s\nwant the stdout lines:\n%s", got, want)
	}
	env, _ := os.ReadFile(out + ".env")
	if string(env) != "t 3 100 156 57\n" {
		t.Fatalf("environment %q", env)
	}

	// Deliver, the handler's per-message fallback, runs it with one line.
	if err := b.Deliver(context.Background(), msgs[1]); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(out)
	env, _ = os.ReadFile(out + ".env")
	if want := lines(t, msgs[1:2]); !bytes.Equal(got, want) || string(env) != "t 3 101 101 1\n" {
		t.Fatalf("Deliver: stdin %q env %q, want %q", got, env, want)
	}

	// Message mode (the default) is not a BatchSink, and keeps the value
	// on stdin.
	s, err = NewExecSink(ExecConfig{Command: []string{"/bin/sh", "-c", `cat > "$OUT"`}, Timeout: 10 * time.Second, Env: []string{"OUT=" + out}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(BatchSink); ok {
		t.Fatal("message mode is a BatchSink")
	}
	if err := s.Deliver(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ = os.ReadFile(out); string(got) != "plain" {
		t.Fatalf("message mode: stdin %q", got)
	}
}

// TestExecBatchExit: exit 0 acks, ExitPermanent fails permanently (the
// handler then falls back per message), other statuses and the timeout
// are retriable.
func TestExecBatchExit(t *testing.T) {
	for _, tc := range []struct {
		script        string
		ok, permanent bool
		says          string
	}{
		{"cat > /dev/null", true, false, ""},
		{"exit 0", true, false, ""}, // stdin unread: still acked
		{"cat > /dev/null; echo bad input >&2; exit 65", false, true, "exit status 65"},
		{"echo boom >&2; exit 3", false, false, "boom"},
		{"exit 1", false, false, "exit status 1"},
		{"kill -9 $$", false, false, "signal: killed"},
	} {
		b, err := NewExecBatch(ExecConfig{Command: []string{"/bin/sh", "-c", tc.script}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = b.DeliverBatch(context.Background(), httpBatchOf(300))
		switch {
		case tc.ok && err != nil:
			t.Errorf("%q: %v, want delivered", tc.script, err)
		case !tc.ok && err == nil:
			t.Errorf("%q: delivered, want an error", tc.script)
		case !tc.ok && (errors.Is(err, ErrPermanent) != tc.permanent || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%q: %v: want permanent %v, saying %q", tc.script, err, tc.permanent, tc.says)
		}
		if err := b.Deliver(context.Background(), httpBatchOf(1)[0]); (err == nil) != tc.ok || errors.Is(err, ErrPermanent) != tc.permanent {
			t.Errorf("%q: Deliver = %v", tc.script, err)
		}
	}

	b, err := NewExecBatch(ExecConfig{Command: []string{"/bin/sleep", "60"}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.DeliverBatch(context.Background(), httpBatchOf(3))
	if err == nil || errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "killed after") || time.Since(start) > 10*time.Second {
		t.Fatalf("timeout: %v after %v", err, time.Since(start))
	}

	// A message that cannot be encoded fails its batch permanently.
	msgs := httpBatchOf(3)
	msgs[2].Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	b, _ = NewExecBatch(ExecConfig{Command: []string{"/bin/true"}, Timeout: 10 * time.Second})
	if err := b.DeliverBatch(context.Background(), msgs); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "t/3@102") {
		t.Fatalf("unencodable: %v", err)
	}
}

// TestExecBatchCancel: a done ctx kills the batch's process.
func TestExecBatchCancel(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	b, err := NewExecBatch(ExecConfig{Command: []string{"/bin/sh", "-c", `touch "$STARTED"; exec sleep 60`},
		Timeout: time.Minute, Env: []string{"STARTED=" + started, "PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- b.DeliverBatch(ctx, httpBatchOf(5)) }()
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("ended before cancel: %v", err)
		case <-time.After(5 * time.Millisecond): // polling the file the child creates
		}
	}
	cancel()
	if err := <-done; err == nil || time.Since(start) > 30*time.Second {
		t.Fatalf("cancelled: %v after %v", err, time.Since(start))
	}
}

func TestExecConfigRefused(t *testing.T) {
	for name, cfg := range map[string]ExecConfig{
		"mode":         {Command: []string{"true"}, Timeout: time.Second, Mode: "stream"},
		"max messages": {Command: []string{"true"}, Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{MaxMessages: -1}},
		"max bytes":    {Command: []string{"true"}, Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{MaxBytes: -1}},
		"linger":       {Command: []string{"true"}, Timeout: time.Second, Mode: ModeBatch, Batch: BatchLimits{Linger: -1}},
		"command":      {Timeout: time.Second, Mode: ModeBatch},
		"timeout":      {Command: []string{"true"}, Mode: ModeBatch},
	} {
		if _, err := NewExecSink(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}
