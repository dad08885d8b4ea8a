package tracker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup/internal/tracker"
)

// Acks arrive out of order and offset 13-14 is a gap (e.g. a compacted
// topic); the committable offset only moves once everything below it is
// processed.
func ExampleTracker() {
	tr := tracker.NewTracker(10)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, o := range []int64{10, 11, 12, 15} {
		if err := tr.Deliver(o, now); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("before acks:", tr.Committable())
	fmt.Println("ack 11:", tr.Ack(11), tr.Committable())
	fmt.Println("ack 11:", tr.Ack(11), tr.Committable())
	fmt.Println("ack 10:", tr.Ack(10), tr.Committable())
	fmt.Println("ack 13:", tr.Ack(13), tr.Committable())
	fmt.Println("ack 15:", tr.Ack(15), tr.Committable())
	fmt.Println("pending:", tr.Pending(), "outstanding:", tr.Outstanding())
	fmt.Println("ack 12:", tr.Ack(12), tr.Committable())
	fmt.Println("ack 10:", tr.Ack(10), tr.Committable())
	// Output:
	// before acks: 10
	// ack 11: ok 10
	// ack 11: duplicate 10
	// ack 10: ok 12
	// ack 13: unknown 12
	// ack 15: ok 12
	// pending: 1 outstanding: 2
	// ack 12: ok 16
	// ack 10: unknown 16
}

func ExampleTracker_Deliver() {
	tr := tracker.NewTracker(0)
	_ = tr.Deliver(7, time.Time{})
	err := tr.Deliver(5, time.Time{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, tracker.ErrOutOfOrder))
	// Output:
	// tracker: offset out of order: deliver offset 5 not above last delivered offset 7
	// true
}
