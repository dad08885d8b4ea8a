package partition

import "time"

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
	if m.tracker != nil {
		m.fold()
	}
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
