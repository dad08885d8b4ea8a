package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/gzip"
	snappy "github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// encodeBatch writes b as a v2 record batch on the wire (the producer's
// side of readBatch), its records compressed with codec.
func encodeBatch(t testing.TB, b *sarama.RecordBatch, codec sarama.CompressionCodec) []byte {
	t.Helper()
	var recs []byte
	for _, r := range b.Records {
		body := []byte{0}
		body = binary.AppendVarint(body, int64(r.TimestampDelta/time.Millisecond))
		body = binary.AppendVarint(body, r.OffsetDelta)
		body = appendVarBytes(body, r.Key)
		body = appendVarBytes(body, r.Value)
		body = binary.AppendVarint(body, int64(len(r.Headers)))
		for _, h := range r.Headers {
			body = appendVarBytes(body, h.Key)
			body = appendVarBytes(body, h.Value)
		}
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	recs = compress(t, codec, recs)
	attrs := int16(codec)
	if b.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if b.IsTransactional {
		attrs |= attrTransactional
	}
	if b.Control {
		attrs |= attrControl
	}
	be := binary.BigEndian
	out := be.AppendUint64(nil, uint64(b.FirstOffset))
	out = be.AppendUint32(out, 0) // length, below
	out = be.AppendUint32(out, uint32(b.PartitionLeaderEpoch))
	out = append(out, 2)
	out = be.AppendUint32(out, 0) // CRC, below
	out = be.AppendUint16(out, uint16(attrs))
	out = be.AppendUint32(out, uint32(b.LastOffsetDelta))
	out = be.AppendUint64(out, uint64(millisOf(b.FirstTimestamp)))
	out = be.AppendUint64(out, uint64(millisOf(b.MaxTimestamp)))
	out = be.AppendUint64(out, uint64(b.ProducerID))
	out = be.AppendUint16(out, uint16(b.ProducerEpoch))
	out = be.AppendUint32(out, uint32(b.FirstSequence))
	out = be.AppendUint32(out, uint32(len(b.Records)))
	out = append(out, recs...)
	be.PutUint32(out[8:], uint32(len(out)-12))
	be.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

func millisOf(ts time.Time) int64 {
	if ts.IsZero() {
		return -1
	}
	return ts.UnixMilli()
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

func compress(t testing.TB, codec sarama.CompressionCodec, b []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case sarama.CompressionNone:
		return b
	case sarama.CompressionGZIP:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
	case sarama.CompressionLZ4:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
	case sarama.CompressionSnappy:
		return snappy.Encode(nil, b)
	case sarama.CompressionZSTD:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeAll(b, nil)
	}
	return buf.Bytes()
}

// rawOf encodes a block's record batches as the broker sends them; a
// batch marked PartialTrailingRecord becomes the first 30 bytes of one,
// and a block that is Partial with no batch the first 10. ok is false for
// a block with a legacy message set (sarama's alone).
func rawOf(t testing.TB, block *sarama.FetchResponseBlock, codec sarama.CompressionCodec) (raw []byte, ok bool) {
	for _, rs := range block.RecordsSet {
		b := rs.RecordBatch
		if b == nil {
			return nil, false
		}
		if b.PartialTrailingRecord {
			full := encodeBatch(t, &sarama.RecordBatch{FirstOffset: b.FirstOffset, Records: []*sarama.Record{{Value: make([]byte, 100)}}}, codec)
			raw = append(raw, full[:30]...)
			continue
		}
		raw = append(raw, encodeBatch(t, b, codec)...)
	}
	if block.Partial && len(raw) == 0 {
		full := encodeBatch(t, &sarama.RecordBatch{FirstOffset: 0, Records: []*sarama.Record{{Value: make([]byte, 100)}}}, codec)
		raw = full[:10]
	}
	return raw, true
}

// parseBoth parses block as sarama decoded it and, when it can be encoded,
// as the fetcher reads the same batches itself (each codec), and fails
// unless both agree record by record.
func parseBoth(t *testing.T, block *sarama.FetchResponseBlock, from int64, committed bool) parsed {
	t.Helper()
	want, err := parseBlock("t", 0, block, nil, from, committed)
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		raw, ok := rawOf(t, block, codec)
		if !ok || raw == nil {
			return want
		}
		got, err := parseBlock("t", 0, block, raw, from, committed)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if got.next != want.next || got.partial != want.partial || got.epoch != want.epoch || (got.recs == nil) != (want.recs == nil) {
			t.Fatalf("%s: read itself next %d partial %v epoch %d recs %v; sarama's %d %v %d %v", codec,
				got.next, got.partial, got.epoch, got.recs != nil, want.next, want.partial, want.epoch, want.recs != nil)
		}
		if want.recs == nil {
			continue
		}
		if got.recs.Len() != want.recs.Len() || got.recs.NextOffset != want.recs.NextOffset {
			t.Fatalf("%s: Len %d next %d, sarama's %d %d", codec, got.recs.Len(), got.recs.NextOffset, want.recs.Len(), want.recs.NextOffset)
		}
		var a, b []Record
		for r := range got.recs.All() {
			a = append(a, *r)
		}
		for r := range want.recs.All() {
			b = append(b, *r)
		}
		if !slices.EqualFunc(a, b, sameRecord) {
			t.Fatalf("%s: records\n%+v\nsarama's\n%+v", codec, a, b)
		}
	}
	return want
}

func sameRecord(a, b Record) bool {
	return a.Offset == b.Offset && bytes.Equal(a.Key, b.Key) && (a.Key == nil) == (b.Key == nil) &&
		bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil) &&
		a.Timestamp.Equal(b.Timestamp) && a.BlockTimestamp.Equal(b.BlockTimestamp) &&
		slices.EqualFunc(a.Headers, b.Headers, func(x, y *sarama.RecordHeader) bool {
			return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && (x.Value == nil) == (y.Value == nil)
		})
}

