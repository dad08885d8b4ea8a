package fetch_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	metrics "github.com/rcrowley/go-metrics"

	"github.com/zkgroup/zkgroup/internal/fetch"
	"github.com/zkgroup/zkgroup/internal/testcluster"
)

// TestSessionErrors runs the session's state machine against sarama's mock
// broker, which answers a script: a session opened (id 10), then
// FETCH_SESSION_ID_NOT_FOUND (the next request opens a new session: id 0,
// epoch 0), a session 11, INVALID_FETCH_SESSION_EPOCH (the next request
// closes 11 and opens another: id 11, epoch 0), a session 12 whose
// response fences the partition's leader epoch (routed again after a
// metadata refresh, no report: the session keeps it), then a record. The
// requests carry the session ids and epochs the protocol wants, name the
// partition only in full requests and once its offset moved, and carry the
// leader epoch of the metadata.
func TestSessionErrors(t *testing.T) {
	checkLeaks(t)
	const topic = "t"
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	mb.SetLatency(5 * time.Millisecond)
	empty := func(session int32, code sarama.KError) *sarama.FetchResponse {
		r := &sarama.FetchResponse{Version: 12, SessionID: session, ErrorCode: int16(code)}
		return r
	}
	withBlock := func(session int32, err sarama.KError) *sarama.FetchResponse {
		r := empty(session, sarama.ErrNoError)
		r.AddError(topic, 0, err)
		return r
	}
	withRecord := withBlock(12, sarama.ErrNoError)
	withRecord.AddRecord(topic, 0, nil, sarama.StringEncoder("v"), 0)
	withRecord.Blocks[topic][0].HighWaterMarkOffset = 1
	withRecord.Blocks[topic][0].LastStableOffset = 1
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": sarama.NewMockMetadataResponse(t).SetBroker(mb.Addr(), mb.BrokerID()).SetLeader(topic, 0, mb.BrokerID()),
		"FetchRequest": sarama.NewMockSequence(
			withBlock(10, sarama.ErrNoError),
			empty(0, sarama.ErrFetchSessionIDNotFound),
			withBlock(11, sarama.ErrNoError),
			empty(0, sarama.ErrInvalidFetchSessionEpoch),
			withBlock(12, sarama.ErrFencedLeaderEpoch),
			empty(12, sarama.ErrNoError),
			withRecord,
			empty(12, sarama.ErrNoError),
		),
	})
	client := mockClient(t, mb, sarama.V3_9_0_0, func(cfg *sarama.Config) { cfg.Metadata.Retry.Backoff = 10 * time.Millisecond })
	defer client.Close()
	_, epoch, err := client.LeaderAndEpoch(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	fcfg := fetch.NewConfig()
	fcfg.RetryBackoff = 10 * time.Millisecond
	f := newFetcher(t, client, fcfg)
	p, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := p.Take(ctx)
	if err != nil {
		t.Fatalf("Take: %v (the fenced epoch is no report)", err)
	}
	if recs.Len() != 1 || recs.NextOffset != 1 {
		t.Fatalf("took %d records to %d", recs.Len(), recs.NextOffset)
	}
	testcluster.Await(t, 30*time.Second, 5*time.Millisecond, "8 fetch requests", func() bool { return len(fetches(mb)) >= 8 })
	type want struct {
		id, epoch int32
		named     map[int32]int64 // partition: fetch offset
	}
	p0 := map[int32]int64{0: 0}
	wants := []want{
		{0, 0, p0},                     // full: opens a session
		{10, 1, nil},                   // incremental: nothing changed
		{0, 0, p0},                     // after FETCH_SESSION_ID_NOT_FOUND: a new session
		{11, 1, nil},                   //
		{11, 0, p0},                    // after INVALID_FETCH_SESSION_EPOCH: 11 closed, a new one
		{12, 1, nil},                   // routed again after the fenced epoch: still in the session
		{12, 2, nil},                   // the record comes
		{12, 3, map[int32]int64{0: 1}}, // the offset moved
	}
	got := fetches(mb)
	for i, w := range wants {
		r := got[i]
		named := blocksOf(r, topic)
		if r.SessionID != w.id || r.SessionEpoch != w.epoch || !reflect.DeepEqual(offsetsOf(named), nonNil(w.named)) {
			t.Errorf("request %d: session %d epoch %d, named %v; want %d %d %v", i, r.SessionID, r.SessionEpoch, offsetsOf(named), w.id, w.epoch, w.named)
		}
		for part, b := range named {
			if e := b.FieldByName("currentLeaderEpoch").Int(); e != int64(epoch) {
				t.Errorf("request %d: partition %d: current leader epoch %d; want %d", i, part, e, epoch)
			}
		}
	}
	if st := f.Stats(); st.SessionErrors != 2 {
		t.Errorf("stats: %+v", st)
	}
}

