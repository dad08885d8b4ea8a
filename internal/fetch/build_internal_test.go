package fetch

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/IBM/sarama"
)

// idleSessionLoop returns a loop of n idle partitions over an open fetch
// session that holds each as the next request would name it, the loop
// itself idle (its requests wait IdleWait).
func idleSessionLoop(tb testing.TB, n int) *brokerLoop {
	tb.Helper()
	f := &Fetcher{cfg: NewConfig(), version: 12, sessions: true}
	f.idleWait = f.cfg.IdleWait
	l := newBrokerLoop(f, 1, "broker:9092")
	l.sess = session{id: 7, epoch: 3, parts: map[topicPartition]sessPart{}}
	for i := range n {
		p := &Partition{f: f, topic: fmt.Sprintf("topic-%02d", i%10), partition: int32(i / 10),
			offset: 100, size: f.cfg.PartitionMaxBytes, buf: make([]*Records, 0, f.cfg.PartitionBuffer),
			leaderEpoch: 4, lastEpoch: 4, replica: -1, avoid: -1, loop: l}
		l.parts = append(l.parts, p)
		l.sess.parts[topicPartition{p.topic, p.partition}] = sessPart{p: p, offset: 100, size: p.size, epoch: 4, lastEpoch: 4}
	}
	l.quiet = idleAfter
	return l
}

// BenchmarkBuildIdle: the request of an idle loop in an open session
// names and forgets nothing, whatever its partitions; what it costs to
// find that out, per request, at 100 partitions.
func BenchmarkBuildIdle(b *testing.B) {
	l := idleSessionLoop(b, 100)
	for b.Loop() {
		req := l.build()
		if req == nil || len(l.sent) != 0 || len(l.forgot) != 0 || l.kind != reqIncremental {
			b.Fatalf("build: req %v, sent %d, forgot %d, kind %d", req != nil, len(l.sent), len(l.forgot), l.kind)
		}
	}
}

// TestBuildForgetsAndStarved: build over an open session names and
// forgets only what changed (a stopped partition is forgotten, one whose
// offset moved is named), and, once a partition went without data twice
// though it had some, asks for the starved ones alone (every partition
// with a starved count, outside the session), as before one pass took
// each partition's lock once.
func TestBuildForgetsAndStarved(t *testing.T) {
	l := idleSessionLoop(t, 10)
	stopped, moved := l.parts[3], l.parts[5]
	stopped.stop = ErrOffsetOutOfRange
	moved.offset = 150
	if req := l.build(); req == nil || l.kind != reqIncremental {
		t.Fatalf("build: req %v, kind %d, want an incremental request", req != nil, l.kind)
	}
	if len(l.forgot) != 1 || l.forgot[0] != (topicPartition{stopped.topic, stopped.partition}) {
		t.Fatalf("forgot %v, want %s/%d alone", l.forgot, stopped.topic, stopped.partition)
	}
	if len(l.sent) != 1 || l.inReq[l.sent[0]].p != moved {
		t.Fatalf("named %d partitions, want %s/%d alone", len(l.sent), moved.topic, moved.partition)
	}

	l = idleSessionLoop(t, 10)
	l.parts[2].starved, l.parts[7].starved = 2, 1
	if req := l.build(); req == nil || l.kind != reqSessionless {
		t.Fatalf("build: req %v, kind %d, want a sessionless request", req != nil, l.kind)
	}
	var got []*Partition
	for _, rp := range l.inReq {
		got = append(got, rp.p)
	}
	if len(got) != 2 || got[0] != l.parts[2] || got[1] != l.parts[7] {
		t.Fatalf("asked for %d partitions, want the two starved ones", len(got))
	}
}

// TestBuildShrinksAfterPeak: once a loop of 1,000 partitions is down to
// 10 (the rest closed, as when a member that held every partition of the
// group for a moment gave most of them away), the slices and maps its
// requests reuse no longer keep room for 1,000.
func TestBuildShrinksAfterPeak(t *testing.T) {
	l := idleSessionLoop(t, 1000)
	for _, p := range l.parts {
		p.offset = 101 // every partition named: inReq and sent at 1,000
	}
	if req := l.build(); req == nil || len(l.sent) != 1000 {
		t.Fatalf("build: req %v, named %d, want 1,000", req != nil, len(l.sent))
	}
	if !l.sessionDone(&sarama.FetchResponse{SessionID: l.sess.id}) {
		t.Fatal("sessionDone refused the response")
	}
	before := reflect.ValueOf(l.sess.parts).UnsafePointer()
	for _, p := range l.parts[10:] {
		p.closed = true
	}
	if req := l.build(); req == nil || len(l.forgot) != 990 {
		t.Fatalf("build: req %v, forgot %d, want 990", req != nil, len(l.forgot))
	}
	if !l.sessionDone(&sarama.FetchResponse{SessionID: l.sess.id}) {
		t.Fatal("sessionDone refused the response")
	}
	if len(l.sess.parts) != 10 || reflect.ValueOf(l.sess.parts).UnsafePointer() == before {
		t.Fatalf("the session holds %d partitions in its map of 1,000, want 10 in a new one", len(l.sess.parts))
	}
	if req := l.build(); req == nil {
		t.Fatal("build: no request")
	}
	for name, c := range map[string]int{"parts": cap(l.parts), "snap": cap(l.snap), "inReq": cap(l.inReq),
		"sent": cap(l.sent), "forgot": cap(l.forgot)} {
		if c > 100 {
			t.Errorf("%s keeps a capacity of %d for 10 partitions", name, c)
		}
	}
}