// TestWireRecordFields: keys, values and headers (null and empty ones
// included), negative timestamps and log-append time read as sarama reads
// them.
func TestWireRecordFields(t *testing.T) {
	recs := []*sarama.Record{
		{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v0"), TimestampDelta: 5 * time.Millisecond,
			Headers: []*sarama.RecordHeader{{Key: []byte("h1"), Value: []byte("x")}, {Key: []byte("h2"), Value: nil}}},
		{OffsetDelta: 2, Key: nil, Value: []byte{}, TimestampDelta: -3 * time.Millisecond},
		{OffsetDelta: 3, Key: []byte{}, Value: nil, Headers: []*sarama.RecordHeader{{Key: []byte{}, Value: []byte{}}}},
	}
	for _, b := range []*sarama.RecordBatch{
		{FirstOffset: 40, LastOffsetDelta: 3, PartitionLeaderEpoch: 7, FirstTimestamp: time.UnixMilli(1_700_000_000_123), MaxTimestamp: time.UnixMilli(1_700_000_000_130), Records: recs},
		{FirstOffset: 40, LastOffsetDelta: 3, LogAppendTime: true, FirstTimestamp: time.UnixMilli(5), MaxTimestamp: time.UnixMilli(9), Records: recs},
		{FirstOffset: 40, LastOffsetDelta: 3, Records: recs}, // timestamps -1
	} {
		block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 44, RecordsSet: []*sarama.Records{{RecordBatch: b}}}
		for _, from := range []int64{0, 41, 43} {
			out := parseBoth(t, block, from, false)
			if out.epoch != b.PartitionLeaderEpoch || out.next != 44 {
				t.Fatalf("from %d: epoch %d next %d", from, out.epoch, out.next)
			}
		}
	}
}

// TestWireEmptyBatch: a batch whose records compaction removed (count 0)
// moves the position past it; sarama's decoder drops such a batch, and the
// broker loop stepped over it one offset at a time.
func TestWireEmptyBatch(t *testing.T) {
	empty := encodeBatch(t, &sarama.RecordBatch{FirstOffset: 10, LastOffsetDelta: 4, PartitionLeaderEpoch: 3}, sarama.CompressionNone)
	data := encodeBatch(t, batch(15, 16, 0, false).RecordBatch, sarama.CompressionNone)
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 17}
	out, err := parseBlock("t", 0, block, empty, 10, false)
	if err != nil || out.recs != nil || out.next != 15 || out.epoch != 3 || out.partial {
		t.Fatalf("empty batch alone: %+v %v", out, err)
	}
	out, err = parseBlock("t", 0, block, append(slices.Clone(empty), data...), 10, false)
	if err != nil || !slices.Equal(offsets(out.recs), []int64{15, 16}) || out.next != 17 {
		t.Fatalf("empty batch then data: %v next %d %v", offsets(out.recs), out.next, err)
	}
}

