package config

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestIntegerFieldsRefuseFractions: YAML floats were truncated into
// integer fields (max_unacked: 1.5 became 1).
func TestIntegerFieldsRefuseFractions(t *testing.T) {
	for _, v := range []string{"1.5", "2.0", "1e3", ".inf", "true"} {
		_, err := Load(Sources{File: writeFile(t, "partition:\n  max_unacked: "+v+"\n")})
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "partition.max_unacked") || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("max_unacked: %s: got %v, want an error naming the field and line", v, err)
		}
	}
	c, err := Load(Sources{File: writeFile(t, "sink:\n  retry:\n    max_attempts: 0x10\n")})
	if err != nil || c.Sink.Retry.MaxAttempts != 16 {
		t.Fatalf("hex integer: %v %d", err, c.Sink.Retry.MaxAttempts)
	}
}

// TestOversizedFileRefused: a 62 MB file once did not load in 300 s.
func TestOversizedFileRefused(t *testing.T) {
	var b strings.Builder
	for b.Len() <= MaxFileSize {
		fmt.Fprintf(&b, "k%d: v\n", b.Len())
	}
	_, err := Load(Sources{File: writeFile(t, b.String())})
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
}

// TestManyUnknownKeys: a file just under the size limit made of unknown
// keys is refused naming the first few, in linear time (the YAML decoder
// compares every key of a mapping with every other).
func TestManyUnknownKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(validYAML)
	for i := 0; b.Len() < MaxFileSize-64; i++ {
		fmt.Fprintf(&b, "unknown_%d: v\n", i)
	}
	start := time.Now()
	_, err := Load(Sources{File: writeFile(t, b.String())})
	took := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `unknown key "unknown_0"`) || !strings.Contains(msg, `unknown key "unknown_2"`) ||
		strings.Contains(msg, `"unknown_3"`) || !strings.Contains(msg, "more unknown key(s) not listed") {
		t.Fatalf("error lists the wrong keys: %.600s", msg)
	}
	if len(msg) > 4000 {
		t.Fatalf("error is %d bytes long", len(msg))
	}
	t.Logf("refused %d bytes in %v", b.Len(), took)
}

func TestRepeatedKeysAndHugeMaps(t *testing.T) {
	_, err := Load(Sources{File: writeFile(t, validYAML+"group: again\n")})
	if err == nil || !strings.Contains(err.Error(), "given twice (first on line 1)") {
		t.Fatalf("repeated key: %v", err)
	}
	var b strings.Builder
	b.WriteString("sink:\n  http:\n    headers:\n")
	for i := 0; i <= maxMapEntries; i++ {
		fmt.Fprintf(&b, "      h%d: v\n", i)
	}
	_, err = Load(Sources{File: writeFile(t, b.String())})
	if err == nil || !strings.Contains(err.Error(), "sink.http.headers") {
		t.Fatalf("huge headers: %v", err)
	}
	_, err = Load(Sources{File: writeFile(t, "kafka: plain\n")})
	if err == nil || !strings.Contains(err.Error(), "want a mapping") {
		t.Fatalf("scalar for a section: %v", err)
	}
}

// TestFlagHelp: every flag says what it means and its default.
func TestFlagHelp(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		field, _ := fieldByPath(strings.ReplaceAll(f.Name, "-", "."))
		if f.Usage == "" || strings.HasPrefix(f.Usage, "\n") || !strings.Contains(f.Usage, "default ") {
			t.Errorf("--%s: usage %q lacks a meaning or a default", f.Name, f.Usage)
		}
		_ = field
	})
	if n != len(Fields()) {
		t.Fatalf("%d flags for %d fields", n, len(Fields()))
	}
	for _, f := range Fields() {
		if f.Help == "" {
			t.Errorf("field %s has no help tag", f.Path)
		}
	}
	var sb strings.Builder
	fs.SetOutput(&sb)
	fs.PrintDefaults()
	for _, want := range []string{`default "127.0.0.1:9779"`, `default "10s"`, "consumer group to join", `default "2.1.0"`} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("help lacks %s", want)
		}
	}
}
