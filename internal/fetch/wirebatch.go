package fetch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/IBM/sarama"
)

// A record batch (magic 2, Kafka 0.11 and later) as the broker sends it:
//
//	baseOffset int64, batchLength int32 (what follows it),
//	partitionLeaderEpoch int32, magic int8, crc uint32 (CRC-32C of what
//	follows it), attributes int16, lastOffsetDelta int32, baseTimestamp
//	int64, maxTimestamp int64, producerId int64, producerEpoch int16,
//	baseSequence int32, records count int32, records (compressed per the
//	attributes).
const (
	batchHeaderSize = 61
	batchMagicAt    = 16
	batchCRCFrom    = 21
)

// Attributes of a record batch.
const (
	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errMalformed: a record batch that cannot be read (a CRC mismatch, a
// record that overruns its batch, a count that does not match). The
// partition's fetch is reported and retried, never skipped.
var errMalformed = errors.New("malformed record batch")

// Batch is a record batch read from a fetch response's bytes by the
// fetcher itself (not sarama): its header, and its records' bytes
// (decompressed), each record decoded only when a Cursor reaches it. Its
// records were checked when the batch was read: a Cursor over them
// cannot fail.
type Batch struct {
	FirstOffset     int64
	LastOffsetDelta int32
	LeaderEpoch     int32
	ProducerID      int64
	// FirstTimestamp and MaxTimestamp as sarama decodes them (zero for a
	// negative one).
	FirstTimestamp, MaxTimestamp time.Time

	attrs int16
	count int
	recs  []byte
}

// LastOffset is the offset of the batch's last record (or of where it was,
// when compaction removed it).
func (b *Batch) LastOffset() int64 { return b.FirstOffset + int64(b.LastOffsetDelta) }

func (b *Batch) control() bool       { return b.attrs&attrControl != 0 }
func (b *Batch) transactional() bool { return b.attrs&attrTransactional != 0 }
func (b *Batch) logAppendTime() bool { return b.attrs&attrLogAppendTime != 0 }

// batchAt reads the header of the batch at the start of raw. It returns
// the batch's size on the wire, or 0 when raw holds only its start (a
// partial batch), and its magic (-1 when raw is too short to say).
func batchAt(raw []byte) (size int, magic int8) {
	if len(raw) <= batchMagicAt {
		return 0, -1
	}
	magic = int8(raw[batchMagicAt])
	n := int64(int32(binary.BigEndian.Uint32(raw[8:12]))) + 12
	if n < 12 || n > int64(len(raw)) {
		return 0, magic
	}
	return int(n), magic
}

// readBatch reads the whole v2 batch raw (batchAt's size): it checks the
// CRC, decompresses the records and checks that they are as many as the
// header says and each within its bounds.
func readBatch(raw []byte) (*Batch, error) {
	if len(raw) < batchHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, under a header's %d", errMalformed, len(raw), batchHeaderSize)
	}
	be := binary.BigEndian
	if got, want := crc32.Checksum(raw[batchCRCFrom:], castagnoli), be.Uint32(raw[17:21]); got != want {
		return nil, fmt.Errorf("%w: CRC %08x, header says %08x", errMalformed, got, want)
	}
	b := &Batch{
		FirstOffset:     batchFirst(raw),
		LeaderEpoch:     int32(be.Uint32(raw[12:16])),
		attrs:           int16(be.Uint16(raw[21:23])),
		LastOffsetDelta: int32(be.Uint32(raw[23:27])),
		FirstTimestamp:  millisTime(int64(be.Uint64(raw[27:35]))),
		MaxTimestamp:    millisTime(int64(be.Uint64(raw[35:43]))),
		ProducerID:      int64(be.Uint64(raw[43:51])),
	}
	count := int32(be.Uint32(raw[57:61]))
	if count < 0 {
		return nil, fmt.Errorf("%w: record count %d", errMalformed, count)
	}
	b.count = int(count)
	recs := raw[batchHeaderSize:]
	if codec := sarama.CompressionCodec(b.attrs & attrCodec); codec != sarama.CompressionNone {
		var err error
		if recs, err = decompress(codec, recs); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errMalformed, codec, err)
		}
	}
	b.recs = recs
	var r record
	i := 0
	for k := 0; k < b.count; k++ {
		if i = r.read(recs, i, false); i < 0 {
			return nil, fmt.Errorf("%w: record %d of %d overruns the batch", errMalformed, k, b.count)
		}
	}
	if i != len(recs) {
		return nil, fmt.Errorf("%w: %d bytes after its %d records", errMalformed, len(recs)-i, b.count)
	}
	return b, nil
}

// millisTime is sarama's reading of a timestamp: zero when negative.
func millisTime(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.Unix(ms/1000, (ms%1000)*int64(time.Millisecond))
}

// record is one record as read from its batch.
type record struct {
	offsetDelta, timestampDelta int64
	key, value                  []byte
	headers                     []*sarama.RecordHeader
}

