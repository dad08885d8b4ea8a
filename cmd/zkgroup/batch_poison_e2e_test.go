package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestBatchSinksPoison runs the daemon with the http and exec sinks in
// batch mode over a topic holding one poison message, with
// on_failure dead-letter: the first attempt of every batch fails
// (retriable: HTTP 503, exit 1) and is retried whole; a batch holding the
// poison message fails for good (HTTP 400, exit 65), so the handler falls
// back to one message at a time and only the poison message goes to the
// dead-letter topic. Every other message is delivered exactly once, in
// batches of more than one, and everything is committed.
func TestBatchSinksPoison(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts, n, poisonAt = 4, 400, 123
	for _, kind := range []string{"http", "exec"} {
		t.Run(kind, func(t *testing.T) {
			group, topic, dlq := testcluster.Name(t, "g"), testcluster.Name(t, "t"), testcluster.Name(t, "dlq")
			for tp, np := range map[string]int32{topic: parts, dlq: 1} {
				createTopic(t, c, tp, np, 3)
			}
			testcluster.MustProduce(t, c, topic, parts, 0, n)
			poison := testcluster.Value(topic, poisonAt)
			var sinkCfg string
			var delivered func() []string
			var biggest func() int
			switch kind {
			case "http":
				srv := newBatchServer(poison)
				ts := httptest.NewServer(srv)
				t.Cleanup(ts.Close)
				delivered, biggest = srv.values, srv.biggest
				sinkCfg = fmt.Sprintf(`sink:
  type: http
  http:
    url: %q
    mode: batch
    batch: {max_messages: 50, linger: 5ms}
`, ts.URL)
			case "exec":
				dir := t.TempDir()
				out, marks := filepath.Join(dir, "out"), filepath.Join(dir, "marks")
				for _, d := range []string{out, marks} {
					if err := os.Mkdir(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				script := filepath.Join(dir, "batch.sh")
				// First attempt of each batch: exit 1. A batch holding the
				// poison value: exit 65 (permanent). Else write its lines to
				// a file of its own, named with the script's pid so that a
				// batch delivered twice shows twice, and renamed into place
				// so the test never reads half of it. (Appending batches to
				// one file interleaves them: the shell writes a batch larger
				// than its buffer in several writes, and partitions' batches
				// run at once.)
				body := fmt.Sprintf(`#!/bin/sh
in=$(cat)
case "$in" in *%q*) exit 65;; esac
b=$ZKGROUP_PARTITION-$ZKGROUP_FIRST_OFFSET-$ZKGROUP_COUNT
if [ ! -e %q/"$b" ]; then : > %q/"$b"; exit 1; fi
printf '%%s\n' "$in" > %q/"$b-$$.tmp"
mv %q/"$b-$$.tmp" %q/"$b-$$.jsonl"
`, poison, marks, marks, out, out, out)
				if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
				batches := func() [][]string {
					files, err := filepath.Glob(filepath.Join(out, "*.jsonl"))
					if err != nil {
						t.Fatal(err)
					}
					all := make([][]string, 0, len(files))
					for _, f := range files {
						all = append(all, readLines(t, f))
					}
					return all
				}
				delivered = func() []string {
					var vs []string
					for _, b := range batches() {
						vs = append(vs, values(t, b)...)
					}
					return vs
				}
				biggest = func() int {
					most := 0
					for _, b := range batches() {
						most = max(most, len(b))
					}
					return most
				}
				sinkCfg = fmt.Sprintf(`sink:
  type: exec
  exec:
    command: [%q]
    timeout: 10s
    mode: batch
    batch: {max_messages: 50, linger: 5ms}
`, script)
			}
			cfg := baseConfig(c, group, topic, sinkCfg+fmt.Sprintf(`  retry: {max_attempts: 3, initial_backoff: 5ms, max_backoff: 20ms}
  on_failure: dead-letter
  dead_letter_topic: %s
log:
  level: error
`, dlq))
			d := startDaemon(t, runOpts{config: cfg})
			d.ready(60 * time.Second)
			await(t, 90*time.Second, "every message but the poison one delivered", func() bool { return len(delivered()) >= n-1 })
			await(t, 30*time.Second, "the poison message dead-lettered", func() bool {
				hwm, err := c.HighWaterMarks(dlq)
				return err == nil && hwm[0] >= 1
			})
			awaitCommittedAtEnd(t, c, group, topic, parts)
			if code := d.stop(30 * time.Second); code != 0 {
				t.Fatalf("exit %d", code)
			}
			got := map[string]int{}
			for _, v := range delivered() {
				got[v]++
			}
			for i := range n {
				v := testcluster.Value(topic, i)
				want := 1
				if i == poisonAt {
					want = 0
				}
				if got[v] != want {
					t.Errorf("%s delivered %d times; want %d", v, got[v], want)
				}
			}
			if b := biggest(); b < 2 {
				t.Errorf("the largest batch delivered held %d messages; want batches", b)
			}
			if dl := readDLQ(t, c, dlq); len(dl) != 1 || dl[0] != poison {
				t.Errorf("dead-letter topic holds %q; want only %q", dl, poison)
			}
		})
	}
}

// batchServer is an HTTP batch endpoint: the first attempt of every batch
// gets 503, a batch holding the poison value 400, others 200 (recorded).
type batchServer struct {
	poison string
	mu     sync.Mutex
	seen   map[string]bool
	lines  []string
	most   int
}

func newBatchServer(poison string) *batchServer {
	return &batchServer{poison: poison, seen: map[string]bool{}}
}

func (s *batchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if bytes.Contains(body, []byte(`"`+s.poison+`"`)) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	key := r.Header.Get("X-Kafka-Partition") + "-" + r.Header.Get("X-Kafka-First-Offset") + "-" + r.Header.Get("X-Kafka-Count")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen[key] {
		s.seen[key] = true
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	k := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		s.lines = append(s.lines, sc.Text())
		k++
	}
	s.most = max(s.most, k)
	w.WriteHeader(http.StatusOK)
}

func (s *batchServer) values() []string {
	s.mu.Lock()
	lines := append([]string(nil), s.lines...)
	s.mu.Unlock()
	var out []string
	for _, l := range lines {
		if i := strings.Index(l, `"value":"`); i >= 0 {
			v := l[i+len(`"value":"`):]
			out = append(out, v[:strings.IndexByte(v, '"')])
		}
	}
	return out
}

func (s *batchServer) biggest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// readDLQ returns the values of the one-partition topic dlq.
func readDLQ(t *testing.T, c *testcluster.Cluster, dlq string) []string {
	t.Helper()
	cons, err := sarama.NewConsumer(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	hwm, err := c.HighWaterMarks(dlq)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cons.ConsumePartition(dlq, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []string
	for int64(len(out)) < hwm[0] {
		select {
		case m := <-pc.Messages():
			out = append(out, string(m.Value))
		case <-time.After(30 * time.Second):
			t.Fatalf("dead-letter topic: %d of %d read", len(out), hwm[0])
		}
	}
	return out
}