// TestWireMalformed: a batch that does not check out is an error naming
// the partition and the batch's offset, never fewer records.
func TestWireMalformed(t *testing.T) {
	good := encodeBatch(t, batch(0, 4, 0, false).RecordBatch, sarama.CompressionNone)
	block := &sarama.FetchResponseBlock{HighWaterMarkOffset: 5}
	flip := slices.Clone(good)
	flip[len(flip)-2] ^= 1 // a value's byte: the CRC no longer matches
	short := slices.Clone(good)
	binary.BigEndian.PutUint32(short[57:], 6) // one record more than there is
	fixCRC := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
		return b
	}
	long := slices.Clone(good)
	long[batchHeaderSize] += 2 // the first record's length (zigzag: +1) overruns it
	for name, raw := range map[string][]byte{"crc": flip, "count": fixCRC(short), "length": fixCRC(long)} {
		_, err := parseBlock("t", 3, block, raw, 0, false)
		if !errors.Is(err, errMalformed) {
			t.Fatalf("%s: %v", name, err)
		}
		if want := "t/3: record batch at offset 0"; err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Fatalf("%s: %q does not say %q", name, err, want)
		}
	}
	bad := slices.Clone(good)
	binary.BigEndian.PutUint16(bad[21:], uint16(sarama.CompressionGZIP))
	if _, err := parseBlock("t", 3, block, fixCRC(bad), 0, false); !errors.Is(err, errMalformed) {
		t.Fatalf("not gzip: %v", err)
	}
}

// response encodes a fetch response of version v (after its size) with
// the partitions given of one topic, "topic" (see responseOf).
func response(v int16, corr int32, parts map[int32][]byte) []byte {
	return responseOf(v, corr, topicEntry{"topic", parts})
}

// topicEntry is one topic entry of a fetch response: its partitions, each
// with its records.
type topicEntry struct {
	topic string
	parts map[int32][]byte
}

// responseOf encodes a fetch response of version v (after its size) with
// the topic entries given, in that order (a topic may come more than
// once), each partition with records raw and one aborted transaction, and
// a diverging epoch tag on each partition from v12.
func responseOf(v int16, corr int32, entries ...topicEntry) []byte {
	flex := v >= 12
	be := binary.BigEndian
	arr := func(b []byte, n int) []byte {
		if flex {
			return binary.AppendUvarint(b, uint64(n+1))
		}
		return be.AppendUint32(b, uint32(n))
	}
	out := be.AppendUint32(nil, uint32(corr))
	if flex {
		out = append(out, 0)
	}
	out = be.AppendUint32(out, 0) // throttle
	if v >= 7 {
		out = be.AppendUint16(out, 0)  // error
		out = be.AppendUint32(out, 77) // session
	}
	out = arr(out, len(entries)) // topics
	for _, e := range entries {
		if flex {
			out = append(binary.AppendUvarint(out, uint64(len(e.topic)+1)), e.topic...)
		} else {
			out = append(be.AppendUint16(out, uint16(len(e.topic))), e.topic...)
		}
		keys := slices.Sorted(maps.Keys(e.parts))
		out = arr(out, len(keys))
		for _, p := range keys {
			out = be.AppendUint32(out, uint32(p))
			out = be.AppendUint16(out, 0)
			out = be.AppendUint64(out, 100) // high watermark
			out = be.AppendUint64(out, 100) // last stable
			if v >= 5 {
				out = be.AppendUint64(out, 0) // log start
			}
			out = arr(out, 1)
			out = be.AppendUint64(out, 9) // producer
			out = be.AppendUint64(out, 3) // first offset
			if flex {
				out = append(out, 0)
			}
			if v >= 11 {
				out = be.AppendUint32(out, 0xffffffff)
			}
			raw := e.parts[p]
			if flex {
				out = binary.AppendUvarint(out, uint64(len(raw)+1))
			} else {
				out = be.AppendUint32(out, uint32(len(raw)))
			}
			out = append(out, raw...)
			if flex { // tag 0: diverging epoch (epoch 4, end offset 50, its tags)
				out = append(out, 1, 0, 13)
				out = be.AppendUint32(out, 4)
				out = be.AppendUint64(out, 50)
				out = append(out, 0)
			}
		}
		if flex {
			out = append(out, 0) // the topic's tags
		}
	}
	if flex {
		out = append(out, 0) // the response's tags
	}
	return out
}