// read reads the record at b[i:] into r (its headers only when keep) and
// returns where the next one starts, or -1 when the record is malformed.
//
//	length varint, attributes int8, timestampDelta varlong, offsetDelta
//	varint, key varint-length bytes, value varint-length bytes, headers
//	count varint, each header key and value varint-length bytes.
//
// Every varint of a record goes through one1 first: most are one or two
// bytes long, and one1 is inlined where varint is not.
func (r *record) read(b []byte, i int, keep bool) int {
	var n int64
	var ok bool
	if n, i, ok = one1(b, i); !ok {
		n, i = varint(b, i)
	}
	if i < 0 || n < 0 || n > int64(len(b)-i) {
		return -1
	}
	end := i + int(n)
	b = b[:end]
	i++ // attributes
	if r.timestampDelta, i, ok = one1(b, i); !ok {
		r.timestampDelta, i = varint(b, i)
	}
	if r.offsetDelta, i, ok = one1(b, i); !ok {
		r.offsetDelta, i = varint(b, i)
	}
	if r.key, i = varBytes(b, i); i < 0 {
		return -1
	}
	if r.value, i = varBytes(b, i); i < 0 {
		return -1
	}
	var nh int64
	if nh, i, ok = one1(b, i); !ok {
		nh, i = varint(b, i)
	}
	if i < 0 || nh < 0 || nh > int64(end-i) {
		return -1
	}
	r.headers = nil
	if nh > 0 && keep {
		r.headers = make([]*sarama.RecordHeader, nh)
		hs := make([]sarama.RecordHeader, nh)
		for k := range hs {
			r.headers[k] = &hs[k]
		}
	}
	for k := 0; k < int(nh); k++ {
		var hk, hv []byte
		if hk, i = varBytes(b, i); i < 0 {
			return -1
		}
		if hv, i = varBytes(b, i); i < 0 {
			return -1
		}
		if r.headers != nil {
			r.headers[k].Key, r.headers[k].Value = hk, hv
		}
	}
	if i != end {
		return -1
	}
	return end
}

// one1 reads a zigzag varint of one or two bytes at b[i:]; ok false when
// there is none there (b ends, a longer varint, i < 0), i unchanged.
func one1(b []byte, i int) (v int64, j int, ok bool) {
	if uint(i) >= uint(len(b)) {
		return 0, i, false
	}
	u := int64(b[i])
	if u >= 0x80 {
		if uint(i+1) >= uint(len(b)) || b[i+1] >= 0x80 {
			return 0, i, false
		}
		u = u&0x7f | int64(b[i+1])<<7
		i++
	}
	return u>>1 ^ -(u & 1), i + 1, true
}

// varint reads the zigzag varint at b[i:]: its value and where it ends
// (-1 when b ends first or it is longer than 10 bytes).
func varint(b []byte, i int) (int64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	u, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return 0, -1
	}
	return int64(u>>1) ^ -int64(u&1), i + n
}

// varBytes reads varint-length bytes at b[i:]: nil for length -1, b's own
// memory otherwise.
func varBytes(b []byte, i int) ([]byte, int) {
	n, i, ok := one1(b, i)
	if !ok {
		n, i = varint(b, i)
	}
	switch {
	case i < 0 || n < -1 || n > int64(len(b)-i):
		return nil, -1
	case n == -1:
		return nil, i
	}
	return b[i : i+int(n) : i+int(n)], i + int(n)
}

// Cursor walks a Batch's records in offset order, decoding each as it goes:
//
//	c, _ := seg.Cursor() // a Segment's
//	for c.Next() { use(c.Offset, c.Key, c.Value, c.Headers, c.Timestamp) }
//
// Key, Value and Headers are the batch's memory (no copy); each Next
// overwrites the fields.
type Cursor struct {
	Offset     int64
	Key, Value []byte
	Headers    []*sarama.RecordHeader
	Timestamp  time.Time

	b    *Batch
	i    int // where the next record starts in b.recs
	left int
	r    record
}

// cursorAt returns a cursor at the batch's record k, which starts at
// b.recs[pos:] (fromIndex's).
func (b *Batch) cursorAt(k, pos int) Cursor {
	return Cursor{b: b, i: pos, left: b.count - k}
}

// Next moves to the next record; false after the last.
func (c *Cursor) Next() bool {
	if c.left == 0 {
		return false
	}
	c.left--
	r := &c.r
	c.i = r.read(c.b.recs, c.i, true)
	c.Offset = c.b.FirstOffset + r.offsetDelta
	c.Key, c.Value, c.Headers = r.key, r.value, r.headers
	if c.b.logAppendTime() {
		c.Timestamp = c.b.MaxTimestamp
	} else {
		c.Timestamp = c.b.FirstTimestamp.Add(time.Duration(r.timestampDelta) * time.Millisecond)
	}
	return true
}

// firstKey is the key of the batch's first record (a control batch's
// marker), nil when it has none.
func (b *Batch) firstKey() []byte {
	if b.count == 0 {
		return nil
	}
	var r record
	r.read(b.recs, 0, false)
	return r.key
}

// fromIndex is the index of the batch's first record at or after offset
// next and where it starts in b.recs (count and len(b.recs) when there
// is none).
func (b *Batch) fromIndex(next int64) (k, pos int) {
	if next <= b.FirstOffset {
		return 0, 0
	}
	var r record
	for ; k < b.count; k++ {
		at := pos
		pos = r.read(b.recs, pos, false)
		if b.FirstOffset+r.offsetDelta >= next {
			return k, at
		}
	}
	return b.count, pos
}

// batchFirst and batchLast are the first and last offsets a batch's
// header names (raw holds the header at least).
func batchFirst(raw []byte) int64 { return int64(binary.BigEndian.Uint64(raw)) }

func batchLast(raw []byte) int64 {
	return batchFirst(raw) + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
}
