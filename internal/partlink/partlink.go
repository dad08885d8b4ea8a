// Package partlink lets internal/partition (and manager through it) build
// the values of package partition, public, whose unexported fields only
// partition can set and which cannot import them (they import it):
// partition registers a Link in its init, internal/partition takes it with
// Get. No unsafe, no reflection, and the type parameters (partition's own
// types) let the compiler check both sides. This package imports neither.
package partlink

import (
	"context"
	"iter"
	"time"
)

// Link builds package partition's values (M its Message, B its Batch, S
// its Stream, R its AckResult).
type Link[M, B, S, R any] interface {
	// InitBatch makes *b the batch of msgs (in offset order, at least
	// one) of topic/partition, handed out by owner: b.Messages points at
	// msgs' elements, and each of them points back at b.
	InitBatch(b *B, topic string, partition int32, msgs []M, owner Owner[M, R])
	// NewStream returns the stream of one ownership of topic/partition,
	// whose methods run on src.
	NewStream(topic string, partition int32, generation uint64, src Source[M, B]) *S
}

// Owner is what hands out batches of messages (M) and counts their acks,
// with results R: a partition manager.
type Owner[M, R any] interface {
	// Ack acks the handed-out message at offset.
	Ack(offset int64) R
	// AckBatch acks msgs[*acked:] at or below offset, under one lock,
	// and moves *acked past them; *acked is read and written under that
	// lock only.
	AckBatch(msgs []*M, acked *int, offset int64) R
	// Abandon says the handed-out message at offset will not be acked.
	Abandon(offset int64)
	// Generation identifies the ownership.
	Generation() uint64
	// FencingToken is the ownership's claim token (0: none).
	FencingToken() int64
}

// Source is what a Stream (of messages M, batches B) runs on: one
// ownership's batch channel and its partition manager.
type Source[M, B any] interface {
	Each(ctx context.Context) iter.Seq2[*M, error]
	Poll(ctx context.Context) (*B, error)
	Commit(ctx context.Context) error
	Seek(ctx context.Context, offset int64) error
	SeekTime(ctx context.Context, t time.Time) error
	Pause(ctx context.Context) error
	Resume()
}

// link is the registered Link.
var link any

// Register sets the Link; package partition calls it once, in its init.
func Register[M, B, S, R any](l Link[M, B, S, R]) { link = l }

// Get returns the registered Link. Package partition's init has run when a
// package that imports it calls Get, even from a package-level variable's
// initializer: imported packages are initialized first.
func Get[M, B, S, R any]() Link[M, B, S, R] { return link.(Link[M, B, S, R]) }
