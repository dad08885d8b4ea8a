package zkdata

import (
	"errors"
	"strings"
	"testing"
)

func TestOffsets(t *testing.T) {
	if got := string(FormatOffset(42)); got != "42" {
		t.Errorf("FormatOffset(42) = %q", got)
	}
	tests := []struct {
		data string
		want int64
	}{
		{"0", 0},
		{"42", 42},
		{" 42\n", 42},
		{"007", 7},
		{"9223372036854775807", 9223372036854775807},
	}
	for _, tt := range tests {
		got, err := ParseOffset("orders", 1, []byte(tt.data))
		if err != nil || got != tt.want {
			t.Errorf("ParseOffset(%q) = %d, %v; want %d", tt.data, got, err, tt.want)
		}
	}
	errs := []struct {
		data, want string
	}{
		{"", `zkdata: offset "orders"/1: empty data`},
		{" \n", "empty data"},
		{"-1", `zkdata: offset "orders"/1: "-1": negative`},
		{"+1", `"+1": not a decimal integer`},
		{"1.5", "not a decimal integer"},
		{"1 2", "not a decimal integer"},
		{"0x10", "not a decimal integer"},
		{"9223372036854775808", "out of range"},
		{strings.Repeat("9", 100), `"` + strings.Repeat("9", 64) + `..."`},
	}
	for _, tt := range errs {
		_, err := ParseOffset("orders", 1, []byte(tt.data))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseOffset(%q) = %v, want error containing %q", tt.data, err, tt.want)
		}
	}
}

func TestOwner(t *testing.T) {
	id := "group1_host-1440000000000-1a2b3c4d-0"
	if got := ParseOwner(FormatOwner(id)); got != id {
		t.Errorf("owner round trip = %q", got)
	}
	if got := ParseOwner([]byte(" c-0\n")); got != "c-0" {
		t.Errorf("ParseOwner trims: %q", got)
	}
	if got := ParseOwner(nil); got != "" {
		t.Errorf("ParseOwner(nil) = %q", got)
	}
}

func TestPaths(t *testing.T) {
	tests := []struct{ got, want string }{
		{ConsumersPath("g"), "/consumers/g"},
		{IDsPath("g"), "/consumers/g/ids"},
		{IDPath("g", "c1"), "/consumers/g/ids/c1"},
		{OwnersPath("g"), "/consumers/g/owners"},
		{OwnerTopicPath("g", "t"), "/consumers/g/owners/t"},
		{OwnerPath("g", "t", 3), "/consumers/g/owners/t/3"},
		{OffsetsPath("g"), "/consumers/g/offsets"},
		{OffsetTopicPath("g", "t"), "/consumers/g/offsets/t"},
		{OffsetPath("g", "t", 12), "/consumers/g/offsets/t/12"},
		{BrokerPath(1001), "/brokers/ids/1001"},
		{TopicPath("t"), "/brokers/topics/t"},
		{BrokerIDsPath, "/brokers/ids"},
		{TopicsPath, "/brokers/topics"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestValidateNodeName(t *testing.T) {
	for _, ok := range []string{"group", "my.group-1_x", "...", "grüppe", "a b", "zookeeper"} {
		if err := ValidateNodeName("group", ok); err != nil {
			t.Errorf("ValidateNodeName(%q) = %v", ok, err)
		}
	}
	tests := []struct{ name, want string }{
		{"", `group "": empty`},
		{".", "reserved"},
		{"..", "reserved"},
		{"a/b", "U+002F"},
		{"a\x00b", "U+0000"},
		{"a\nb", "U+000A"},
		{"a\u0085", "U+0085"},
		{"\ue000", "U+E000"},
		{"\ufff0", "U+FFF0"},
		{"😀", "U+1F600"},
		{"\xff", "invalid UTF-8"},
	}
	for _, tt := range tests {
		err := ValidateNodeName("group", tt.name)
		if err == nil || !strings.HasPrefix(err.Error(), "group ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateNodeName(%q) = %v, want error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestMalformedErrorFormat(t *testing.T) {
	inner := errors.New("inner")
	tests := []struct {
		e    *MalformedError
		want string
	}{
		{&MalformedError{Node: "broker 3", Field: "endpoints[1]", Value: "FOO", Reason: `no "://"`},
			`zkdata: broker 3: endpoints[1] "FOO": no "://"`},
		{&MalformedError{Node: "controller", Field: "brokerid", Reason: "missing"}, "zkdata: controller: brokerid: missing"},
		{&MalformedError{Node: `offset "t"/0`, Value: "x", Reason: "bad"}, `zkdata: offset "t"/0: "x": bad`},
		{&MalformedError{Node: "n", Reason: "r", Err: inner}, "zkdata: n: r"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.e, ErrMalformed) {
			t.Errorf("%v does not wrap ErrMalformed", tt.e)
		}
	}
	if !errors.Is(tests[3].e, inner) {
		t.Error("MalformedError does not unwrap to Err")
	}
}

// TestValidatePath: a chroot follows ZooKeeper's own path rules: no
// empty, "." or ".." segment, no NUL or control or reserved character.
func TestValidatePath(t *testing.T) {
	for _, ok := range []string{"/", "/kafka", "/a/b.c/...", "/a b/ü"} {
		if err := ValidatePath("chroot", ok); err != nil {
			t.Errorf("ValidatePath(%q) = %v", ok, err)
		}
	}
	for _, tt := range []struct{ path, want string }{
		{"", "empty"},
		{"kafka", "must start with /"},
		{"/kafka/", "must not end with /"},
		{"/a//b", "segment 2 \"\": empty"},
		{"/a/./b", "segment 2 \".\": reserved"},
		{"/a/..", "segment 2 \"..\": reserved"},
		{"/a\x00b", "U+0000"},
		{"/a\x1fb", "U+001F"},
		{"/a\x7f", "U+007F"},
		{"/a\u009f", "U+009F"},
		{"/a\ud7ff\ue000", "U+E000"},
		{"/\ufff0", "U+FFF0"},
		{"/" + strings.Repeat("x", 1<<20) + "/..", "reserved"},
	} {
		err := ValidatePath("chroot", tt.path)
		if err == nil || !strings.HasPrefix(err.Error(), "chroot") || !strings.Contains(err.Error(), tt.want) || len(err.Error()) > 300 {
			t.Errorf("ValidatePath(%.20q) = %.300v, want a short error containing %q", tt.path, err, tt.want)
		}
	}
}