// TestRewriteFetch: each partition's v2 records are taken out and replaced
// by empty ones, everything else kept byte for byte; a legacy message set
// stays.
func TestRewriteFetch(t *testing.T) {
	v2 := encodeBatch(t, batch(0, 2, 0, false).RecordBatch, sarama.CompressionNone)
	legacy := slices.Clone(v2)
	legacy[batchMagicAt] = 1
	for _, v := range []int16{4, 7, 11, 12} {
		frame := response(v, 5, map[int32][]byte{0: v2, 1: legacy, 2: nil, 3: v2[:20]})
		out, shares, err := rewriteFetch(frame, v, nil, true, nil)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(shares) != 2 || shares[0].partition != 0 || !bytes.Equal(shares[0].raw, v2) || shares[0].topic != "topic" ||
			shares[1].partition != 3 || !bytes.Equal(shares[1].raw, v2[:20]) {
			t.Fatalf("v%d: shares %+v", v, shares)
		}
		want := response(v, 5, map[int32][]byte{0: nil, 1: legacy, 2: nil, 3: nil})
		if int(binary.BigEndian.Uint32(out)) != len(out)-4 || !bytes.Equal(out[4:], want) {
			t.Fatalf("v%d: rewritten frame\n%x\nwant\n%x", v, out[4:], want)
		}
		if _, _, err := rewriteFetch(frame[:len(frame)-3], v, nil, true, nil); err == nil {
			t.Fatalf("v%d: a short response read", v)
		}
	}
}

// TestRewriteFetchTopicTwice: a response naming a topic more than once
// (as a broker answering in a fetch session does once the session's order
// interleaves topics) comes out with each topic once, all its partitions
// together at the place of its first entry, and sarama's decoding of it
// (through the tap, on a sarama Broker) has every partition's block, where
// sarama alone keeps only a topic's last entry.
func TestRewriteFetchTopicTwice(t *testing.T) {
	v2 := encodeBatch(t, batch(0, 2, 0, false).RecordBatch, sarama.CompressionNone)
	for _, v := range []int16{4, 7, 11, 12} {
		frame := responseOf(v, 5, topicEntry{"a", map[int32][]byte{0: v2}}, topicEntry{"b", map[int32][]byte{0: v2}},
			topicEntry{"a", map[int32][]byte{1: v2, 2: nil}})
		out, shares, err := rewriteFetch(frame, v, nil, true, nil)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		want := responseOf(v, 5, topicEntry{"a", map[int32][]byte{0: nil, 1: nil, 2: nil}}, topicEntry{"b", map[int32][]byte{0: nil}})
		if int(binary.BigEndian.Uint32(out)) != len(out)-4 || !bytes.Equal(out[4:], want) {
			t.Fatalf("v%d: rewritten frame\n%x\nwant\n%x", v, out[4:], want)
		}
		var got []string
		for _, sh := range shares {
			got = append(got, fmt.Sprintf("%s/%d", sh.topic, sh.partition))
			if !bytes.Equal(sh.raw, v2) {
				t.Fatalf("v%d: %s/%d: records %x, want %x", v, sh.topic, sh.partition, sh.raw, v2)
			}
		}
		if want := []string{"a/0", "b/0", "a/1"}; !slices.Equal(got, want) {
			t.Fatalf("v%d: shares %v, want %v (response order)", v, got, want)
		}
		// Without take (Config.SaramaDecodes): merged, the records left.
		out, shares, err = rewriteFetch(frame, v, nil, false, nil)
		want = responseOf(v, 5, topicEntry{"a", map[int32][]byte{0: v2, 1: v2, 2: nil}}, topicEntry{"b", map[int32][]byte{0: v2}})
		if err != nil || shares != nil || !bytes.Equal(out[4:], want) {
			t.Fatalf("v%d: without take: %v %v\n%x\nwant\n%x", v, err, shares, out, want)
		}
		// Each topic once and nothing taken: read as it came.
		once := responseOf(v, 5, topicEntry{"a", map[int32][]byte{0: v2}}, topicEntry{"b", map[int32][]byte{0: v2}})
		if out, shares, err := rewriteFetch(once, v, nil, false, nil); err != nil || out != nil || shares != nil {
			t.Fatalf("v%d: nothing to change, yet %x %v %v", v, out, shares, err)
		}
	}

	// As sarama reads it: a v12 request over the tap, answered by a
	// response naming topic a twice.
	client, server := net.Pipe()
	defer server.Close()
	tp := newTap(client, time.Minute, true)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.ApiVersionsRequest = false
	cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, pipeDialer{tp}
	cfg.Net.ReadTimeout = 10 * time.Second
	b := sarama.NewBroker("pipe:1")
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	served := make(chan error, 1)
	go func() {
		var hdr [12]byte // size, api key, version, correlation id
		if _, err := io.ReadFull(server, hdr[:]); err != nil {
			served <- err
			return
		}
		if _, err := io.CopyN(io.Discard, server, int64(binary.BigEndian.Uint32(hdr[:]))-8); err != nil {
			served <- err
			return
		}
		body := responseOf(12, int32(binary.BigEndian.Uint32(hdr[8:])), topicEntry{"a", map[int32][]byte{0: v2}},
			topicEntry{"b", map[int32][]byte{0: v2}}, topicEntry{"a", map[int32][]byte{1: v2}})
		_, err := server.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
		served <- err
	}()
	req := &sarama.FetchRequest{Version: 12, MaxWaitTime: 1, MinBytes: 1, MaxBytes: 1 << 20}
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"a", 0}, {"a", 1}, {"b", 0}} {
		req.AddBlock(tp.topic, tp.p, 0, 1<<20, -1)
	}
	resp, err := b.Fetch(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		topic string
		p     int32
	}{{"a", 0}, {"a", 1}, {"b", 0}} {
		if resp.GetBlock(x.topic, x.p) == nil {
			t.Errorf("sarama decoded no block for %s/%d: %v", x.topic, x.p, resp.Blocks)
		}
	}
	if shares := tp.take(); len(shares) != 3 {
		t.Fatalf("taken %d shares, want 3", len(shares))
	}
}

