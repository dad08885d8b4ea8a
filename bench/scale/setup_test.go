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
	cl = benchkit.Cluster(b)
	topic = fmt.Sprintf("bench-%s-%d-%d-%d", name, P, os.Getpid(), time.Now().Unix()%100000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cl.CreateTopic(ctx, topic, int32(P), int16(*flagReplication)); err != nil {
		b.Fatal(err)
	}
	sub, err := subscription.Static(topic)
	if err != nil {
		b.Fatal(err)
	}
	prod, err = benchkit.StartProducer(cl.Addrs(), []benchkit.Topic{{Name: topic, Partitions: int32(P)}}, rate, 4*time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if !*flagWarmup {
		benchkit.Say("warm-up: skipped (-warmup=false)")
	} else if err := warmUp(cl, topic, P, 3*time.Minute); err != nil {
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
	return cl, topic, sub, zx, zl, prod, func() {
		benchkit.Say("slowest zxid mark: %v", zx.Slowest())
		zx.Close()
		if err := prod.Close(); err != nil {
			b.Error(err)
		}
	}
}
