package sink

import (
	"bytes"
	"context"
	"errors"
	"github.com/zkgroup/zkgroup/manager"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestExecOversizedKeyIsPermanent: a key or headers larger than a
// process's environment allows (E2BIG) were retried as transient forever,
// so that under on_failure stop the daemon exited at every start and the
// partition never moved. Such a message fails for good at once, and the
// failure policy decides.
func TestExecOversizedKeyIsPermanent(t *testing.T) {
	e, err := NewExec(ExecConfig{Command: []string{"/bin/true"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*manager.Message{
		"key":     {Topic: "t", Key: bytes.Repeat([]byte("k"), 256<<10), Value: []byte("v")},
		"headers": {Topic: "t", Key: []byte("k"), Headers: []*sarama.RecordHeader{{Key: []byte("h"), Value: bytes.Repeat([]byte("v"), 300<<10)}}},
	} {
		t.Run(name, func(t *testing.T) {
			err := e.Deliver(context.Background(), m)
			if !errors.Is(err, ErrPermanent) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "environment size limit") {
				t.Fatalf("Deliver = %v, want a permanent ErrTooLarge", err)
			}
			for _, policy := range []string{PolicyStop, PolicySkip} {
				h, err := NewHandler(e, Policy{MaxAttempts: 5, InitialBackoff: time.Hour, MaxBackoff: time.Hour, OnFailure: policy})
				if err != nil {
					t.Fatal(err)
				}
				out, err := h.Handle(context.Background(), m) // a retry would wait an hour
				switch policy {
				case PolicyStop:
					if !errors.Is(err, ErrStop) || !errors.Is(err, ErrTooLarge) {
						t.Fatalf("stop: %v %v", out, err)
					}
				case PolicySkip:
					if err != nil || out != Skipped {
						t.Fatalf("skip: %v %v", out, err)
					}
				}
				if st := h.Stats(); st.Errors != 1 || st.Retries != 0 {
					t.Fatalf("%s: stats %+v: retried", policy, st)
				}
			}
		})
	}
}

// TestHTTPPasswordNotLogged: the password of the sink URL was printed in
// every retry warning.
func TestHTTPPasswordNotLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	closed := refusedURL(t)
	for _, base := range []string{srv.URL, closed} {
		url := strings.Replace(base, "http://", "http://bob:hunter2@", 1) + "/in"
		for _, text := range failedTexts(t, url) {
			if strings.Contains(text, "hunter2") || !strings.Contains(text, "bob:xxxxx@") {
				t.Fatalf("password shown or URL missing: %s", text)
			}
		}
	}
	if _, err := NewHTTP(HTTPConfig{URL: "ftp://bob:hunter2@h/", Timeout: time.Second}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("NewHTTP = %v", err)
	}
}
