package sink

import (
	"context"
	"net/http"
	"strconv"

	"github.com/zkgroup/zkgroup/manager"
)

// HTTPBatch POSTs batches of one partition's messages to a URL as
// newline-delimited JSON (Content-Type application/x-ndjson), one line per
// message exactly as the stdout sink writes it (see Record), in offset
// order. Headers X-Zkgroup-Fencing-Token, X-Kafka-Topic, X-Kafka-Partition, X-Kafka-First-Offset,
// X-Kafka-Last-Offset and X-Kafka-Count describe the batch. A 2xx status
// acks the whole batch; 408, 429, 5xx and transport failures are retried
// (Retry-After is not read: the handler's backoff applies); any other
// status (redirects, which are not followed, included) is a permanent
// failure of the batch, and the handler then delivers its messages one at
// a time through Deliver (a one-line body, the same rules) to find the
// one the endpoint refuses. At most MaxInFlight requests are open at once
// over keep-alive connections, all partitions together. Safe for
// concurrent use; DeliverBatch and Deliver block until a request slot is
// free and then until the response, Timeout or ctx.
type HTTPBatch struct {
	p      *poster
	limits BatchLimits
}

// NewHTTPBatch validates cfg and returns the batching sink; cfg.Batch
// are its BatchLimits. Does not block.
func NewHTTPBatch(cfg HTTPConfig) (*HTTPBatch, error) {
	if err := checkLimits("http", cfg.Batch); err != nil {
		return nil, err
	}
	p, err := newPoster(cfg)
	if err != nil {
		return nil, err
	}
	return &HTTPBatch{p: p, limits: cfg.Batch}, nil
}

// BatchLimits returns the configured limits.
func (h *HTTPBatch) BatchLimits() BatchLimits { return h.limits }

// DeliverBatch POSTs msgs as one request. A message that cannot be
// encoded fails the batch permanently (Deliver then fails on it alone).
func (h *HTTPBatch) DeliverBatch(ctx context.Context, msgs []*manager.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	where, body, err := batchBody("http", msgs)
	if err != nil {
		return err
	}
	first, last := msgs[0], msgs[len(msgs)-1]
	return h.p.post(ctx, where, body, ContentTypeNDJSON, func(hd http.Header) {
		hd.Set("X-Kafka-Topic", first.Topic)
		hd.Set("X-Kafka-Partition", strconv.FormatInt(int64(first.Partition), 10))
		hd.Set("X-Kafka-First-Offset", strconv.FormatInt(first.Offset, 10))
		hd.Set("X-Kafka-Last-Offset", strconv.FormatInt(last.Offset, 10))
		hd.Set("X-Kafka-Count", strconv.Itoa(len(msgs)))
		hd.Set(FencingTokenHeader, strconv.FormatInt(first.FencingToken(), 10))
	})
}

// Deliver POSTs m alone as a one-line batch.
func (h *HTTPBatch) Deliver(ctx context.Context, m *manager.Message) error {
	return h.DeliverBatch(ctx, []*manager.Message{m})
}

// Close closes idle connections.
func (h *HTTPBatch) Close() error {
	h.p.close()
	return nil
}
