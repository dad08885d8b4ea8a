// Command testreport reads `go test -json` from stdin and prints a short
// report: each package's result, the output of every failed test, the
// skipped tests with their reasons, the failed tests each with its
// assertion lines (so the report's tail says why, however long the logs
// before it), and a closing line "tests: N passed, N failed, N skipped".
// It exits 1 when a test or a package failed (including build failures),
// so `make test` fails with it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	type key struct{ pkg, test string }
	output := map[key]*strings.Builder{}
	var passed, failed, skipped int
	var failedTests, skippedTests []string
	pkgFailed := false
	start := time.Now()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not JSON: build errors and the like go straight through.
			fmt.Fprintln(out, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			b := output[k]
			if b == nil {
				b = &strings.Builder{}
				output[k] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				res := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "--  "}[e.Action]
				fmt.Fprintf(out, "%s %s\t%.1fs\n", res, e.Package, e.Elapsed)
				if e.Action == "fail" {
					pkgFailed = true
					if b := output[k]; b != nil {
						fmt.Fprint(out, indent(b.String()))
					}
					// Tests that never finished (a panic, a timeout, a
					// crash): their output explains the failure.
					for ok, b := range output {
						if ok.pkg == e.Package && ok.test != "" {
							fmt.Fprintf(out, "--- UNFINISHED: %s.%s\n%s", ok.pkg, ok.test, indent(b.String()))
							delete(output, ok)
						}
					}
				}
				delete(output, k)
				continue
			}
			name := e.Package + "." + e.Test
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				fmt.Fprintf(out, "--- FAIL: %s (%.1fs)\n", name, e.Elapsed)
				why := ""
				if b := output[k]; b != nil {
					fmt.Fprint(out, indent(b.String()))
					if lines := assertions(b.String(), 2, 300); len(lines) > 0 {
						why = indent(indent(strings.Join(lines, "\n")))
					}
				}
				failedTests = append(failedTests, name+"\n"+why)
			case "skip":
				skipped++
				reason := ""
				if b := output[k]; b != nil {
					reason = lastLine(b.String())
				}
				skippedTests = append(skippedTests, name+": "+reason)
			}
			delete(output, k)
		}
	}
	if len(skippedTests) > 0 {
		sort.Strings(skippedTests)
		fmt.Fprintln(out, "skipped:")
		for _, s := range skippedTests {
			fmt.Fprintln(out, "  "+s)
		}
	}
	if len(failedTests) > 0 {
		fmt.Fprintln(out, "failed:")
		for _, s := range failedTests {
			fmt.Fprint(out, "  "+s)
		}
	}
	fmt.Fprintf(out, "(report read in %v)\n", time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || pkgFailed {
		return 1
	}
	return 0
}

func indent(s string) string {
	var sb strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			sb.WriteString("    " + l)
		}
	}
	if !strings.HasSuffix(sb.String(), "\n") {
		sb.WriteString("\n")
	}
	return sb.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "===") {
			return l
		}
	}
	return ""
}

// assertion is a line a test's t.Error, t.Fatal or t.Log wrote: the file
// and line of the call, then the message.
var assertion = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// assertions returns output's assertion lines, trimmed, each cut to width
// bytes: all of them when there are at most 2*ends, else the first ends
// and the last ends with a count of those left out between. Logs do not
// say which lines failed the test, so both ends are kept: a t.Error may
// come before later logs, a t.Fatal ends the test. Lines that are not
// assertions (the logs a test prints, a cluster's) are skipped.
func assertions(output string, ends, width int) []string {
	var got []string
	for _, l := range strings.Split(output, "\n") {
		if !assertion.MatchString(l) {
			continue
		}
		l = strings.TrimSpace(l)
		if len(l) > width {
			l = l[:width] + " …"
		}
		got = append(got, l)
	}
	if len(got) <= 2*ends {
		return got
	}
	left := fmt.Sprintf("… %d more", len(got)-2*ends)
	return append(append(got[:ends:ends], left), got[len(got)-ends:]...)
}
