package partition

import (
	"github.com/zkgroup/zkgroup/internal/partlink"
	public "github.com/zkgroup/zkgroup/partition"
)

// The per-partition types an embedder touches are package partition's
// (public; see partlink for how this package builds them). This package
// names them as its own.
type (
	Message   = public.Message
	AckResult = public.AckResult
	Config    = public.Config
	Stats     = public.Stats
	Error     = public.Error
)

// Ack results (public.AckResult).
const (
	AckOK        = public.AckOK
	AckDuplicate = public.AckDuplicate
	AckStale     = public.AckStale
	AckUnknown   = public.AckUnknown
	AckInvalid   = public.AckInvalid
)

// NewConfig returns the defaults (public.NewConfig).
func NewConfig() Config { return public.NewConfig() }

// pub builds package partition's values: batches (Handout) and streams.
var pub = partlink.Get[public.Message, public.Batch, public.Stream, public.AckResult]()

// A Manager is the owner of the batches and messages it hands out.
var _ partlink.Owner[Message, AckResult] = (*Manager)(nil)

// Source is what a public Stream runs on: the consumer's side of one
// ownership's stream (its batch channel and Manager).
type Source = partlink.Source[Message, public.Batch]

// NewStream returns the public stream of one ownership of
// topic/partition, running on src.
func NewStream(topic string, partition int32, generation uint64, src Source) *public.Stream {
	return pub.NewStream(topic, partition, generation, src)
}
