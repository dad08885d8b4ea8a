package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// pipeReader reads a daemon's stdout from a pipe, line by line, and stops
// reading after pauseAt lines until resumed: the daemon's stdout sink then
// blocks in the middle of a batch's write once the pipe is full.
type pipeReader struct {
	mu      sync.Mutex
	lines   []string
	paused  chan struct{} // closed once pauseAt lines were read
	resume  chan struct{} // closed by the test to read on
	done    chan struct{} // closed at EOF
	pauseAt int
}

func readPipe(r io.Reader, pauseAt int) *pipeReader {
	p := &pipeReader{paused: make(chan struct{}), resume: make(chan struct{}), done: make(chan struct{}), pauseAt: pauseAt}
	go func() {
		defer close(p.done)
		br := bufio.NewReaderSize(r, 1<<16)
		for n := 0; ; n++ {
			if n == p.pauseAt {
				close(p.paused)
				<-p.resume
			}
			line, err := br.ReadString('\n')
			if err != nil {
				return // EOF; a partial last line (a write cut off) is no message
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
		}
	}()
	return p
}

// TestSIGTERMBatchInFlight: SIGTERM while the stdout sink is blocked in
// the middle of a batch (its reader stopped reading). When the reader
// reads on within drain_timeout, the drain waits for the batch: the daemon
// exits 0 and has committed exactly what it printed, each message once.
// When it does not, the drain is cut past drain_timeout: nothing that was
// not printed whole is committed.
func TestSIGTERMBatchInFlight(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	const parts, n = 2, 6000
	for _, tc := range []struct {
		name        string
		readOn      bool
		drain, stop string
	}{
		{name: "drained", readOn: true, drain: "10s", stop: "30s"},
		{name: "cut", readOn: false, drain: "2s", stop: "5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			group, topic := groupTopic(t, c, parts, 3)
			begun := time.Now()
			testcluster.MustProduce(t, c, topic, parts, 0, n)
			t.Logf("produced in %v", time.Since(begun))
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cfg := daemonConf{zookeeper: c.ZooKeeperConnect(), group: group, subscription: "static:" + topic,
				drain: tc.drain, shutdown: tc.stop, partition: "  max_unacked: 500\n"}.String()
			d := startDaemon(t, runOpts{config: cfg, stdout: fmt.Sprintf("/proc/self/fd/%d", w.Fd())})
			w.Close() // the daemon holds the write end now: EOF once it exits
			out := readPipe(r, 500)
			select {
			case <-out.paused:
			case <-time.After(60 * time.Second):
				t.Fatal("the daemon printed fewer than 500 lines in 60s")
			}
			t.Logf("500 lines read %v after the start", time.Since(begun))
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			signaled := time.Now()
			await(t, 30*time.Second, "the daemon to begin stopping", func() bool {
				return len(logRecords(d.stderr.String(), "signal received; shutting down")) > 0
			})
			if tc.readOn {
				close(out.resume)
			}
			code := d.wait(30 * time.Second)
			if !tc.readOn {
				close(out.resume)
			}
			<-out.done
			t.Logf("exit %d %v after SIGTERM, %d lines", code, time.Since(signaled), len(out.lines))

			printed := map[int32]map[int64]int{}
			for p := int32(0); p < parts; p++ {
				printed[p] = map[int64]int{}
			}
			for _, l := range out.lines {
				var rec sink.Record
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				printed[rec.Partition][rec.Offset]++
			}
			committed, err := c.CommittedOffsets(ctx(t), group, topic, parts)
			if err != nil {
				t.Fatal(err)
			}
			for p := int32(0); p < parts; p++ {
				for o := int64(0); o < committed[p]; o++ {
					if printed[p][o] == 0 {
						t.Fatalf("partition %d: offset %d committed (up to %d) but never printed", p, o, committed[p])
					}
				}
			}
			if !tc.readOn {
				return
			}
			if code != 0 {
				t.Fatalf("exit %d after a drain that could finish", code)
			}
			if len(out.lines) >= n {
				t.Fatalf("the stop was not mid-stream: all %d messages printed", n)
			}
			total := int64(0)
			for p := int32(0); p < parts; p++ {
				for o, k := range printed[p] {
					if k != 1 || o >= committed[p] {
						t.Errorf("partition %d: offset %d printed %d times, committed up to %d", p, o, k, committed[p])
					}
				}
				total += max(committed[p], 0) // -1: nothing committed (none printed either)
			}
			if total != int64(len(out.lines)) {
				t.Errorf("committed %d messages (%v), printed %d", total, committed, len(out.lines))
			}
		})
	}
}
