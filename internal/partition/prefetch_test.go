package partition

import (
	"log/slog"
	"testing"

	"github.com/IBM/sarama"
)

// closeRecorder is a PartitionConsumer that records Close.
type closeRecorder struct {
	sarama.PartitionConsumer
	closed bool
}

func (p *closeRecorder) Close() error { p.closed = true; return nil }

// TestUsePrefetched: a consumer opened before the claim is used only when
// it starts where the claimed partition must (the committed offset read
// after the claim, or the same Initial position when there is none), and
// closed otherwise.
func TestUsePrefetched(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pre      Prefetched
		pos      int64
		want     bool
		wantFrom int64
	}{
		{"same committed offset", Prefetched{Offset: 42}, 42, true, 42},
		{"committed offset moved since", Prefetched{Offset: 42}, 57, false, 0},
		{"committed since, none before", Prefetched{Offset: 0, Initial: sarama.OffsetOldest}, 0, true, 0},
		{"committed since, none before, elsewhere", Prefetched{Offset: 3, Initial: sarama.OffsetOldest}, 10, false, 0},
		{"none committed, oldest", Prefetched{Offset: 7, Initial: sarama.OffsetOldest}, sarama.OffsetOldest, true, 7},
		{"none committed, newest", Prefetched{Offset: 90, Initial: sarama.OffsetNewest}, sarama.OffsetNewest, true, 90},
		{"committed before, none now", Prefetched{Offset: 42}, sarama.OffsetOldest, false, 0},
		{"initial policy differs", Prefetched{Offset: 7, Initial: sarama.OffsetOldest}, sarama.OffsetNewest, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := &closeRecorder{}
			pre := tc.pre
			pre.PC = pc
			m := &Manager{log: slog.New(slog.DiscardHandler)}
			got, from := m.usePrefetched(&pre, tc.pos)
			if (got != nil) != tc.want {
				t.Fatalf("used = %v, want %v", got != nil, tc.want)
			}
			if tc.want && from != tc.wantFrom {
				t.Errorf("starts at %d, want %d", from, tc.wantFrom)
			}
			if pc.closed == tc.want {
				t.Errorf("closed = %v, want %v", pc.closed, !tc.want)
			}
		})
	}
}
