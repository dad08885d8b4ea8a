package main

import (
	"bytes"
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
