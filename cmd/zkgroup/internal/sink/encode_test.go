package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/manager"
)

// referenceJSONLine is the stdout sink's encoder before AppendJSONLine:
// encoding/json of the Record. AppendJSONLine must match it byte for byte.
func referenceJSONLine(m *manager.Message) ([]byte, error) {
	b, err := json.Marshal(NewRecord(m))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// checkSame fails t unless AppendJSONLine (onto a non-empty buffer) and
// EncodeJSONLine write what referenceJSONLine does, or all three fail.
func checkSame(t testing.TB, m *manager.Message) {
	t.Helper()
	want, werr := referenceJSONLine(m)
	prefix := []byte("prefix\n")
	got, gerr := AppendJSONLine(append([]byte(nil), prefix...), m)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("reference error %v, AppendJSONLine error %v", werr, gerr)
	}
	if werr != nil {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("AppendJSONLine failed but changed the buffer: %q", got)
		}
		return
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("AppendJSONLine:\n got %q\nwant %q", got[min(len(prefix), len(got)):], want)
	}
	if enc, err := EncodeJSONLine(m); err != nil || !bytes.Equal(enc, want) {
		t.Fatalf("EncodeJSONLine: %q, %v", enc, err)
	}
}

// hostile is every byte that needs care in JSON and UTF-8.
const hostile = "\x00\x01\x07\b\t\n\v\f\r\x1b\x1f \"\\/<>&'\x7f\u0080\u00e9\u2027\u2028\u2029\u202a\ufeff\ufffd\U0001F600 end"

func hostileMessages() map[string]*manager.Message {
	invalid := [][]byte{{0xff}, {0xc3, 0x28}, {0xe2, 0x80}, {0xed, 0xa0, 0x80}, {0xf4, 0x90, 0x80, 0x80}, []byte("ok\xc0\xafend"), []byte("a\u2028b\xfe")}
	hdr := func(k, v []byte) *sarama.RecordHeader { return &sarama.RecordHeader{Key: k, Value: v} }
	msgs := map[string]*manager.Message{
		"zero":      {},
		"plain":     msg([]byte("hello")),
		"hostile":   {Topic: "t", Key: []byte(hostile), Value: []byte(hostile), Headers: []*sarama.RecordHeader{hdr([]byte(hostile), []byte(hostile))}},
		"nil key":   {Topic: "t", Key: nil, Value: []byte("v")},
		"empty":     {Topic: "t", Key: []byte{}, Value: []byte{}, Headers: []*sarama.RecordHeader{hdr(nil, nil), hdr([]byte{}, []byte{}), nil}},
		"html":      {Topic: "<t&>", Key: []byte("<script>&amp;</script>"), Value: []byte(`{"a":"<b>"}`)},
		"separator": {Topic: "t", Key: []byte("\u2028"), Value: []byte("line\u2029para\u2028")},
		"nul":       {Topic: "t\x00", Key: []byte{0}, Value: bytes.Repeat([]byte{0}, 10)},
		"topic":     {Topic: "bad\xffutf8\u2028<", Partition: -1, Offset: -2},
		"huge":      {Topic: "t", Partition: 1 << 30, Offset: 1<<63 - 1, Key: bytes.Repeat([]byte("k\u2028"), 1<<18), Value: bytes.Repeat([]byte("v<é>\x01"), 1<<20)},
		"huge bin":  {Topic: "t", Value: append(bytes.Repeat([]byte("x"), 3<<20), 0xff)},
	}
	for i, b := range invalid {
		name := "invalid " + string(rune('a'+i))
		msgs[name] = &manager.Message{Topic: "t", Key: b, Value: b, Headers: []*sarama.RecordHeader{hdr(b, b), hdr([]byte("k"), b), hdr(b, []byte("v"))}}
	}
	many := &manager.Message{Topic: "t", Value: []byte("v")}
	for i := 0; i < 100; i++ {
		many.Headers = append(many.Headers, hdr([]byte(strings.Repeat("h", i)), []byte(hostile[:i%len(hostile)])))
	}
	msgs["100 headers"] = many
	est := time.FixedZone("EST", -5*3600)
	odd := time.FixedZone("odd", 5*3600+30*60+17)
	for name, ts := range map[string]time.Time{
		"zero time": {}, "unix 0": time.Unix(0, 0), "pre-1970": time.Date(1901, 12, 13, 20, 45, 52, 1, time.UTC),
		"nanoseconds": time.Unix(1714557600, 123456789), "trailing zeros": time.Unix(1714557600, 120000000),
		"non-UTC": time.Date(2024, 5, 1, 23, 30, 0, 5, est), "odd zone": time.Date(2024, 5, 1, 0, 0, 0, 0, odd),
		"year 0": time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "year 9999": time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		"year 10000": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "year -1": time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		"local year 9999": time.Date(9999, 12, 31, 23, 0, 0, 0, est), "monotonic": time.Now(),
	} {
		m := msg([]byte("v"))
		m.Timestamp = ts
		msgs["timestamp "+name] = m
	}
	return msgs
}

