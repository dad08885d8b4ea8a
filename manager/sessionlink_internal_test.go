package manager

import (
	"testing"

	"github.com/zkgroup/zkgroup/internal/sessionlink"
	"github.com/zkgroup/zkgroup/internal/zkconn"
)

// TestSessionLink: sessionlink gives a Consumer's session, and nothing for
// anything else.
func TestSessionLink(t *testing.T) {
	s := new(zkconn.Session)
	if got, ok := sessionlink.Session(&Consumer{conns: conns{session: s}}); !ok || got != s {
		t.Errorf("a consumer: %p, %v; want its session", got, ok)
	}
	var nilConsumer *Consumer
	for _, v := range []any{nil, nilConsumer, &Consumer{}, s} {
		if got, ok := sessionlink.Session(v); ok || got != nil {
			t.Errorf("%T: %p, %v; want none", v, got, ok)
		}
	}
}
