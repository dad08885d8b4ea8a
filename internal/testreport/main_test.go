package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"boom\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0.1}
{"Action":"output","Package":"p","Test":"TestC","Output":"    x_test.go:3: no cluster\n"}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestD","Output":"panic: stuck\n"}
{"Action":"fail","Package":"p","Elapsed":1}
# q [build failed]
`
	var out bytes.Buffer
	code := run(strings.NewReader(in), &out)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{"tests: 1 passed, 1 failed, 1 skipped", "--- FAIL: p.TestA", "boom", "p.TestC: x_test.go:3: no cluster", "# q [build failed]", "FAIL p", "--- UNFINISHED: p.TestD", "panic: stuck"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(strings.NewReader(`{"Action":"pass","Package":"p","Test":"T"}`+"\n"+`{"Action":"pass","Package":"p"}`), &out); code != 0 {
		t.Errorf("exit code %d for a passing run, want 0:\n%s", code, out.String())
	}
}

// TestReportTailSaysWhy: the closing list of failed tests carries each
// one's assertion lines, both ends of them when there are many, and
// leaves the logs between out.
func TestReportTailSaysWhy(t *testing.T) {
	var in strings.Builder
	out := func(s string) {
		fmt.Fprintf(&in, `{"Action":"output","Package":"p","Test":"TestA","Output":%q}`+"\n", s)
	}
	out("=== RUN   TestA\n")
	out("    a_test.go:10: first\n")
	for i := range 50 {
		out(fmt.Sprintf("    [2026-12-01 08:02:16,373] INFO broker log %d\n", i))
	}
	out("    a_test.go:11: second\n")
	out("    a_test.go:12: third\n")
	out("    a_test.go:13: of 10 messages: 1 missing " + strings.Repeat("x", 400) + "\n")
	out("    a_test.go:14: last\n")
	in.WriteString(`{"Action":"fail","Package":"p","Test":"TestA","Elapsed":1}` + "\n")
	var got bytes.Buffer
	run(strings.NewReader(in.String()), &got)
	_, tail, ok := strings.Cut(got.String(), "\nfailed:\n")
	if !ok {
		t.Fatalf("no failed list:\n%s", got.String())
	}
	for _, want := range []string{"p.TestA", "a_test.go:10: first", "a_test.go:11: second", "… 1 more", "a_test.go:13: of 10 messages: 1 missing", "a_test.go:14: last"} {
		if !strings.Contains(tail, want) {
			t.Errorf("tail lacks %q:\n%s", want, tail)
		}
	}
	for _, not := range []string{"broker log", "third", strings.Repeat("x", 300)} {
		if strings.Contains(tail, not) {
			t.Errorf("tail has %q:\n%s", not, tail)
		}
	}
}

func TestAssertions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"log line\n  x.go:1: a\n\tnot.go: b\n", []string{"x.go:1: a"}},
		{"x.go:1: a\nx.go:2: b\nx.go:3: c\nx.go:4: d\nx.go:5: e\nx.go:6: f\n", []string{"x.go:1: a", "x.go:2: b", "… 2 more", "x.go:5: e", "x.go:6: f"}},
		{"x_test.go:1: " + strings.Repeat("y", 20), []string{"x_test.go:1: yyyyy …"}},
	} {
		got := assertions(tc.in, 2, 18)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReportTwoStreams: make test feeds the `go test -json` streams of two
// modules, one after the other, into one report: it counts the tests of
// both and closes with one summary line.
func TestReportTwoStreams(t *testing.T) {
	root := `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestA"}
{"Action":"pass","Package":"a","Test":"TestA","Elapsed":0.1}
{"Action":"output","Package":"a","Test":"TestS","Output":"    s_test.go:1: skipped here\n"}
{"Action":"skip","Package":"a","Test":"TestS","Elapsed":0}
{"Action":"pass","Package":"a","Elapsed":1}
`
	nested := `{"Action":"start","Package":"m/nested"}
{"Action":"run","Package":"m/nested","Test":"TestN"}
{"Action":"pass","Package":"m/nested","Test":"TestN/sub","Elapsed":0.1}
{"Action":"pass","Package":"m/nested","Test":"TestN","Elapsed":0.2}
{"Action":"pass","Package":"m/nested","Elapsed":2}
`
	var out bytes.Buffer
	if code := run(strings.NewReader(root+nested), &out); code != 0 {
		t.Errorf("exit code %d, want 0:\n%s", code, out.String())
	}
	for _, want := range []string{"ok   a\t1.0s", "ok   m/nested\t2.0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "tests: "); n != 1 || !strings.HasSuffix(out.String(), "tests: 3 passed, 0 failed, 1 skipped\n") {
		t.Errorf("want one closing line \"tests: 3 passed, 0 failed, 1 skipped\" at the end, got %d:\n%s", n, out.String())
	}
	out.Reset()
	failing := strings.Replace(nested, `"pass","Package":"m/nested","Test":"TestN",`, `"fail","Package":"m/nested","Test":"TestN",`, 1)
	if code := run(strings.NewReader(root+failing), &out); code != 1 || !strings.HasSuffix(out.String(), "tests: 2 passed, 1 failed, 1 skipped\n") {
		t.Errorf("a failure in the second stream: exit code %d, want 1 and 2 passed, 1 failed:\n%s", code, out.String())
	}
}