// TestAppendJSONLineMatchesEncodingJSON: the reflection-free encoder
// writes what encoding/json wrote, byte for byte, on hostile input.
func TestAppendJSONLineMatchesEncodingJSON(t *testing.T) {
	for name, m := range hostileMessages() {
		t.Run(name, func(t *testing.T) { checkSame(t, m) })
	}
	for c := 0; c < 256; c++ { // every byte alone, as key, value and header
		b := []byte{byte(c)}
		checkSame(t, &manager.Message{Topic: string(b), Key: b, Value: b, Headers: []*sarama.RecordHeader{{Key: b, Value: b}}})
	}
}

// FuzzEncode compares AppendJSONLine with encoding/json's Record on any
// message.
func FuzzEncode(f *testing.F) {
	f.Add("t", int32(0), int64(0), int64(0), []byte("k"), []byte("v"), []byte("h"), []byte("hv"), false, false)
	f.Add("<&>", int32(-1), int64(-5), int64(-1e18), []byte{0xff}, []byte("\u2028\x00"), []byte{0xc3}, []byte{}, true, false)
	f.Add("\xff", int32(7), int64(1<<62), int64(253402300800), []byte(hostile), []byte(nil), []byte(nil), []byte(nil), false, true)
	f.Fuzz(func(t *testing.T, topic string, part int32, off, nanos int64, key, value, hkey, hval []byte, nilKey, nilValue bool) {
		if nilKey {
			key = nil
		}
		if nilValue {
			value = nil
		}
		m := &manager.Message{Topic: topic, Partition: part, Offset: off, Timestamp: time.Unix(0, nanos), Key: key, Value: value,
			Headers: []*sarama.RecordHeader{{Key: hkey, Value: hval}, nil, {Key: hval, Value: hkey}}}
		checkSame(t, m)
		m.Timestamp = time.Unix(nanos, off).In(time.FixedZone("z", int(part%86400)))
		checkSame(t, m)
	})
}

// benchMessage is a typical message: a short key, a 100-byte value, one
// header.
func benchMessage() *manager.Message {
	return &manager.Message{Topic: "orders", Partition: 3, Offset: 123456789, Key: []byte("key-000042"),
		Value: bytes.Repeat([]byte("abcdefghij"), 10), Timestamp: time.Unix(1714557600, 123000000),
		Headers: []*sarama.RecordHeader{{Key: []byte("trace"), Value: []byte("0af7651916cd43dd")}}}
}

// BenchmarkEncode: encoding/json of the Record (the old encoder) against
// AppendJSONLine into a reused buffer, per message.
func BenchmarkEncode(b *testing.B) {
	m := benchMessage()
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := referenceJSONLine(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendJSONLine(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStdout: a message through the stdout sink, as before (encoding/json
// and one Write per message) and as a BatchSink (1,000 messages a batch,
// one Write), to io.Discard; per message.
func BenchmarkStdout(b *testing.B) {
	msgs := make([]*manager.Message, 1000)
	for i := range msgs {
		msgs[i] = benchMessage()
		msgs[i].Offset += int64(i)
	}
	ctx := context.Background()
	b.Run("per-message-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var mu sync.Mutex
		for i := 0; b.Loop(); i++ {
			line, err := referenceJSONLine(msgs[i%len(msgs)])
			if err != nil {
				b.Fatal(err)
			}
			mu.Lock()
			_, _ = io.Discard.Write(line)
			mu.Unlock()
		}
	})
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		s := NewStdout(io.Discard)
		n := 0
		for b.Loop() {
			if err := s.DeliverBatch(ctx, msgs); err != nil {
				b.Fatal(err)
			}
			n += len(msgs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
		b.ReportMetric(float64(len(msgs)), "msgs/op")
	})
}

// TestPlainWord: the eight-byte test agrees with the byte table on every
// byte in every lane.
func TestPlainWord(t *testing.T) {
	for c := 0; c < 256; c++ {
		for lane := 0; lane < 8; lane++ {
			w := []byte("abcdefgh")
			w[lane] = byte(c)
			want := true
			for _, b := range w {
				want = want && b < utf8.RuneSelf && plain[b]
			}
			if got := plainWord(binary.LittleEndian.Uint64(w)); got != want {
				t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
			}
		}
	}
}
