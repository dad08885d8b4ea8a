package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultMaxInFlight is the requests an HTTP sink has open at once when
// HTTPConfig.MaxInFlight is 0.
const DefaultMaxInFlight = 8

// Sink modes (HTTPConfig.Mode, ExecConfig.Mode).
const (
	// ModeMessage delivers one message per request or process.
	ModeMessage = "message"
	// ModeBatch delivers a batch of one partition's messages per request
	// or process, as JSON lines (the stdout sink's format).
	ModeBatch = "batch"
)

// byMode returns message() for ModeMessage or "", batch() for ModeBatch,
// and an ErrConfig naming kind (the sink) for any other mode.
func byMode(kind, mode string, message, batch func() (Sink, error)) (Sink, error) {
	switch mode {
	case "", ModeMessage:
		return message()
	case ModeBatch:
		return batch()
	}
	return nil, fmt.Errorf("%w: %s: Mode: %q is not %q or %q", ErrConfig, kind, mode, ModeMessage, ModeBatch)
}

// poster POSTs bodies to one URL over a keep-alive client, with at most
// cap(slots) requests open at once across every caller. Safe for
// concurrent use.
type poster struct {
	url   string
	shown string   // url with its password and query values hidden, for error texts
	red   redactor // hides them in errors of the transport

	timeout time.Duration
	headers map[string]string
	client  *http.Client
	slots   chan struct{} // a token per open request
}

// newPoster validates cfg and builds the poster: the caller's client, or
// one of its own keeping MaxInFlight idle connections for reuse; redirects
// are never followed.
func newPoster(cfg HTTPConfig) (*poster, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: http: URL does not parse", ErrConfig)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: http: URL %q is not an absolute http(s) URL", ErrConfig, RedactURL(cfg.URL))
	}
	if err := CheckHeaders(cfg.Headers); err != nil {
		return nil, fmt.Errorf("http: Headers: %w", err)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("%w: http: Timeout: %v is not positive", ErrConfig, cfg.Timeout)
	}
	inFlight := cfg.MaxInFlight
	switch {
	case inFlight < 0:
		return nil, fmt.Errorf("%w: http: MaxInFlight: %d is negative", ErrConfig, inFlight)
	case inFlight == 0:
		inFlight = DefaultMaxInFlight
	}
	client := cfg.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Keep a connection per request slot: with the default of 2, the
		// other requests' connections were closed after each response and
		// dialled anew. A connection goes back to the idle pool a moment
		// after its response was read: the next request waits for it
		// rather than dialling one more.
		tr.MaxIdleConnsPerHost = inFlight
		tr.MaxConnsPerHost = inFlight
		tr.MaxIdleConns = max(tr.MaxIdleConns, inFlight)
		client = &http.Client{Transport: tr}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	red := newRedactor(u, cfg.URL)
	return &poster{url: cfg.URL, shown: red.shown, red: red, timeout: cfg.Timeout, headers: cfg.Headers,
		client: &c, slots: make(chan struct{}, inFlight)}, nil
}

// post POSTs body with contentType, the headers set by meta and the
// configured headers, and classifies the answer: nil for a 2xx; an error
// for 408, 429, 5xx and transport failures; a PermanentError for any
// other status (redirects included) and for a request that cannot be
// built. It waits for a free request slot (bounded by ctx only), then
// for the response (bounded by the timeout and ctx); the response body
// is drained (up to 1 MiB) and closed so that the connection is reused.
// where names what is posted, for error texts.
func (p *poster) post(ctx context.Context, where string, body []byte, contentType string, meta func(http.Header)) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("sink: http: POST %s for %s: waiting for a request slot: %w", p.shown, where, ctx.Err())
	}
	defer func() { <-p.slots }()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return Permanent(fmt.Errorf("sink: http: request for %s: %w", where, p.red.err(err)))
	}
	req.Header.Set("Content-Type", contentType)
	if meta != nil {
		meta(req.Header)
	}
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("sink: http: POST %s for %s: %w", p.shown, where, p.red.err(err))
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		return fmt.Errorf("sink: http: POST %s for %s: %s: %q", p.shown, where, resp.Status, text)
	default:
		return Permanent(fmt.Errorf("sink: http: POST %s for %s: %s: %q", p.shown, where, resp.Status, text))
	}
}

// close closes idle connections.
func (p *poster) close() { p.client.CloseIdleConnections() }
