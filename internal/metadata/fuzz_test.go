package metadata

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/internal/retry"
)

// viewFromBytes builds a small view from fuzz input: each byte pair is a
// topic (a..d) with a partition count and leader.
func viewFromBytes(b []byte) map[string][]Partition {
	v := map[string][]Partition{}
	for i := 0; i+1 < len(b); i += 2 {
		topic := string(rune('a' + b[i]%4))
		n := int(b[i] / 4 % 4)
		if n == 0 {
			v[topic] = nil
			continue
		}
		v[topic] = nil
		for p := range n {
			v[topic] = append(v[topic], Partition{Topic: topic, ID: int32(p), Leader: int32(b[i+1]%3) - 1, Replicas: []int32{int32(b[i+1] % 5)}})
		}
	}
	return v
}

func FuzzDiffViews(f *testing.F) {
	f.Add([]byte{0, 1, 5, 2}, []byte{0, 1})
	f.Add([]byte{}, []byte{9, 9, 200, 3})
	f.Add([]byte{4, 1}, []byte{4, 2})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, vb := viewFromBytes(a), viewFromBytes(b)
		if c := diffViews(va, viewFromBytes(a)); !c.empty() {
			t.Fatalf("a view differs from another built from the same bytes: %+v", c)
		}
		ab, ba := diffViews(va, vb), diffViews(vb, va)
		if ab.empty() != ba.empty() || strings.Join(ab.added, ",") != strings.Join(ba.removed, ",") ||
			strings.Join(ab.replicas, ",") != strings.Join(ba.replicas, ",") || strings.Join(ab.resized, ",") != strings.Join(ba.resized, ",") {
			t.Fatalf("diff not symmetric: %+v vs %+v", ab, ba)
		}
		// empty() means equal: every topic has the same partitions.
		if ab.empty() {
			for t0, ps := range va {
				qs, ok := vb[t0]
				if !ok || len(ps) != len(qs) {
					t.Fatalf("empty diff but topic %s differs", t0)
				}
				for i := range ps {
					if ps[i].Leader != qs[i].Leader || ps[i].Replicas[0] != qs[i].Replicas[0] {
						t.Fatalf("empty diff but %s/%d differs", t0, i)
					}
				}
			}
		}
	})
}

// FuzzSchedule drives the schedule with events, resyncs and refresh
// results and checks that it never asks for a refresh in the past after
// one finished (no spinning) and never waits longer than the jittered
// resync interval.
func FuzzSchedule(f *testing.F) {
	f.Add(int64(100), int64(2000), []byte{0, 1, 2, 3, 4, 5})
	f.Add(int64(0), int64(100), []byte{1, 1, 1, 1})
	f.Add(int64(5000), int64(100), []byte{2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, debounceMs, pollMs int64, ops []byte) {
		debounce := time.Duration(debounceMs%10000) * time.Millisecond
		if debounce < 0 {
			debounce = -debounce
		}
		poll := 100*time.Millisecond + time.Duration(abs(pollMs)%10000)*time.Millisecond
		longest := poll + time.Duration(float64(poll)*retry.Jitter)
		now := time.Unix(0, 0)
		s := newSchedule(debounce, poll, now)
		for _, op := range ops {
			now = now.Add(time.Duration(op%64) * 10 * time.Millisecond)
			switch op % 3 {
			case 0:
				s.event(now)
				if d := s.next().Sub(now); d > debounce {
					t.Fatalf("after an event the refresh is %v away (debounce %v)", d, debounce)
				}
			case 1, 2:
				if !s.due(now) {
					continue // the loop refreshes only when due
				}
				s.takeResync(now)
				var err error
				if op%3 == 2 {
					err = errors.New("x")
				}
				s.done(now, err)
				d := s.next().Sub(now)
				if d <= 0 || d > longest {
					t.Fatalf("after done(%v) the next refresh is %v away (resync %v)", err, d, poll)
				}
			}
		}
	})
}

func abs(x int64) int64 {
	if x < 0 {
		if x == -x { // math.MinInt64
			return 0
		}
		return -x
	}
	return x
}
