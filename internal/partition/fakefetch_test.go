package partition

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/fetch"
)

// fakeFetcher is a Fetcher (and an OffsetResolver) over logs the test
// builds, handing each partition's records out the way fetch.Fetcher
// does: a *fetch.Records per response share, made by the fetcher's own
// parsing (fetch.RecordsOf) of a log's record batch, from the fetch offset
// on and in offset order; one Fetch per added partition (ErrExists while
// one is open), ErrOffsetOutOfRange below the log start or past its end,
// ErrClosed after Close. It needs no goroutine: a share is "fetched"
// when Poll asks for it, so a consumer that does not poll fetches
// nothing more (as a full partition buffer leaves the partition out of
// requests), and Ready is signalled when the log grows, an error is
// injected, or the Fetch opens with something to take.
type fakeFetcher struct {
	mu     sync.Mutex
	logs   map[int32]*fakeLog
	open   map[int32]*fakeFetch
	adds   []fakeAdd // every Add, in order
	closes int       // Fetches closed
	// addErrs: this many Adds fail next (with a report of the fetcher's).
	addErrs int
}

// fakeAdd is one Add: the partition and the offset.
type fakeAdd struct {
	partition int32
	offset    int64
}

// fakeLog is a partition's log: record batches of consecutive offsets
// from start, each with its Records as a fetch at its first offset hands
// it over.
type fakeLog struct {
	partition  int32
	start, end int64 // log start offset; next offset to be written
	batches    []*sarama.RecordBatch
	shares     []*fetch.Records
}

func newFakeFetcher() *fakeFetcher {
	return &fakeFetcher{logs: map[int32]*fakeLog{}, open: map[int32]*fakeFetch{}}
}

// feedsOf returns a fakeFetcher whose partitions 0..parts-1 each hold per
// records from offset 0, in shares of up to 256 records.
func feedsOf(parts, per int) *fakeFetcher {
	f := newFakeFetcher()
	for p := range int32(parts) {
		f.produce(p, 0, per, 256)
	}
	return f
}

// produce appends n records to partition p's log in batches of up to
// slab records (the log starts at from when it is new), and wakes its
// open Fetch. A record's value is its offset's low byte, its key "k".
func (f *fakeFetcher) produce(p int32, from int64, n, slab int) {
	f.mu.Lock()
	l := f.logs[p]
	if l == nil {
		l = &fakeLog{partition: p, start: from, end: from}
		f.logs[p] = l
	}
	for n > 0 {
		k := min(n, slab)
		b := &sarama.RecordBatch{FirstOffset: l.end, LastOffsetDelta: int32(k - 1), FirstTimestamp: time.Unix(1e9, 0),
			MaxTimestamp: time.Unix(1e9, 0).Add(time.Duration(k-1) * time.Millisecond), Records: make([]*sarama.Record, k)}
		for i := range k {
			b.Records[i] = &sarama.Record{OffsetDelta: int64(i), TimestampDelta: time.Duration(i) * time.Millisecond,
				Key: []byte("k"), Value: []byte{byte(l.end + int64(i))}}
		}
		l.batches = append(l.batches, b)
		l.shares = append(l.shares, fetch.RecordsOf("t", p, l.block(b), b.FirstOffset))
		l.end += int64(k)
		n -= k
	}
	fp := f.open[p]
	f.mu.Unlock()
	if fp != nil {
		fp.signal()
	}
}

// produceDeltas appends to partition p's log one record batch whose
// records sit at these offset deltas (increasing, the first 0) from the
// log's end, as compaction leaves a batch; the log ends after the last.
func (f *fakeFetcher) produceDeltas(p int32, deltas []int64) {
	f.mu.Lock()
	l := f.logs[p]
	last := deltas[len(deltas)-1]
	b := &sarama.RecordBatch{FirstOffset: l.end, LastOffsetDelta: int32(last), FirstTimestamp: time.Unix(1e9, 0),
		Records: make([]*sarama.Record, len(deltas))}
	for i, d := range deltas {
		b.Records[i] = &sarama.Record{OffsetDelta: d, Key: []byte("k"), Value: []byte{byte(d)}}
	}
	l.batches = append(l.batches, b)
	l.end += last + 1
	l.shares = append(l.shares, fetch.RecordsOf("t", p, l.block(b), b.FirstOffset))
	fp := f.open[p]
	f.mu.Unlock()
	if fp != nil {
		fp.signal()
	}
}

// truncate moves partition p's log start to start (retention).
func (f *fakeFetcher) truncate(p int32, start int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[p]
	l.start = start
}

// block is a fetch response block holding b, with the log's high
// watermark.
func (l *fakeLog) block(b *sarama.RecordBatch) *sarama.FetchResponseBlock {
	return &sarama.FetchResponseBlock{HighWaterMarkOffset: l.end, LastStableOffset: l.end, LogStartOffset: l.start,
		RecordsSet: []*sarama.Records{{RecordBatch: b}}}
}

