package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestExecOversizedKey: a message whose key exceeds what a process's
// environment can hold (E2BIG) was retried as transient forever. It now
// fails for good at once and the failure policy applies: under skip the
// partition moves on past it; under stop the daemon stops at once (no
// retries), saying why.
func TestExecOversizedKey(t *testing.T) {
	t.Parallel()
	c := testcluster.Shared(t)
	topic := testcluster.Name(t, "t")
	createTopic(t, c, topic, 1, 1)
	p, err := sarama.NewSyncProducer(c.Addrs(), testcluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range [][]byte{[]byte("k0"), bytes.Repeat([]byte("k"), 300<<10), []byte("k2")} {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(key),
			Value: sarama.StringEncoder(testcluster.Value(topic, i))}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	script := writeFile(t, "sink.sh", "printf '{\"value\":\"%s\"}\\n' \"$(cat)\"\n")
	sinkCfg := func(policy string) string {
		return fmt.Sprintf("sink:\n  type: exec\n  exec:\n    command: [/bin/sh, %q]\n  retry: {max_attempts: 5, initial_backoff: 10s, max_backoff: 10s}\n  on_failure: %s\n", script, policy)
	}

	t.Run("stop", func(t *testing.T) {
		group := testcluster.Name(t, "g")
		d := startDaemon(t, runOpts{config: baseConfig(c, group, topic, sinkCfg("stop")), stdout: filepath.Join(t.TempDir(), "out")})
		start := time.Now()
		if code := d.wait(60 * time.Second); code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		msg := d.stderr.String()
		if !strings.Contains(msg, "environment size limit") || strings.Contains(msg, "retrying") || time.Since(start) > 40*time.Second {
			t.Errorf("no prompt stop naming the cause (%v):\n%s", time.Since(start), tail(msg, 6))
		}
	})
	t.Run("skip", func(t *testing.T) {
		group := testcluster.Name(t, "g")
		out := filepath.Join(t.TempDir(), "out")
		d := startDaemon(t, runOpts{config: baseConfig(c, group, topic, sinkCfg("skip")), stdout: out})
		d.ready(60 * time.Second)
		await(t, 30*time.Second, "the committed offset past the oversized message", func() bool {
			m, err := c.CommittedOffsets(ctx(t), group, topic, 1)
			return err == nil && m[0] == 3
		})
		if code := d.stop(30 * time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
		got := values(t, readLines(t, out))
		if len(got) != 2 || got[0] != testcluster.Value(topic, 0) || got[1] != testcluster.Value(topic, 2) {
			t.Errorf("printed %q", got)
		}
	})
}
