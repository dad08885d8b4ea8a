package offsets

import (
	"context"
	"testing"
)

func TestTokenRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		meta string
		want int64
		ok   bool
	}{
		{FormatToken(1), 1, true},
		{FormatToken(1 << 40), 1 << 40, true},
		{FormatToken(0), 0, false},
		{"", 0, false},
		{"zkgroup:claim=", 0, false},
		{"zkgroup:claim=-5", 0, false},
		{"zkgroup:claim=12x", 0, false},
		{"other client metadata", 0, false},
	} {
		got, ok := ParseToken(tc.meta)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseToken(%q) = %d, %v; want %d, %v", tc.meta, got, ok, tc.want, tc.ok)
		}
	}
	if tokenFrom(context.Background()) != 0 || tokenFrom(WithToken(context.Background(), 7)) != 7 {
		t.Fatal("WithToken does not round-trip")
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("zkgroup:claim=42")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseToken(s)
		if ok {
			if n <= 0 {
				t.Fatalf("ParseToken(%q) = %d, ok", s, n)
			}
			if back, ok2 := ParseToken(FormatToken(n)); !ok2 || back != n {
				t.Fatalf("%d does not round-trip", n)
			}
		}
	})
}
