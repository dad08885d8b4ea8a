package sink

import (
	"encoding/base64"
	"encoding/json"
	"github.com/zkgroup/zkgroup/manager"
	"time"
	"unicode/utf8"
)

// Record is the JSON form of a message written by the stdout sink. Key and
// Value hold the bytes as text when they are valid UTF-8 and as standard
// base64 otherwise, with KeyEncoding/ValueEncoding "base64"; a nil key or
// value is JSON null. A plain value, safe for concurrent reads.
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
}

// Header is one Kafka record header in a Record.
type Header struct {
	Key           string `json:"key"`
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding,omitempty"`
}

// Base64 is the encoding name used when bytes are not valid UTF-8.
const Base64 = "base64"

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
	r := Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp.UTC(), Headers: []Header{}}
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

// EncodeJSONLine returns the message as one JSON object and a newline.
// Pure; safe for concurrent use.
func EncodeJSONLine(m *manager.Message) ([]byte, error) {
	b, err := json.Marshal(NewRecord(m))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
