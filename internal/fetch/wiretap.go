package fetch

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/framerelay"
)

// tap is a broker loop's connection as sarama's Broker sees it: it passes
// everything through, except that it takes the records out of each fetch
// response before sarama reads it (rewriteFetch), so that the fetcher
// decodes them itself, straight from the response's bytes (Batch), and
// sarama decodes only the rest, each topic once (with
// Config.SaramaDecodes it leaves the records and only merges a topic's
// entries). sarama keeps doing everything else on the connection: the
// handshake (ApiVersions), SASL, the requests, the response headers and
// the errors, offsets and epochs of each partition.
//
// It follows the frames both ways (each a 4-byte size and its bytes; the
// raw SASL v0 tokens too): a request frame whose header names Fetch
// (api key 1) is noted with its correlation id and version, and the
// response frame with that id is read whole, rewritten, and served in
// place of the one read. TLS, when configured, runs below the tap (the
// loop's dialer makes the TLS client, not sarama), so it sees plain bytes.
type tap struct {
	net.Conn
	readTimeout time.Duration
	// takeRecords: the records are taken out of fetch responses; false
	// (Config.SaramaDecodes): left for sarama, each topic's entries only
	// merged (see rewriteFetch).
	takeRecords bool

	wmu   sync.Mutex
	wHdr  []byte    // the start of the request frame being written
	wLeft int       // bytes of the request frame being written still to come
	ids   *topicIDs // the next fetch request's topic ids (useIDs)
	wBuf  []byte    // a request rewritten to v13

	mu      sync.Mutex
	pending []pendingFetch
	taken   []rawRecords // of the last fetch response, until take

	// The read side: sarama's one reader goroutine.
	relay  framerelay.Relay // what goes on to sarama of the frame being read
	outBuf []byte
}

type pendingFetch struct {
	corr    int32
	version int16
	ids     *topicIDs // a v13 request's
}

func newTap(c net.Conn, readTimeout time.Duration, take bool) *tap {
	return &tap{Conn: c, readTimeout: readTimeout, takeRecords: take}
}

// useIDs has the next fetch request written, when it is a Fetch v12
// request frame whole, go out as v13 with the topic ids of ids (see
// topicids.go); other requests go out as they are. nil: nothing
// rewritten.
func (t *tap) useIDs(ids *topicIDs) {
	t.wmu.Lock()
	t.ids = ids
	t.wmu.Unlock()
}

