package scale

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkgroup/zkgroup/bench/internal/benchkit"
	"github.com/zkgroup/zkgroup/internal/testcluster"
	"github.com/zkgroup/zkgroup/subscription"
)

// setUp prepares a benchmark run: the cluster, a fresh topic of P
// partitions with a producer writing rate records/s to it, and the zxid
// marks and ZooKeeper log reader (zl may be nil: counts only). done stops
// the producer and the marks.
func setUp(b *testing.B, name string, P, rate int) (cl *testcluster.Cluster, topic string, sub *subscription.Subscription,
	zx *benchkit.Zxids, zl *benchkit.ZKLog, prod *benchkit.Producer, done func()) {
	cl, topics, sub, zx, zl, prod, done := setUpTopics(b, name, P, 1, rate)
	return cl, topics[0], sub, zx, zl, prod, done
}

// setUpTopics is setUp with the P partitions split evenly over T topics
// (P a multiple of T), subscribed to all.
func setUpTopics(b *testing.B, name string, P, T, rate int) (cl *testcluster.Cluster, topics []string, sub *subscription.Subscription,
	zx *benchkit.Zxids, zl *benchkit.ZKLog, prod *benchkit.Producer, done func()) {
	if T < 1 || P%T != 0 {
		b.Fatalf("-partitions %d must be a multiple of -topics %d", P, T)
	}
	cl = benchkit.Cluster(b)
	base := fmt.Sprintf("bench-%s-%d-%d-%d", name, P, os.Getpid(), time.Now().Unix()%100000)
	var pts []benchkit.Topic
	for i := range T {
		t := base
		if T > 1 {
			t = fmt.Sprintf("%s-t%03d", base, i)
		}
		topics = append(topics, t)
		pts = append(pts, benchkit.Topic{Name: t, Partitions: int32(P / T)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, t := range topics {
		if err := cl.CreateTopic(ctx, t, int32(P/T), int16(*flagReplication)); err != nil {
			b.Fatal(err)
		}
	}
	if err := benchkit.UseLogAppendTime(cl.Addrs(), topics); err != nil {
		b.Fatal(err)
	}
	sub, err := subscription.Static(topics...)
	if err != nil {
		b.Fatal(err)
	}
	prod, err = benchkit.StartProducer(cl.Addrs(), pts, rate, 4*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if !*flagWarmup {
		// The producer starts a goroutine per partition on its first
		// record: wait for them, so that the first side's baseline
		// (goroutines, RSS) holds them as the later sides' do.
		for end := time.Now().Add(2 * time.Minute); prod.Sent() < int64(2*P) && time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond)
		}
		benchkit.Say("warm-up: skipped (-warmup=false); %d records sent before the first side", prod.Sent())
	} else if err := warmUp(cl, pts, 3*time.Minute+time.Duration(P/1000)*time.Minute); err != nil {
		_ = prod.Close()
		b.Fatal(err)
	}
	zx, err = benchkit.NewZxids(cl)
	if err != nil {
		_ = prod.Close()
		b.Fatal(err)
	}
	zl, err = benchkit.NewZKLog(cl)
	if err != nil {
		benchkit.Say("no breakdown of ZooKeeper writes (zxid counts only): %v", err)
	}
	return cl, topics, sub, zx, zl, prod, func() {
		benchkit.Say("slowest zxid mark: %v", zx.Slowest())
		zx.Close()
		if err := prod.Close(); err != nil {
			b.Error(err)
		}
	}
}
