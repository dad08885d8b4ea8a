package partition

import "time"

// Stats is a snapshot of one partition manager.
type Stats struct {
	Topic      string
	Partition  int32
	Generation uint64
	// LastFetched is the offset of the last message handed out (-1: none).
	LastFetched int64
	// Acked is the acked watermark: the next offset to commit.
	Acked int64
	// Committed is the last committed next-offset (-1: none known).
	Committed int64
	// HighWatermark is the partition's log-end offset as last fetched (-1: unknown).
	HighWatermark int64
	// Lag is HighWatermark - Committed (or - Acked when nothing is committed); -1 when unknown.
	Lag              int64
	Unacked          int
	OldestUnackedAge time.Duration
	// Suspended: waiting for the fence (the ZooKeeper session is unhealthy).
	Suspended                                                                    bool
	Delivered, Acks, DuplicateAcks, StaleAcks, Resets, FetchErrors, CommitErrors uint64
}

// Stats returns a snapshot. Safe for concurrent use.
func (m *Manager) Stats() Stats {
	s := Stats{
		Topic: m.topic, Partition: m.partition, Generation: m.gen,
		LastFetched:   m.lastFetched.Load(),
		HighWatermark: m.highWatermark.Load(),
		Acked:         -1,
		Suspended:     m.waitingReady.Load(),
		Delivered:     m.delivered.Load(),
		StaleAcks:     m.staleAcks.Load(),
		Resets:        m.resets.Load(),
		FetchErrors:   m.fetchErrors.Load(),
		CommitErrors:  m.commitErrors.Load(),
	}
	m.mu.Lock()
	s.Committed = m.committed
	s.Acks, s.DuplicateAcks = m.acks, m.dupAcks
	if m.tracker != nil {
		s.Acked = m.tracker.Committable()
		// Not counted: the rest of a batch taken for delivery, above the
		// message being handed out.
		s.Unacked = max(m.tracker.Pending()-m.tracker.HeldAbove(s.LastFetched), 0)
		if off, at, ok := m.tracker.OldestPending(); ok && off <= s.LastFetched {
			s.OldestUnackedAge = time.Since(at)
		}
	}
	m.mu.Unlock()
	s.Lag = -1
	if s.HighWatermark >= 0 {
		base := s.Committed
		if base < 0 {
			base = s.Acked
		}
		if base >= 0 {
			s.Lag = max(s.HighWatermark-base, 0)
		}
	}
	return s
}
