package fetch

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/saramawire"
)

// pipeDialer hands sarama one end of a pipe.
type pipeDialer struct{ c net.Conn }

func (d pipeDialer) Dial(string, string) (net.Conn, error) { return d.c, nil }

// encodedFetch returns req as sarama writes it on the wire: the frame
// whole, its size first.
func encodedFetch(t *testing.T, req *sarama.FetchRequest) []byte {
	t.Helper()
	client, server := net.Pipe()
	defer server.Close()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ApiVersionsRequest = false
	cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, pipeDialer{client}
	cfg.Net.ReadTimeout = time.Second
	b := sarama.NewBroker("pipe:1")
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go func() { _, _ = b.Fetch(req) }() // no answer: it fails once the pipe closes
	var size [4]byte
	if _, err := io.ReadFull(server, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	if _, err := io.ReadFull(server, frame[4:]); err != nil {
		t.Fatal(err)
	}
	_ = server.Close() // the fetch fails at once
	return frame
}

// compactString is s as a flexible version writes it.
func compactString(s string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(s)+1)), s...)
}

// TestFetchV13Request: the v12 request sarama encodes comes out as v13
// with each topic name, of the topics fetched and of those forgotten,
// replaced by its id and nothing else changed; a frame that is not a
// whole Fetch v12 request, or that names a topic without an id, is left.
func TestFetchV13Request(t *testing.T) {
	if !saramawire.FetchOK {
		t.Skip("sarama's FetchRequest layout changed: the fetcher names no forgotten partition")
	}
	req := &sarama.FetchRequest{Version: 12, MaxWaitTime: 500, MinBytes: 1, MaxBytes: 1 << 20, SessionID: 7, SessionEpoch: 3, RackID: "rack-a"}
	req.AddBlock("topic-alpha", 0, 100, 1<<20, 4)
	req.AddBlock("topic-alpha", 1, 200, 1<<20, 4)
	req.AddBlock("topic-beta", 2, 300, 1<<20, 5)
	saramawire.SetLastFetchedEpoch(req, "topic-beta", 2, 3)
	saramawire.SetForgotten(req, map[string][]int32{"topic-gamma": {0, 1}})
	frame := encodedFetch(t, req)

	alpha, beta, gamma := sarama.Uuid{1, 2, 3}, sarama.Uuid{4, 5, 6}, sarama.Uuid{7, 8, 9}
	ids := &topicIDs{byName: map[string]sarama.Uuid{"topic-alpha": alpha, "topic-beta": beta, "topic-gamma": gamma}}
	out, corr, ok := fetchV13(frame, ids, nil)
	if !ok {
		t.Fatal("a Fetch v12 request not rewritten")
	}
	want := bytes.Clone(frame)
	for name, id := range ids.byName {
		want = bytes.Replace(want, compactString(name), id[:], 1)
	}
	binary.BigEndian.PutUint32(want, uint32(len(want)-4))
	binary.BigEndian.PutUint16(want[6:], 13)
	if !bytes.Equal(out, want) {
		t.Fatalf("rewritten\n%x\nwant\n%x", out, want)
	}
	if want := int32(binary.BigEndian.Uint32(frame[8:])); corr != want {
		t.Fatalf("correlation id %d, want %d", corr, want)
	}

	delete(ids.byName, "topic-gamma")
	if _, _, ok := fetchV13(frame, ids, nil); ok {
		t.Fatal("a request forgetting a topic without an id was rewritten")
	}
	ids.byName["topic-gamma"] = gamma
	if _, _, ok := fetchV13(frame[:len(frame)-1], ids, nil); ok {
		t.Fatal("a cut frame was rewritten")
	}
	other := bytes.Clone(frame)
	binary.BigEndian.PutUint16(other[6:], 11)
	if _, _, ok := fetchV13(other, ids, nil); ok {
		t.Fatal("a Fetch v11 request was rewritten")
	}
}

