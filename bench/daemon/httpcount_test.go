package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"time"
)

// httpCounter is the endpoint of the HTTP sink sides: it counts each
// request as one message (per-message mode) or each ndjson record of its
// body (batch mode), waits delay per request before answering 204, and
// keeps connections alive. Requests are served concurrently, each on its
// own goroutine; it has no state but p.
type httpCounter struct {
	p      *progress
	ndjson bool
	delay  time.Duration
}

func (h *httpCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var n int64 = 1
	if h.ndjson {
		var err error
		if n, err = ndjsonLines(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	} else if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if h.delay > 0 {
		time.Sleep(h.delay)
	}
	h.p.add(n)
	w.WriteHeader(http.StatusNoContent)
}

// startHTTPCounter serves h on a free loopback port; the caller closes
// the server after the pass (Close waits for the requests in flight).
func startHTTPCounter(h *httpCounter) *httptest.Server { return httptest.NewServer(h) }
