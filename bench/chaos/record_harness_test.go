package chaos

import (
	"compress/gzip"
	"encoding/gob"
	"errors"
	"os"
	"time"
)

// record is what a run observed, saved next to its summary so that the
// judges can be run again on it (-rejudge).
type record struct {
	Seed                       uint64
	Duration, Session, Commit  time.Duration
	Rebalance                  time.Duration
	Partitions                 int32
	Replication, Rate          int
	Strategy, Topic, Group     string
	T0, Healed, Drained        int64
	DrainOK                    bool
	Prints                     [][5]int64 // t, offset, seq, partition, incarnation
	Acked                      [][4]int64 // partition, offset, ack time, seq
	Polled                     map[int32][][2]int64
	Incs                       []*incInfo
	Faults                     []executed
	TermExits, Notes, Garbled  []string
	HWM, Committed             map[int32]int64
	Hist                       map[int32][][2]int64
	HistSource                 string
	HistRecords, HistSegs      int
	HistErr                    string
	ProduceErrs, Polls, PollEr int64
}

func pairs(m map[int32][]commitEv) map[int32][][2]int64 {
	out := map[int32][][2]int64{}
	for p, evs := range m {
		for _, e := range evs {
			out[p] = append(out[p], [2]int64{e.t, e.off})
		}
	}
	return out
}

func unpairs(m map[int32][][2]int64) map[int32][]commitEv {
	out := map[int32][]commitEv{}
	for p, evs := range m {
		for _, e := range evs {
			out[p] = append(out[p], commitEv{t: e[0], off: e[1]})
		}
	}
	return out
}

func (r *run) save(path string) error {
	c := r.col
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := record{Seed: *flagSeed, Duration: *flagDuration, Session: r.session, Commit: *flagCommit, Rebalance: *flagRebalance,
		Partitions: r.partitions, Replication: *flagReplication, Rate: *flagRate, Strategy: *flagStrategy, Topic: r.topic, Group: r.group,
		T0: r.t0, Healed: r.healed, Drained: r.drained, DrainOK: r.drainOK,
		Polled: pairs(c.polled), Incs: c.incs, Faults: r.faults, TermExits: r.termExits, Notes: c.notes, Garbled: c.garbled,
		HWM: r.hwm, Committed: r.committed,
		ProduceErrs: c.produceErrs.Load(), Polls: c.polls.Load(), PollEr: c.pollErrs.Load()}
	for _, e := range c.prints {
		rec.Prints = append(rec.Prints, [5]int64{e.t, e.off, e.seq, int64(e.p), int64(e.inc)})
	}
	for k, a := range c.acked {
		rec.Acked = append(rec.Acked, [4]int64{int64(k.p), k.off, a.t, a.seq})
	}
	if r.hist != nil {
		rec.Hist, rec.HistSource, rec.HistRecords, rec.HistSegs = pairs(r.hist.ByPart), r.hist.Source, r.hist.Records, r.hist.Segs
	}
	if r.histErr != nil {
		rec.HistErr = r.histErr.Error()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if err := gob.NewEncoder(zw).Encode(&rec); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// load reads a saved record into a run ready for judge, and sets the
// flags the judges print to the run's.
func load(path string) (*run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := gob.NewDecoder(zr).Decode(&rec); err != nil {
		return nil, err
	}
	*flagSeed, *flagDuration, *flagCommit, *flagRebalance = rec.Seed, rec.Duration, rec.Commit, rec.Rebalance
	*flagReplication, *flagRate, *flagStrategy = rec.Replication, rec.Rate, rec.Strategy
	c := newCollector()
	c.polled = unpairs(rec.Polled)
	c.incs, c.notes, c.garbled = rec.Incs, rec.Notes, rec.Garbled
	c.produceErrs.Store(rec.ProduceErrs)
	c.polls.Store(rec.Polls)
	c.pollErrs.Store(rec.PollEr)
	for _, e := range rec.Prints {
		c.prints = append(c.prints, printEv{t: e[0], off: e[1], seq: e[2], p: int32(e[3]), inc: int32(e[4])})
	}
	for _, a := range rec.Acked {
		c.acked[pk{int32(a[0]), a[1]}] = ack{t: a[2], seq: a[3]}
	}
	r := &run{col: c, topic: rec.Topic, group: rec.Group, partitions: rec.Partitions, session: rec.Session,
		t0: rec.T0, healed: rec.Healed, drained: rec.Drained, drainOK: rec.DrainOK, faults: rec.Faults,
		termExits: rec.TermExits, hwm: rec.HWM, committed: rec.Committed}
	if rec.Hist != nil {
		r.hist = &offsetsHistory{Source: rec.HistSource, Records: rec.HistRecords, Segs: rec.HistSegs, ByPart: unpairs(rec.Hist)}
	}
	if rec.HistErr != "" {
		r.histErr = errors.New(rec.HistErr)
	}
	return r, nil
}
