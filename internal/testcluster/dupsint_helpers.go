package testcluster

import (
	"context"
	"net"
	"testing"
	"time"
)

// MustCreateTopic creates topic on c (see CreateTopic), waiting up to
// three minutes, and fails tb if that fails.
func MustCreateTopic(tb testing.TB, c *Cluster, topic string, partitions int32, replication int16) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.CreateTopic(ctx, topic, partitions, replication); err != nil {
		tb.Fatal(err)
	}
}

// MustHighWaterMarks is c.HighWaterMarks that fails tb on an error.
func MustHighWaterMarks(tb testing.TB, c *Cluster, topic string) map[int32]int64 {
	tb.Helper()
	hwm, err := c.HighWaterMarks(topic)
	if err != nil {
		tb.Fatal(err)
	}
	return hwm
}

// Serve hands every connection l accepts to handle, each in a goroutine of
// its own, until tb ends and closes l; it returns l's address.
func Serve(tb testing.TB, l net.Listener, handle func(net.Conn)) string {
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return l.Addr().String()
}

// MustDescribeTopic describes group (DescribeGroup) and returns its rows by
// partition; it fails tb on an error or on a row of another topic.
func MustDescribeTopic(ctx context.Context, tb testing.TB, c *Cluster, group, topic string) map[int32]GroupRow {
	tb.Helper()
	rows, err := c.DescribeGroup(ctx, group)
	if err != nil {
		tb.Fatal(err)
	}
	got := make(map[int32]GroupRow, len(rows))
	for _, r := range rows {
		if r.Topic != topic {
			tb.Fatalf("a row of another topic than %s: %+v", topic, r)
		}
		got[r.Partition] = r
	}
	return got
}
