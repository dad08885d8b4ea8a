package framerelay

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestRelay: Out goes first, then Left bytes of the stream as they come,
// then next decides; a frame next takes leaves nothing to hand on, and its
// error ends the read.
func TestRelay(t *testing.T) {
	src := bytes.NewReader([]byte("abcdefgh"))
	var r Relay
	calls := 0
	next := func() error {
		calls++
		switch calls {
		case 1: // pass 3 bytes on after a head of our own
			r.Out, r.Left = []byte("<>"), 3
		case 2: // take 2 bytes: nothing handed on
			_, err := io.ReadFull(src, make([]byte, 2))
			return err
		case 3:
			r.Left = 3
		default:
			return io.EOF
		}
		return nil
	}
	var got []byte
	p := make([]byte, 2)
	for {
		n, err := r.Read(src, p, next)
		got = append(got, p[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "<>abcfgh" || calls != 4 {
		t.Fatalf("handed on %q after %d calls of next", got, calls)
	}
}
