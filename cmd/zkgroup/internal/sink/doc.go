// Package sink delivers consumed Kafka messages somewhere: to stdout as
// JSON lines, to a command run per message or per batch (JSON lines on its
// stdin), or to an HTTP endpoint, one POST per message or per batch
// (newline-delimited JSON). A Handler wraps a Sink with retries
// (exponential backoff) and a failure policy (stop, skip or dead-letter)
// and counts what happened; the caller acks a message only once Handle
// said it may.
package sink
