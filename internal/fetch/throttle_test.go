package fetch_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/zkgroup/zkgroup/internal/fetch"
)

// TestThrottle (sarama's MockBroker, no cluster): a response that asks
// for 3 s of throttling is honoured (no further fetch request within 1 s,
// though the partition wants more), and Close during the wait returns at
// once.
func TestThrottle(t *testing.T) {
	checkLeaks(t)
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	resp := &sarama.FetchResponse{Version: 8, ThrottleTime: 3 * time.Second}
	resp.AddRecord("t", 0, nil, sarama.StringEncoder("x"), 0)
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t),
		"MetadataRequest": sarama.NewMockMetadataResponse(t).
			SetBroker(mb.Addr(), mb.BrokerID()).SetLeader("t", 0, mb.BrokerID()),
		"FetchRequest": sarama.NewMockWrapper(resp),
	})
	client := mockClient(t, mb, sarama.V2_0_0_0)
	defer client.Close()
	f, err := fetch.New(client, fetch.NewConfig(), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Add("t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := p.Take(ctx)
	if err != nil || recs.Len() != 1 {
		t.Fatalf("Take: %v, %v", recs, err)
	}
	fetches := func() int {
		n := 0
		for _, rr := range mb.History() {
			if _, ok := rr.Request.(*sarama.FetchRequest); ok {
				n++
			}
		}
		return n
	}
	time.Sleep(time.Second) // the window in which no request may come
	if n := fetches(); n != 1 {
		t.Fatalf("%d fetch requests within 1 s of a 3 s throttle", n)
	}
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Close took %v during a throttle wait", d)
	}
}
