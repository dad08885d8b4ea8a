package main

import (
	"testing"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/config"
)

// TestSinkSummary: validate's summary says how the exec and http sinks
// deliver.
func TestSinkSummary(t *testing.T) {
	s := config.Default().Sink
	if got := sinkSummary(s); got != "stdout" {
		t.Errorf("stdout: %q", got)
	}
	s.Type = config.SinkExec
	if got := sinkSummary(s); got != "exec per message" {
		t.Errorf("exec: %q", got)
	}
	s.Exec.Mode = config.ModeBatch
	if got, want := sinkSummary(s), "exec in batches of up to 1000 messages or 1048576 bytes, linger 10ms"; got != want {
		t.Errorf("exec batch: %q, want %q", got, want)
	}
	s.Type = config.SinkHTTP
	if got, want := sinkSummary(s), "http per message, 8 requests in flight"; got != want {
		t.Errorf("http: %q, want %q", got, want)
	}
	s.HTTP.Mode = config.ModeBatch
	if got, want := sinkSummary(s), "http in batches of up to 500 messages or 524288 bytes, linger 5ms, 8 requests in flight"; got != want {
		t.Errorf("http batch: %q, want %q", got, want)
	}
}