// fetches returns the fetch requests the mock broker answered.
func fetches(mb *sarama.MockBroker) []*sarama.FetchRequest {
	var out []*sarama.FetchRequest
	for _, rr := range mb.History() {
		if r, ok := any(rr.Request).(*sarama.FetchRequest); ok {
			out = append(out, r)
		}
	}
	return out
}

// blocksOf returns the partitions of topic a request names (sarama keeps
// them unexported: read by reflection).
func blocksOf(r *sarama.FetchRequest, topic string) map[int32]reflect.Value {
	out := map[int32]reflect.Value{}
	tm := reflect.ValueOf(r).Elem().FieldByName("blocks").MapIndex(reflect.ValueOf(topic))
	if !tm.IsValid() {
		return out
	}
	for it := tm.MapRange(); it.Next(); {
		out[int32(it.Key().Int())] = it.Value().Elem()
	}
	return out
}

func offsetsOf(blocks map[int32]reflect.Value) map[int32]int64 {
	out := map[int32]int64{}
	for p, b := range blocks {
		out[p] = b.FieldByName("fetchOffset").Int()
	}
	return out
}

func nonNil(m map[int32]int64) map[int32]int64 {
	if m == nil {
		return map[int32]int64{}
	}
	return m
}

// TestPrepMeterQuiet: a fetch of a topic leaves go-metrics'
// DefaultRegistry with the no-op meter under the name sarama's sizing
// pass marks (see quietPrepMeter), not a meter that starts go-metrics'
// global ticker; without it, sarama registers a *metrics.StandardMeter.
func TestPrepMeterQuiet(t *testing.T) {
	checkLeaks(t)
	const topic = "prep.meter"
	name := fetch.PrepMeterName(topic)
	if m := metrics.DefaultRegistry.Get(name); m != nil {
		t.Fatalf("%s registered before the test: %T", name, m)
	}
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	withRecord := &sarama.FetchResponse{Version: 12}
	withRecord.AddRecord(topic, 0, nil, sarama.StringEncoder("v"), 0)
	withRecord.Blocks[topic][0].HighWaterMarkOffset = 1
	withRecord.Blocks[topic][0].LastStableOffset = 1
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": sarama.NewMockMetadataResponse(t).SetBroker(mb.Addr(), mb.BrokerID()).SetLeader(topic, 0, mb.BrokerID()),
		"FetchRequest":    sarama.NewMockSequence(withRecord, &sarama.FetchResponse{Version: 12}),
	})
	client := mockClient(t, mb, sarama.V3_9_0_0)
	defer client.Close()
	f := newFetcher(t, client, fetch.NewConfig())
	p, err := f.Add(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(fetches(mb)); n == 0 {
		t.Fatal("no fetch request reached the broker")
	}
	if m, ok := metrics.DefaultRegistry.Get(name).(metrics.NilMeter); !ok {
		t.Errorf("DefaultRegistry's %s is %T; want metrics.NilMeter", name, metrics.DefaultRegistry.Get(name))
	} else {
		m.Mark(1) // a no-op
	}
}
