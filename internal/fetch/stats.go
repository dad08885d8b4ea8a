package fetch

import "sync/atomic"

// Stats counts what a Fetcher sent and what came back since New.
type Stats struct {
	// Requests by kind: sessionless (every partition named, no session:
	// Fetch below v7, Config.Sessions off, or a request for starved
	// partitions alone), full (every partition named, opening a fetch
	// session) and incremental (in a session: changes only).
	Sessionless, Full, Incremental uint64
	// ByTopicID: requests (of any kind) that named topics by id (Fetch
	// v13, see topicids.go); the others named them by name.
	ByTopicID uint64
	// Partitions named in requests (all kinds), and partitions forgotten
	// by incremental requests.
	PartitionsSent, Forgotten uint64
	// SessionErrors: responses FETCH_SESSION_ID_NOT_FOUND or
	// INVALID_FETCH_SESSION_EPOCH (the next request is full).
	SessionErrors uint64
	// Truncations: log truncations detected (diverging epochs).
	Truncations uint64
	// Cuts: requests with the idle wait (Config.IdleWait) cut short by a
	// change (a connection closed and opened again).
	Cuts uint64
	// OwnShares: partitions' shares of fetch responses whose record
	// batches the fetcher read itself (the rest, legacy message sets or
	// all with Config.SaramaDecodes, sarama decoded).
	OwnShares uint64
	// RecordsByBroker: records handed over, by the id of the broker that
	// served them (a follower's when fetching from a preferred replica).
	RecordsByBroker map[int32]uint64
}

type stats struct {
	sessionless, full, incremental atomic.Uint64
	byTopicID                      atomic.Uint64
	partitionsSent, forgotten      atomic.Uint64
	sessionErrors, truncations     atomic.Uint64
	cuts                           atomic.Uint64
	ownShares                      atomic.Uint64
}

// Stats returns the fetcher's counters.
func (f *Fetcher) Stats() Stats {
	s := Stats{
		Sessionless: f.stats.sessionless.Load(), Full: f.stats.full.Load(), Incremental: f.stats.incremental.Load(),
		ByTopicID:      f.stats.byTopicID.Load(),
		PartitionsSent: f.stats.partitionsSent.Load(), Forgotten: f.stats.forgotten.Load(),
		SessionErrors: f.stats.sessionErrors.Load(), Truncations: f.stats.truncations.Load(),
		Cuts: f.stats.cuts.Load(), OwnShares: f.stats.ownShares.Load(),
		RecordsByBroker: map[int32]uint64{},
	}
	f.mu.Lock()
	for _, l := range f.loops {
		s.RecordsByBroker[l.id] += l.records.Load()
	}
	f.mu.Unlock()
	return s
}