// TestTap: the tap notes fetch requests however sarama's writes cut them,
// passes other frames (SASL tokens shorter than a header too) through, and
// serves a fetch response rewritten, keeping its records for take.
func TestTap(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	tp := newTap(client, time.Minute, true)
	defer tp.Close()
	be := binary.BigEndian
	req := func(key, v int16, corr int32, body int) []byte {
		b := be.AppendUint32(nil, uint32(8+body))
		b = be.AppendUint16(b, uint16(key))
		b = be.AppendUint16(b, uint16(v))
		b = be.AppendUint32(b, uint32(corr))
		return append(b, make([]byte, body)...)
	}
	var stream []byte
	stream = append(stream, 0, 0, 0, 3, 'a', 'b', 'c') // a short SASL token
	stream = append(stream, req(18, 3, 1, 20)...)      // ApiVersions
	stream = append(stream, req(1, 11, 2, 50)...)      // Fetch v11
	stream = append(stream, 0, 0, 0, 0)                // an empty frame
	stream = append(stream, req(1, 12, 3, 7)...)       // Fetch v12
	go func() { _, _ = io.Copy(io.Discard, server) }()
	for i := 0; i < len(stream); {
		n := min(1+i%5, len(stream)-i)
		if _, err := tp.Write(stream[i : i+n]); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if want := []pendingFetch{{corr: 2, version: 11}, {corr: 3, version: 12}}; !slices.Equal(tp.pending, want) {
		t.Fatalf("pending %v, want %v", tp.pending, want)
	}

	v2 := encodeBatch(t, batch(0, 2, 0, false).RecordBatch, sarama.CompressionNone)
	other := append(be.AppendUint32(nil, 6), 0, 0, 0, 9, 'x', 'y')
	fetch := response(11, 2, map[int32][]byte{0: v2})
	frames := slices.Concat(other, be.AppendUint32(nil, uint32(len(fetch))), fetch)
	go func() { _, _ = server.Write(frames) }()
	got := make([]byte, len(other))
	if _, err := io.ReadFull(tp, got); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("passed through: %x %v", got, err)
	}
	want := append(be.AppendUint32(nil, 0), response(11, 2, map[int32][]byte{0: nil})...)
	be.PutUint32(want, uint32(len(want)-4))
	got = make([]byte, len(want))
	if _, err := io.ReadFull(tp, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("rewritten: %x %v", got, err)
	}
	if shares := tp.take(); len(shares) != 1 || !bytes.Equal(shares[0].raw, v2) {
		t.Fatalf("taken: %+v", shares)
	}
	if tp.take() != nil {
		t.Fatal("taken twice")
	}
}

