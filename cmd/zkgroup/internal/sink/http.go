package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTP POSTs each message to a URL: the value as the body, the metadata in
// headers (X-Kafka-Topic, X-Kafka-Partition, X-Kafka-Offset,
// X-Kafka-Timestamp, X-Kafka-Key with X-Kafka-Key-Encoding: base64 when
// the key is not printable ASCII, X-Kafka-Headers as JSON with non-ASCII
// escaped). A 2xx status means delivered; 408, 429 and 5xx are retried;
// other statuses (including redirects, which are not followed) are
// permanent failures. Safe for concurrent use; Deliver blocks until the
// response, Timeout or ctx.
type HTTP struct {
	url   string
	shown string // url with its password hidden, for error texts

	timeout time.Duration
	headers map[string]string
	client  *http.Client
}

// HTTPConfig configures an HTTP sink.
type HTTPConfig struct {
	URL     string
	Timeout time.Duration     // per attempt
	Headers map[string]string // added to every request
	Client  *http.Client      // nil: a client of its own
}

// NewHTTP validates cfg and returns the sink. Does not block.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: http: URL does not parse", ErrConfig)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: http: URL %q is not an absolute http(s) URL", ErrConfig, u.Redacted())
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("%w: http: Timeout: %v is not positive", ErrConfig, cfg.Timeout)
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &HTTP{url: cfg.URL, shown: u.Redacted(), timeout: cfg.Timeout, headers: cfg.Headers, client: &c}, nil
}

// printable reports whether b can be sent as a header value unchanged.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// asciiJSON escapes every non-ASCII character of a JSON text.
func asciiJSON(b []byte) string {
	var out bytes.Buffer
	for _, r := range string(b) {
		if r < 0x80 {
			out.WriteRune(r)
			continue
		}
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			continue
		}
		fmt.Fprintf(&out, `\u%04x`, r)
	}
	return out.String()
}

// Deliver POSTs m once.
func (h *HTTP) Deliver(ctx context.Context, m *manager.Message) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(m.Value))
	if err != nil {
		return Permanent(fmt.Errorf("sink: http: request for %s: %w", where, redactErr(err, h.url, h.shown)))
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Kafka-Topic", m.Topic)
	req.Header.Set("X-Kafka-Partition", strconv.FormatInt(int64(m.Partition), 10))
	req.Header.Set("X-Kafka-Offset", strconv.FormatInt(m.Offset, 10))
	req.Header.Set("X-Kafka-Timestamp", m.Timestamp.UTC().Format(time.RFC3339Nano))
	if m.Key != nil {
		if printable(m.Key) {
			req.Header.Set("X-Kafka-Key", string(m.Key))
		} else {
			req.Header.Set("X-Kafka-Key", base64.StdEncoding.EncodeToString(m.Key))
			req.Header.Set("X-Kafka-Key-Encoding", Base64)
		}
	}
	if len(m.Headers) > 0 {
		b, _ := json.Marshal(NewRecord(&manager.Message{Headers: m.Headers}).Headers)
		req.Header.Set("X-Kafka-Headers", asciiJSON(b))
	}
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("sink: http: POST %s for %s: %w", h.shown, where, redactErr(err, h.url, h.shown))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		return fmt.Errorf("sink: http: POST %s for %s: %s: %q", h.shown, where, resp.Status, body)
	default:
		return Permanent(fmt.Errorf("sink: http: POST %s for %s: %s: %q", h.shown, where, resp.Status, body))
	}
}

// Close closes idle connections.
func (h *HTTP) Close() error {
	h.client.CloseIdleConnections()
	return nil
}

// redactErr replaces the full URL in err's text by its redacted form
// (net/http already strips passwords from its *url.Error, but a
// transport's own text may quote the URL); err stays unwrappable when
// nothing needed hiding.
func redactErr(err error, full, shown string) error {
	if full == shown || !strings.Contains(err.Error(), full) {
		return err
	}
	return &redactedError{text: strings.ReplaceAll(err.Error(), full, shown), err: err}
}

// redactedError is an error whose text was redacted; it unwraps to the
// original.
type redactedError struct {
	text string
	err  error
}

// Error returns the redacted text.
func (e *redactedError) Error() string { return e.text }

// Unwrap returns the original error.
func (e *redactedError) Unwrap() error { return e.err }
