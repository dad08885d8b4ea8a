package daemon

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The harness's own parts, without a cluster: run with
// go test -run 'TestNdjson|TestHTTPCounter|TestChild|TestConfigs' ./daemon/

func TestNdjsonLines(t *testing.T) {
	for body, want := range map[string]int64{"": 0, "{}\n": 1, "{}\n{}": 2, "{}\n{}\n": 2, strings.Repeat("{\"v\":1}\n", 100_000): 100_000} {
		got, err := ndjsonLines(strings.NewReader(body))
		if err != nil || got != want {
			t.Errorf("ndjsonLines(%d bytes) = %d, %v; want %d", len(body), got, err, want)
		}
	}
}

func TestHTTPCounter(t *testing.T) {
	for _, ndjson := range []bool{false, true} {
		p := newProgress(5)
		p.start()
		srv := startHTTPCounter(&httpCounter{p: p, ndjson: ndjson, delay: time.Millisecond})
		post := func(body string) {
			resp, err := http.Post(srv.URL, "application/x-ndjson", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		post("{\"a\":1}\n{\"a\":2}\n")
		post("{\"a\":3}\n{\"a\":4}\n{\"a\":5}\n")
		srv.Close()
		want := int64(2) // one per request
		if ndjson {
			want = 5
		}
		if got := p.count(); got != want {
			t.Errorf("ndjson %v: counted %d, want %d", ndjson, got, want)
		}
		select {
		case <-p.done:
			if !ndjson {
				t.Errorf("per-message: done after 2 of 5")
			}
		default:
			if ndjson {
				t.Errorf("batch: not done after 5 of 5")
			}
		}
	}
}

// TestChild runs a stand-in consumer that prints 90 lines, says on
// stderr that it reached the end of its two partitions, holds 10 more
// lines in its buffer until SIGTERM (as kcat does), and exits 3.
func TestChild(t *testing.T) {
	script := `trap 'i=0; while [ $i -lt 10 ]; do echo tail; i=$((i+1)); done; exit 3' TERM
i=0; while [ $i -lt 90 ]; do echo line; i=$((i+1)); done
echo "% Reached end of topic t [0] at offset 49" >&2
echo "% Reached end of topic u [1] at offset 50" >&2
echo "% Reached end of topic t [0] at offset 50" >&2
echo "% Reached end of topic t [1] at offset 50" >&2
while :; do sleep 0.05; done`
	dir := t.TempDir()
	ch := child{argv: []string{"sh", "-c", script}, stdout: true, slack: 10, logPath: filepath.Join(dir, "stderr"),
		stderrEnd: newKcatEnd("t", map[int32]int64{0: 50, 1: 50})}
	p := newProgress(100)
	res, err := ch.run(p, time.Minute, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.count() != 100 || res.want != 100 || res.exit != "3" || res.killed {
		t.Errorf("count %d, result %+v; want 100 lines, exit 3", p.count(), res)
	}
	if res.first <= 0 || res.total < res.first || res.term <= 0 || res.term > 10*time.Second {
		t.Errorf("times: first %v, total %v, SIGTERM->exit %v", res.first, res.total, res.term)
	}

	// A child that stops short of its count fails the pass.
	ch = child{argv: []string{"sh", "-c", "echo one; echo two"}, stdout: true, logPath: filepath.Join(dir, "stderr2")}
	if _, err := ch.run(newProgress(3), time.Minute, time.Second); err == nil || !strings.Contains(err.Error(), "2 of 3") {
		t.Errorf("short child: %v; want an error naming 2 of 3", err)
	}
}

// TestConfigs checks that the daemon of this checkout (or -bin) accepts
// the config files the zkgroup sides write, with the mode fields when it
// has them (then batch too).
func TestConfigs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the daemon")
	}
	dir := t.TempDir()
	bin := *flagBin
	if bin == "" {
		var err error
		if bin, err = buildDaemon(dir); err != nil {
			t.Fatal(err)
		}
	}
	env := childEnv()
	base := daemonConfig{group: "g", zookeeper: "127.0.0.1:2181/kafka", topic: "t", sink: "stdout"}
	stdout := filepath.Join(dir, "stdout.yaml")
	if err := base.write(stdout); err != nil {
		t.Fatal(err)
	}
	if err := validate(bin, stdout, env); err != nil {
		t.Errorf("stdout config: %v\n%s", err, base.yaml())
	}
	b := &benchEnv{bin: bin, dir: dir, env: env}
	hasMode := map[string]bool{} // sink -> the daemon has sink.<sink>.mode
	for _, c := range []daemonConfig{
		{sink: "http", url: "http://127.0.0.1:1/", mode: "message"},
		{sink: "exec", command: execCommand, commitInterval: "100ms", mode: "message"},
		{sink: "http", url: "http://127.0.0.1:1/", mode: "batch"},
		{sink: "exec", command: execCommand, mode: "batch"},
	} {
		c.group, c.zookeeper, c.topic = base.group, base.zookeeper, base.topic
		got, note, err := checkMode(b, c)
		switch {
		case err != nil && (c.mode == "message" || hasMode[c.sink]):
			t.Errorf("%s %s: %v", c.sink, c.mode, err)
		case err != nil:
			t.Logf("%s batch: %v (a daemon without batch modes)", c.sink, err)
		default:
			if c.mode == "message" {
				hasMode[c.sink] = got.mode != ""
			}
			t.Logf("%s %s: runs with mode %q %s", c.sink, c.mode, got.mode, note)
		}
	}
}