// Write notes the fetch requests among the frames written, and rewrites
// one to v13 after useIDs (sarama writes each request whole, in one call).
func (t *tap) Write(p []byte) (int, error) {
	t.wmu.Lock()
	// At a frame's start, a Fetch v12 request's (not ApiVersions' or
	// SASL's, which a new connection writes first).
	if ids := t.ids; ids != nil && t.wLeft == 0 && len(t.wHdr) == 0 && len(p) >= 8 &&
		binary.BigEndian.Uint16(p[4:]) == 1 && binary.BigEndian.Uint16(p[6:]) == 12 {
		t.ids = nil
		if out, corr, ok := fetchV13(p, ids, t.wBuf[:0]); ok {
			t.mu.Lock()
			t.pending = append(t.pending, pendingFetch{corr: corr, version: fetchVersionWithTopicID, ids: ids})
			t.mu.Unlock()
			_, err := t.Conn.Write(out)
			t.wBuf = keptBuf(out)
			t.wmu.Unlock()
			if err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	t.note(p)
	t.wmu.Unlock()
	return t.Conn.Write(p)
}

// note follows the request frames in p (under wmu).
func (t *tap) note(p []byte) {
	for len(p) > 0 {
		if t.wLeft > 0 {
			n := min(t.wLeft, len(p))
			t.wLeft -= n
			p = p[n:]
			continue
		}
		// At a frame's start: its size, then (a request's header) api
		// key, version and correlation id, or the bytes of a shorter frame.
		if len(t.wHdr) < 4 {
			n := min(4-len(t.wHdr), len(p))
			t.wHdr = append(t.wHdr, p[:n]...)
			p = p[n:]
			if len(t.wHdr) < 4 {
				continue
			}
		}
		want := 4 + min(max(int(int32(binary.BigEndian.Uint32(t.wHdr))), 0), 8)
		n := min(want-len(t.wHdr), len(p))
		t.wHdr = append(t.wHdr, p[:n]...)
		p = p[n:]
		if len(t.wHdr) < want {
			continue // more of the header to come
		}
		h := t.wHdr
		size := int(int32(binary.BigEndian.Uint32(h)))
		if size >= 8 {
			if key, v := int16(binary.BigEndian.Uint16(h[4:])), int16(binary.BigEndian.Uint16(h[6:])); key == 1 && v >= 4 && v <= 12 {
				t.mu.Lock()
				t.pending = append(t.pending, pendingFetch{corr: int32(binary.BigEndian.Uint32(h[8:])), version: v})
				t.mu.Unlock()
			}
		}
		t.wLeft = max(size-(len(h)-4), 0)
		t.wHdr = t.wHdr[:0]
	}
}

// take returns the records taken out of the last fetch response and
// forgets them (nil when there was none).
func (t *tap) take() []rawRecords {
	t.mu.Lock()
	defer t.mu.Unlock()
	got := t.taken
	t.taken = nil
	return got
}

// Read serves the response frames: a fetch response's rewritten, the
// others as they come.
func (t *tap) Read(p []byte) (int, error) { return t.relay.Read(t.Conn, p, t.nextFrame) }

// nextFrame reads the start of the next response frame and sets up what
// Read serves of it.
func (t *tap) nextFrame() error {
	t.mu.Lock()
	pending := len(t.pending) > 0
	t.mu.Unlock()
	var hdr [8]byte
	if !pending { // no fetch response to come: pass the frame through
		if _, err := io.ReadFull(t.Conn, hdr[:4]); err != nil {
			return err
		}
		t.pass(hdr[:4], int(int32(binary.BigEndian.Uint32(hdr[:4]))))
		return nil
	}
	if _, err := io.ReadFull(t.Conn, hdr[:]); err != nil {
		return err
	}
	size := int(int32(binary.BigEndian.Uint32(hdr[:4])))
	corr := int32(binary.BigEndian.Uint32(hdr[4:]))
	t.mu.Lock()
	var pf pendingFetch
	found := false
	// sarama refuses a size out of its bounds: passed through for it to.
	if size > 4 && size <= int(sarama.MaxResponseSize) {
		for i, x := range t.pending {
			if x.corr == corr {
				pf, found = x, true
				t.pending = append(t.pending[:i], t.pending[i+1:]...)
				break
			}
		}
	}
	t.mu.Unlock()
	if !found {
		t.pass(hdr[:], size-4)
		return nil
	}
	// The frame with its size in front: served as it is when nothing is
	// taken out of it.
	whole := make([]byte, 4+size)
	copy(whole, hdr[:])
	if t.readTimeout > 0 {
		// As sarama's own reading of a body: its own deadline.
		if err := t.Conn.SetReadDeadline(time.Now().Add(t.readTimeout)); err != nil {
			return err
		}
	}
	if _, err := io.ReadFull(t.Conn, whole[8:]); err != nil {
		return err
	}
	out, shares, err := rewriteFetch(whole[4:], pf.version, pf.ids, t.takeRecords, t.outBuf[:0])
	if err != nil || out == nil {
		// Nothing to change, or not understood: sarama reads it as it
		// came (and says what is wrong with it).
		t.relay.Out = whole
		return nil
	}
	t.outBuf = keptBuf(out)
	t.relay.Out = out
	t.mu.Lock()
	t.taken = shares
	t.mu.Unlock()
	return nil
}

// Reuse bounds of keptBuf.
const (
	keptSmall = 64 << 10 // always reused
	keptLarge = 1 << 20  // never reused
)

// keptBuf returns frame (a rewritten request or response) as the buffer
// to reuse for the next one, or nil: a buffer over keptLarge is not kept
// at the size of one large frame, nor one over keptSmall that the frame
// used less than a quarter of, so that a loop whose frames became small
// (its partitions caught up, or idle, or in a fetch session) lets go of
// the buffer a catch-up or a full request grew.
func keptBuf(frame []byte) []byte {
	if c := cap(frame); c > keptLarge || (c > keptSmall && len(frame) < c/4) {
		return nil
	}
	return frame
}

// pass hands head, the start of a frame already read, on to sarama, and
// then the frame's left bytes as they come.
func (t *tap) pass(head []byte, left int) {
	t.outBuf = append(t.outBuf[:0], head...)
	t.relay.Out, t.relay.Left = t.outBuf, left
}
