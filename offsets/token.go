package offsets

import (
	"context"
	"strconv"
	"strings"
)

// A fencing token names the claim a commit was written under: zkgroup
// uses the czxid of the partition's owner node, which grows with every
// new claim of the partition, so that a commit written under an older
// claim can be told from one written under a newer one. A KafkaStore
// stores it as the commit's metadata (FormatToken), which Kafka keeps
// with the offset and returns with it; ZooKeeperStore keeps Kafka's
// layout (the offset alone) and stores none: its versioned writes never
// move an offset backwards whenever they land.

// tokenPrefix starts a commit's metadata that carries a token.
const tokenPrefix = "zkgroup:claim="

// FormatToken returns the commit metadata that carries token (0: "").
// Pure.
func FormatToken(token int64) string {
	if token == 0 {
		return ""
	}
	return tokenPrefix + strconv.FormatInt(token, 10)
}

// ParseToken returns the token in a commit's metadata, and false when the
// metadata carries none (written by another client, or empty). Pure.
func ParseToken(metadata string) (int64, bool) {
	rest, ok := strings.CutPrefix(metadata, tokenPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

type tokenKey struct{}

// WithToken returns a context that makes Commit and Reset write token as
// the fencing token of the commit (CommitBatch takes it per entry, in
// Offset.Token). Pure.
func WithToken(ctx context.Context, token int64) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// tokenFrom returns the token WithToken put in ctx, or 0.
func tokenFrom(ctx context.Context) int64 {
	t, _ := ctx.Value(tokenKey{}).(int64)
	return t
}
