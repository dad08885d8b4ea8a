package partition

import (
	"testing"

	"github.com/IBM/sarama"
)

// fill returns a channel of capacity 8 holding n messages (offsets 0..n-1),
// closed when closed is set.
func fill(n int, closed bool) chan *sarama.ConsumerMessage {
	ch := make(chan *sarama.ConsumerMessage, 8)
	for i := 0; i < n; i++ {
		ch <- &sarama.ConsumerMessage{Offset: int64(i)}
	}
	if closed {
		close(ch)
	}
	return ch
}

func TestTakeBuffered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		buffered, cap int
		chClosed      bool
		wantLen       int
		wantClosed    bool
		wantLeft      int
	}{
		{"empty", 0, 4, false, 1, false, 0},
		{"some", 2, 4, false, 3, false, 0},
		{"up to cap", 6, 4, false, 4, false, 3},
		{"exactly fills", 3, 4, false, 4, false, 0},
		{"closed after some", 2, 4, true, 3, true, 0},
		{"closed empty", 0, 4, true, 1, true, 0},
		{"closed beyond cap", 5, 4, true, 4, false, 2},
		{"cap one", 3, 1, false, 1, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := fill(tc.buffered, tc.chClosed)
			first := &sarama.ConsumerMessage{Offset: -1}
			got, closed := takeBuffered(ch, append(make([]*sarama.ConsumerMessage, 0, tc.cap), first))
			if len(got) != tc.wantLen || closed != tc.wantClosed {
				t.Fatalf("took %d (closed %v), want %d (closed %v)", len(got), closed, tc.wantLen, tc.wantClosed)
			}
			if got[0] != first {
				t.Error("the first message was not kept first")
			}
			for i, m := range got[1:] {
				if m.Offset != int64(i) {
					t.Errorf("message %d has offset %d, want %d (in order)", i+1, m.Offset, i)
				}
			}
			if left := len(ch); left != tc.wantLeft {
				t.Errorf("%d left in the channel, want %d", left, tc.wantLeft)
			}
		})
	}
}

// FuzzTakeBuffered checks that takeBuffered never blocks, never exceeds the
// batch's capacity, keeps order, and takes everything available up to it.
func FuzzTakeBuffered(f *testing.F) {
	f.Add(uint8(0), uint8(1), false)
	f.Add(uint8(5), uint8(3), true)
	f.Add(uint8(8), uint8(9), true)
	f.Fuzz(func(t *testing.T, buffered, capacity uint8, chClosed bool) {
		n, c := int(buffered%9), int(capacity%10)+1
		ch := fill(n, chClosed)
		got, closed := takeBuffered(ch, append(make([]*sarama.ConsumerMessage, 0, c), &sarama.ConsumerMessage{Offset: -1}))
		want := min(n+1, c)
		if len(got) != want || cap(got) != c {
			t.Fatalf("took %d (cap %d) of %d buffered with capacity %d, want %d", len(got), cap(got), n, c, want)
		}
		for i, m := range got[1:] {
			if m.Offset != int64(i) {
				t.Fatalf("message %d has offset %d", i+1, m.Offset)
			}
		}
		// The close is seen only when room is left after the buffered ones.
		if wantClosed := chClosed && n+1 < c; closed != wantClosed {
			t.Fatalf("closed = %v with %d buffered, capacity %d, channel closed %v", closed, n, c, chClosed)
		}
	})
}
