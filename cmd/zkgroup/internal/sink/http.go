package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/zkgroup/zkgroup/manager"
	"net/http"
	"strconv"
	"time"
)

// HTTP POSTs each message to a URL: the value as the body, the metadata in
// headers (X-Zkgroup-Fencing-Token, X-Kafka-Topic, X-Kafka-Partition, X-Kafka-Offset,
// X-Kafka-Timestamp, X-Kafka-Key with X-Kafka-Key-Encoding: base64 when
// the key is not printable ASCII, X-Kafka-Headers as JSON with non-ASCII
// escaped). A 2xx status means delivered; 408, 429 and 5xx are retried;
// other statuses (including redirects, which are not followed) are
// permanent failures. At most MaxInFlight requests are open at once, over
// keep-alive connections. Safe for concurrent use; Deliver blocks until a
// request slot is free and then until the response, Timeout or ctx.
type HTTP struct {
	p *poster
}

// HTTPConfig configures an HTTP sink.
type HTTPConfig struct {
	URL     string
	Timeout time.Duration     // per attempt (request), not counting the wait for a slot
	Headers map[string]string // added to every request
	Client  *http.Client      // nil: a client of its own, keeping MaxInFlight idle connections
	// Mode is ModeMessage ("" too) or ModeBatch; NewHTTPSink picks the
	// sink by it, NewHTTP and NewHTTPBatch ignore it.
	Mode string
	// Batch bounds the batches of ModeBatch (see BatchLimits).
	Batch BatchLimits
	// MaxInFlight bounds the requests open at once, all callers
	// together; 0: DefaultMaxInFlight.
	MaxInFlight int
}

// NewHTTPSink returns the sink of cfg.Mode: an *HTTP for ModeMessage or
// "", an *HTTPBatch for ModeBatch. Does not block.
func NewHTTPSink(cfg HTTPConfig) (Sink, error) {
	return byMode("http", cfg.Mode,
		func() (Sink, error) { return NewHTTP(cfg) },
		func() (Sink, error) { return NewHTTPBatch(cfg) })
}

// NewHTTP validates cfg and returns the per-message sink. Does not block.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	p, err := newPoster(cfg)
	if err != nil {
		return nil, err
	}
	return &HTTP{p: p}, nil
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
	where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
	return h.p.post(ctx, where, m.Value, "application/octet-stream", func(hd http.Header) {
		hd.Set("X-Kafka-Topic", m.Topic)
		hd.Set("X-Kafka-Partition", strconv.FormatInt(int64(m.Partition), 10))
		hd.Set("X-Kafka-Offset", strconv.FormatInt(m.Offset, 10))
		hd.Set("X-Kafka-Timestamp", m.Timestamp.UTC().Format(time.RFC3339Nano))
		hd.Set(FencingTokenHeader, strconv.FormatInt(m.FencingToken(), 10))
		if m.Key != nil {
			if printable(m.Key) {
				hd.Set("X-Kafka-Key", string(m.Key))
			} else {
				hd.Set("X-Kafka-Key", base64.StdEncoding.EncodeToString(m.Key))
				hd.Set("X-Kafka-Key-Encoding", Base64)
			}
		}
		if len(m.Headers) > 0 {
			b, _ := json.Marshal(NewRecord(&manager.Message{Headers: m.Headers}).Headers)
			hd.Set("X-Kafka-Headers", asciiJSON(b))
		}
	})
}

// Close closes idle connections.
func (h *HTTP) Close() error {
	h.p.close()
	return nil
}

// FencingTokenHeader carries the claim's fencing token of the message (or
// of the batch: one partition's, one claim's) in the http sinks' requests.
const FencingTokenHeader = "X-Zkgroup-Fencing-Token"
