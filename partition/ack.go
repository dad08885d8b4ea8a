package partition

import "strconv"

// AckResult says what an ack did.
type AckResult int

// Ack results.
const (
	AckOK        AckResult = iota + 1 // counted; may advance the commit
	AckDuplicate                      // acked already
	AckStale                          // its partition is no longer owned by the ownership that handed it out: a no-op
	AckUnknown                        // no such handed-out offset (forgotten by a seek)
	AckInvalid                        // a nil message or an empty batch, or one not handed out by a consumer
)

// String returns the result's name: "ok", "duplicate", "stale",
// "unknown" or "invalid".
func (r AckResult) String() string {
	switch r {
	case AckOK:
		return "ok"
	case AckDuplicate:
		return "duplicate"
	case AckStale:
		return "stale"
	case AckUnknown:
		return "unknown"
	case AckInvalid:
		return "invalid"
	}
	return "AckResult(" + strconv.Itoa(int(r)) + ")"
}