// TestVarints: the short path (one1) and the long one read every varint
// as encoding/binary writes it, at the end of a buffer too, and refuse
// one that the buffer cuts short.
func TestVarints(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 100, 8191, -8192, 8192, 1 << 20, -(1 << 40), 1<<63 - 1, -1 << 63} {
		enc := binary.AppendVarint(nil, v)
		for _, pre := range [][]byte{nil, {0x7f}} {
			b := append(slices.Clone(pre), enc...)
			got, i, ok := one1(b, len(pre))
			if !ok {
				got, i = varint(b, len(pre))
			}
			if got != v || i != len(b) {
				t.Fatalf("%d (%x): read %d, ends at %d of %d", v, enc, got, i, len(b))
			}
			if ok && len(enc) > 2 {
				t.Fatalf("%d: one1 read a %d-byte varint", v, len(enc))
			}
			if _, i, ok := one1(b[:len(b)-1], len(pre)); ok {
				t.Fatalf("%d: one1 read a cut varint to %d", v, i)
			}
			if _, i := varint(b[:len(b)-1], len(pre)); i >= 0 {
				t.Fatalf("%d: varint read a cut varint to %d", v, i)
			}
		}
	}
}

// TestTapOversized: a response frame larger than sarama accepts is passed
// on as it came (sarama refuses it), not read whole.
func TestTapOversized(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	tp := newTap(client, time.Minute, true)
	defer tp.Close()
	tp.pending = []pendingFetch{{corr: 7, version: 11}}
	hdr := binary.BigEndian.AppendUint32(nil, uint32(sarama.MaxResponseSize)+1)
	hdr = binary.BigEndian.AppendUint32(hdr, 7)
	go func() { _, _ = server.Write(append(hdr, 1, 2, 3)) }()
	got := make([]byte, len(hdr)+3)
	if _, err := io.ReadFull(tp, got); err != nil || !bytes.Equal(got, append(hdr, 1, 2, 3)) {
		t.Fatalf("passed on: %x %v", got, err)
	}
	if tp.take() != nil {
		t.Fatal("an oversized frame was taken")
	}
}

// TestTapNothingTaken: a fetch response with no v2 records to take out
// (a legacy message set, or none at all) is served as it came.
func TestTapNothingTaken(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	tp := newTap(client, time.Minute, true)
	defer tp.Close()
	legacy := encodeBatch(t, batch(0, 2, 0, false).RecordBatch, sarama.CompressionNone)
	legacy[batchMagicAt] = 1
	for corr, parts := range []map[int32][]byte{{0: legacy}, {0: nil}} {
		tp.pending = append(tp.pending, pendingFetch{corr: int32(corr), version: 11})
		body := response(11, int32(corr), parts)
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
		go func() { _, _ = server.Write(frame) }()
		got := make([]byte, len(frame))
		if _, err := io.ReadFull(tp, got); err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("response %d: served %x, %v; want it as it came", corr, got, err)
		}
		if tp.take() != nil {
			t.Fatalf("response %d: something taken", corr)
		}
	}
}

func TestKeptBuf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cap, len int
		kept     bool
	}{
		{"small, a short frame", keptSmall, 40, true},
		{"mid, half used", 4 * keptSmall, 2 * keptSmall, true},
		{"mid, a quarter used", 4 * keptSmall, keptSmall, true},
		{"mid, less than a quarter used", 4 * keptSmall, keptSmall - 1, false},
		{"mid, a short frame", 4 * keptSmall, 40, false},
		{"large, filled", keptLarge + 1, keptLarge + 1, false},
		{"at the large bound, filled", keptLarge, keptLarge, true},
	} {
		frame := make([]byte, tc.len, tc.cap)
		if got := keptBuf(frame) != nil; got != tc.kept {
			t.Errorf("%s: cap %d, len %d: kept %v, want %v", tc.name, tc.cap, tc.len, got, tc.kept)
		}
	}
}
