package sink

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/zkgroup/zkgroup/manager"
)

// Record is the JSON form of a message written by the stdout sink. Key and
// Value hold the bytes as text when they are valid UTF-8 and as standard
// base64 otherwise, with KeyEncoding/ValueEncoding "base64"; a nil key or
// value is JSON null. A plain value, safe for concurrent reads.
//
// AppendJSONLine writes this form without reflection; it is byte for byte
// what encoding/json makes of the Record (HTML characters, U+2028 and
// U+2029 escaped as \u003c, \u2028 and so on), which the tests check.
type Record struct {
	Topic         string    `json:"topic"`
	Partition     int32     `json:"partition"`
	Offset        int64     `json:"offset"`
	Timestamp     time.Time `json:"timestamp"`
	Key           *string   `json:"key"`
	KeyEncoding   string    `json:"key_encoding,omitempty"`
	Value         *string   `json:"value"`
	ValueEncoding string    `json:"value_encoding,omitempty"`
	Headers       []Header  `json:"headers"`
	// FencingToken is the token of the claim the message was handed out
	// under (manager.Message.FencingToken): higher for every later claim
	// of the partition, so a sink can refuse a write of a lower one.
	FencingToken int64 `json:"fencing_token"`
}

// Header is one Kafka record header in a Record.
type Header struct {
	Key           string `json:"key"`
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding,omitempty"`
}

// Base64 is the encoding name used when bytes are not valid UTF-8.
const Base64 = "base64"

// errTimestamp: a timestamp that RFC 3339 (and so JSON) cannot carry.
var errTimestamp = errors.New("sink: timestamp year outside of range [0,9999]")

// text returns b as text, or base64 with encoding "base64" when b is not
// valid UTF-8. A nil b gives nil.
func text(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, Base64
}

// NewRecord converts a message. Header keys that are not valid UTF-8 are
// base64-encoded without a marker (they are rare and JSON needs text).
// Pure; safe for concurrent use.
func NewRecord(m *manager.Message) Record {
	r := Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp.UTC(), Headers: []Header{},
		FencingToken: m.FencingToken()}
	r.Key, r.KeyEncoding = text(m.Key)
	r.Value, r.ValueEncoding = text(m.Value)
	for _, h := range m.Headers {
		if h == nil {
			continue
		}
		k := string(h.Key)
		if !utf8.Valid(h.Key) {
			k = base64.StdEncoding.EncodeToString(h.Key)
		}
		v, enc := text(h.Value)
		hv := ""
		if v != nil {
			hv = *v
		}
		r.Headers = append(r.Headers, Header{Key: k, Value: hv, ValueEncoding: enc})
	}
	return r
}

// EncodeJSONLine returns the message as one JSON object (its Record) and a
// newline. Pure; safe for concurrent use.
func EncodeJSONLine(m *manager.Message) ([]byte, error) {
	return AppendJSONLine(make([]byte, 0, 128+MessageSize(m)), m)
}

// AppendJSONLine appends the message's JSON line (what EncodeJSONLine
// returns) to dst and returns the extended buffer. On an error (a
// timestamp year outside [0,9999], which RFC 3339 cannot write) it returns
// dst unchanged. It allocates only to grow dst. Pure; safe for concurrent
// use on different buffers.
func AppendJSONLine(dst []byte, m *manager.Message) ([]byte, error) {
	ts := m.Timestamp.UTC()
	if y := ts.Year(); y < 0 || y > 9999 {
		return dst, fmt.Errorf("%w: %d", errTimestamp, y)
	}
	b := append(dst, `{"topic":`...)
	b = appendString(b, m.Topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(m.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, m.Offset, 10)
	b = append(b, `,"timestamp":"`...)
	b = ts.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","key":`...)
	b = appendBytes(b, m.Key, `,"key_encoding":"base64"`)
	b = append(b, `,"value":`...)
	b = appendBytes(b, m.Value, `,"value_encoding":"base64"`)
	b = append(b, `,"headers":[`...)
	first := true
	for _, h := range m.Headers {
		if h == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, `{"key":`...)
		if k, ok := appendText(b, h.Key); ok {
			b = k
		} else { // base64 without a marker (see NewRecord)
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, h.Key)
			b = append(b, '"')
		}
		b = append(b, `,"value":`...)
		if h.Value == nil {
			b = append(b, `""`...)
		} else {
			b = appendBytes(b, h.Value, `,"value_encoding":"base64"`)
		}
		b = append(b, '}')
	}
	b = append(b, `],"fencing_token":`...)
	b = strconv.AppendInt(b, m.FencingToken(), 10)
	return append(b, "}\n"...), nil
}

// appendBytes appends v as a JSON string (text, or base64 followed by
// marker), or null when v is nil.
func appendBytes(dst, v []byte, marker string) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	if b, ok := appendText(dst, v); ok {
		return b
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, v)
	dst = append(dst, '"')
	return append(dst, marker...)
}

// hexDigits are the lower-case hex digits encoding/json writes.
const hexDigits = "0123456789abcdef"

// plain[c] is true for the ASCII bytes encoding/json writes as they are
// (with HTML escaping): printable, but for '"', '\\', '<', '>' and '&'.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Masks for plainWord: a byte 0x01 and 0x80 in each of eight lanes.
const (
	lanes1  = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// hasByte reports whether a byte of x equals c (exact for any x).
func hasByte(x uint64, c byte) bool {
	y := x ^ (lanes1 * uint64(c))
	return (y-lanes1)&^y&lanes80 != 0
}

// plainWord reports whether the eight bytes of x are all plain (see
// plain): ASCII, none below 0x20, none of '"', '\\', '<', '>', '&'.
func plainWord(x uint64) bool {
	if x&lanes80 != 0 {
		return false
	}
	// With every byte below 0x80, (x - 0x20 per lane) borrows into a
	// lane's top bit exactly when that byte is below 0x20.
	if (x-lanes1*0x20)&^x&lanes80 != 0 {
		return false
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// appendEscaped appends the escape of the ASCII byte c as encoding/json
// writes it.
func appendEscaped(dst []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// appendText appends src as a quoted JSON string and reports true, or
// reports false (and returns dst as it was) when src is not valid UTF-8.
// One pass over src.
func appendText(dst, src []byte) ([]byte, bool) {
	n := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if i+8 <= len(src) && plainWord(binary.LittleEndian.Uint64(src[i:])) {
			i += 8
			continue
		}
		c := src[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = appendEscaped(append(dst, src[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			return dst[:n], false
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"'), true
}

// appendString appends s as a quoted JSON string as encoding/json does:
// bytes that are not valid UTF-8 become \ufffd.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = appendEscaped(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