// TestRewriteFetchV13: a v13 response comes out as the v12 response with
// the same content (each topic id replaced by its name), its records
// taken out as from v12; a topic id the request did not name fails.
func TestRewriteFetchV13(t *testing.T) {
	v2 := encodeBatch(t, batch(0, 2, 0, false).RecordBatch, sarama.CompressionNone)
	v12 := response(12, 5, map[int32][]byte{0: v2, 1: nil})
	id := sarama.Uuid{9, 9, 9}
	v13 := bytes.Replace(v12, compactString("topic"), id[:], 1)
	ids := &topicIDs{byID: map[sarama.Uuid]string{id: "topic"}}
	got, gotShares, err := rewriteFetch(v13, 13, ids, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, wantShares, err := rewriteFetch(v12, 12, nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("v13 rewritten\n%x\nwant (v12)\n%x", got, want)
	}
	if len(gotShares) != 1 || len(wantShares) != 1 || gotShares[0].topic != "topic" || !bytes.Equal(gotShares[0].raw, wantShares[0].raw) {
		t.Fatalf("shares %+v, want %+v", gotShares, wantShares)
	}
	// Nothing to take out: still rewritten, names for ids.
	quiet := response(12, 6, map[int32][]byte{0: nil})
	got, shares, err := rewriteFetch(bytes.Replace(quiet, compactString("topic"), id[:], 1), 13, ids, true, nil)
	if err != nil || len(shares) != 0 || !bytes.Equal(got[4:], quiet) {
		t.Fatalf("a response without records: %x %v %v, want %x", got, shares, err, quiet)
	}
	if _, _, err := rewriteFetch(v13, 13, &topicIDs{byID: map[sarama.Uuid]string{}}, true, nil); err == nil {
		t.Fatal("a topic id not asked for was read")
	}
}

// TestRequestIDs: a loop names topics by id only when it knows every
// partition's, adds topics to a new map (the one a request used is left
// as it was), and starts a new map and a new session when a topic's id
// changed.
func TestRequestIDs(t *testing.T) {
	l := &brokerLoop{f: &Fetcher{topicIDs: true}}
	a, b := &Partition{topic: "a"}, &Partition{topic: "b"}
	l.inReq = []reqPart{{p: a, topicID: sarama.Uuid{1}}, {p: a, topicID: sarama.Uuid{1}}}
	first := l.requestIDs()
	if first == nil || first.byName["a"] != (sarama.Uuid{1}) || first.byID[sarama.Uuid{1}] != "a" {
		t.Fatalf("ids %+v", first)
	}
	if again := l.requestIDs(); again != first {
		t.Fatal("the same topics made a new map")
	}
	l.inReq = append(l.inReq, reqPart{p: b, topicID: sarama.Uuid{2}})
	second := l.requestIDs()
	if second == first || len(first.byName) != 1 || len(second.byName) != 2 {
		t.Fatalf("a topic added: %+v, then %+v", first, second)
	}
	l.inReq = []reqPart{{p: b, topicID: sarama.Uuid{2}}}
	if l.requestIDs() != second {
		t.Fatal("a topic no longer asked for left the map (a session may still forget it)")
	}
	l.sess = session{id: 5, epoch: 9, parts: map[topicPartition]sessPart{{"a", 0}: {}}}
	l.inReq = []reqPart{{p: a, topicID: sarama.Uuid{3}}}
	third := l.requestIDs()
	if third == nil || len(third.byName) != 1 || third.byName["a"] != (sarama.Uuid{3}) || l.sess.epoch != 0 || l.sess.id != 5 {
		t.Fatalf("a topic created again: ids %+v, session %+v; want a new map and the next request full", third, l.sess)
	}
	l.inReq = append(l.inReq, reqPart{p: b})
	if l.requestIDs() != nil {
		t.Fatal("a request with a partition whose topic id is unknown goes by id")
	}
	l.f.topicIDs = false
	l.inReq = l.inReq[:1]
	if l.requestIDs() != nil {
		t.Fatal("a fetcher without ids names topics by id")
	}
}