// share returns what a fetch at offset gets: the batch holding offset,
// from offset on. Under f.mu.
func (l *fakeLog) share(offset int64) *fetch.Records {
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].LastOffset() >= offset })
	b := l.batches[i]
	if offset == b.FirstOffset && l.shares[i].HighWaterMark == l.end {
		return l.shares[i]
	}
	return fetch.RecordsOf("t", l.partition, l.block(b), offset)
}

// Add opens partition p at offset.
func (f *fakeFetcher) Add(topic string, p int32, offset int64) (Fetch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adds = append(f.adds, fakeAdd{p, offset})
	if f.addErrs > 0 {
		f.addErrs--
		return nil, fmt.Errorf("%w: fake: no leader", fetch.ErrFetch)
	}
	if offset < 0 {
		return nil, fmt.Errorf("%w: Add: offset %d is negative", fetch.ErrConfig, offset)
	}
	if f.open[p] != nil {
		return nil, fmt.Errorf("%w: %s/%d", fetch.ErrExists, topic, p)
	}
	if f.logs[p] == nil {
		f.logs[p] = &fakeLog{partition: p}
	}
	fp := &fakeFetch{f: f, partition: p, pos: offset, ready: make(chan struct{}, 1)}
	f.open[p] = fp
	fp.signal()
	return fp, nil
}

// GetOffset resolves sarama.OffsetOldest and OffsetNewest from the logs
// (a time, to the log end).
func (f *fakeFetcher) GetOffset(_ string, p int32, t int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[p]
	if l == nil {
		return 0, errors.New("fake: no such partition")
	}
	if t == sarama.OffsetOldest {
		return l.start, nil
	}
	return l.end, nil
}

// fail injects err into partition p's open Fetch: a report when it wraps
// fetch.ErrFetch (returned once), otherwise a stop (returned until the
// Fetch closes). It returns false when p has no open Fetch.
func (f *fakeFetcher) fail(p int32, err error) bool {
	f.mu.Lock()
	fp := f.open[p]
	if fp != nil {
		if errors.Is(err, fetch.ErrFetch) {
			fp.report = err
		} else {
			fp.stop = err
		}
	}
	f.mu.Unlock()
	if fp == nil {
		return false
	}
	fp.signal()
	return true
}

// state returns the Adds so far, the Fetches closed and whether p has an
// open Fetch with how many shares it handed out.
func (f *fakeFetcher) state(p int32) (adds []fakeAdd, closes int, open bool, polled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	adds = append(adds, f.adds...)
	if fp := f.open[p]; fp != nil {
		open, polled = true, fp.polled
	}
	return adds, f.closes, open, polled
}

// openFetches returns how many Fetches are open.
func (f *fakeFetcher) openFetches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.open)
}

// fakeFetch is a fakeFetcher's Fetch. Its state is under f.mu.
type fakeFetch struct {
	f         *fakeFetcher
	partition int32
	ready     chan struct{} // cap 1
	pos       int64         // next offset to fetch
	report    error
	stop      error
	closed    bool
	polled    int // shares handed out
	notify    atomic.Pointer[func()]
}

func (fp *fakeFetch) Notify(f func()) {
	if f == nil {
		fp.notify.Store(nil)
		return
	}
	fp.notify.Store(&f)
}

func (fp *fakeFetch) Ready() <-chan struct{} { return fp.ready }

func (fp *fakeFetch) signal() {
	select {
	case fp.ready <- struct{}{}:
	default:
	}
	if f := fp.notify.Load(); f != nil {
		(*f)()
	}
}

// Poll hands out the share at the position, an error, or nothing.
func (fp *fakeFetch) Poll() (*fetch.Records, error) {
	f := fp.f
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[fp.partition]
	switch {
	case fp.closed:
		return nil, fetch.ErrClosed
	case fp.stop != nil:
		return nil, fp.stop
	case fp.report != nil:
		err := fp.report
		fp.report = nil
		return nil, err
	case fp.pos < l.start || fp.pos > l.end:
		fp.stop = fmt.Errorf("%w: %d/%d at %d", fetch.ErrOffsetOutOfRange, fp.partition, fp.pos, l.start)
		return nil, fp.stop
	case fp.pos == l.end:
		return nil, nil
	}
	r := l.share(fp.pos)
	fp.pos = r.NextOffset
	fp.polled++
	return r, nil
}

// Close stops the Fetch; idempotent.
func (fp *fakeFetch) Close() {
	f := fp.f
	f.mu.Lock()
	if !fp.closed {
		fp.closed = true
		f.closes++
		if f.open[fp.partition] == fp {
			delete(f.open, fp.partition)
		}
	}
	f.mu.Unlock()
	fp.signal()
}
