package tracker

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzTracker drives random Deliver/DeliverRun/Ack/Reset/Truncate/Trim/Advance sequences decoded from the fuzz
// input and checks them against refModel after every call: Committable never
// decreases (except across Reset), never exceeds the first unacked delivered
// offset and matches the reference, Pending/Outstanding/LastDelivered/
// OldestPending match, and nothing panics.
//
// Encoding: byte 0 selects the start offset; then each operation is an op
// byte followed by one argument byte (or 8 for absolute offsets).
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 8, 0, 8, 1, 8, 2})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 2, 0, 0, 9, 2, 9, 2, 10, 0, 8, 0})
	f.Add([]byte{2, 0, 3, 0, 3, 15, 1, 8, 0, 8, 0, 14, 7, 0, 0})
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 8, 1, 8, 0, 8, 2})
	f.Add([]byte{0, 0, 0, 0, 1, 8, 0, 8, 0, 14, 0xf0, 0, 0, 14, 0xf0, 8, 0, 14, 0xff, 0, 0})
	f.Add([]byte{0, 6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 7, 0, 0, 0, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		starts := [...]int64{0, 1, 1000, MaxOffset - 20, math.MaxInt64, -1}
		c := newChecker(t, starts[int(data[0])%len(starts)])
		data = data[1:]
		now := t0
		for len(data) >= 2 {
			op, arg := data[0], data[1]
			data = data[2:]
			now = now.Add(time.Millisecond)
			last, hasLast := c.ref.last()
			next := c.ref.start
			if hasLast {
				next = satAdd(last, 1)
			}
			switch op % 16 {
			case 0, 1, 2, 3, 4: // in-order delivery, small gap
				c.deliver(satAdd(next, int64(arg%4)), now)
			case 5: // a run of up to 63 offsets (none when 0), small gap
				c.deliverRun(satAdd(next, int64(arg%4)), int(arg/4), now)
			case 6, 7: // absolute offset from 8 bytes (arg is the first)
				var b [8]byte
				b[0] = arg
				n := copy(b[1:], data)
				data = data[n:]
				off := int64(binary.LittleEndian.Uint64(b[:]))
				if op%16 == 6 {
					c.deliver(off, now)
				} else {
					c.ack(off)
				}
			case 8, 9, 10: // ack the arg-th pending offset
				if pend := c.ref.pendingOffsets(); len(pend) > 0 {
					c.ack(pend[int(arg)%len(pend)])
				} else {
					c.ack(next)
				}
			case 11, 12, 13: // ack relative to the watermark
				c.ack(c.tr.Committable() - 4 + int64(arg%32))
			case 14:
				if arg >= 0xe0 {
					c.trim()
				} else if arg >= 0xc0 {
					c.advance(satAdd(next, int64(arg%8)-1))
				} else {
					c.reset(int64(arg) - 8)
				}
			case 15: // out-of-order delivery, or truncate near the watermark
				if arg%2 == 0 {
					c.deliver(next-1-int64(arg/2%4), now)
				} else {
					c.truncate(c.tr.Committable() - 1 + int64(arg/2%8))
				}
			}
		}
	})
}
