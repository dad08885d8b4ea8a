package manager

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestReportDropsLoggedOnce: errors that find Errors() full are all
// counted, and logged once per dropLogEvery with the count, not once each
// (a broker failing a fetch of thousands of partitions reports as many).
func TestReportDropsLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	cfg := NewConfig()
	cfg.ErrorsBufferSize = 2
	c := &Consumer{log: slog.New(slog.NewTextHandler(&buf, nil)), outputs: newOutputs(cfg)}
	start := time.Now()
	for range 1000 {
		c.report(errors.New("boom"))
	}
	most := 1 + int(time.Since(start)/dropLogEvery) // a machine that slow logs again
	if got := len(c.errors); got != 2 {
		t.Errorf("%d errors buffered, want 2", got)
	}
	if got := c.droppedErrors.Load(); got != 998 {
		t.Errorf("%d errors counted as dropped, want 998", got)
	}
	lines := strings.Count(buf.String(), "errors dropped")
	if lines < 1 || lines > most || !strings.Contains(buf.String(), "dropped=1\n") {
		t.Errorf("%d lines logged, want 1 to %d, the first with dropped=1:\n%s", lines, most, buf.String())
	}
}
