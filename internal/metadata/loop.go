package metadata

import (
	"time"
)

// loop refreshes the view on watch events (debounced), on each safety
// resync, and with backoff after failures, until the tomb dies. It is the
// only goroutine that uses w.r.
func (w *Watcher) loop() error {
	s := newSchedule(w.cfg.Debounce, w.cfg.Resync, time.Now())
	timer := time.NewTimer(time.Until(s.next()))
	defer timer.Stop()
	dying := w.t.Dying()
	stop := func() bool {
		select {
		case <-dying:
			return true
		default:
			return false
		}
	}
	for {
		// The watches of the nodes the last refresh read without one; a
		// node that changed meanwhile is read again, as a fired watch's,
		// and one that could not be read, as after a failed refresh.
		if stale, err := w.r.arm(stop); err != nil {
			s.done(time.Now(), err)
			timer.Reset(time.Until(s.next()))
		} else if stale {
			s.event(time.Now())
			timer.Reset(time.Until(s.next()))
		}
		select {
		case <-dying:
			return nil
		case <-w.wake:
			w.r.release(w.takeFired())
			s.event(time.Now())
		case <-timer.C:
		}
		if now := time.Now(); s.due(now) {
			resync := s.takeResync(now)
			if resync {
				w.r.markResync()
			}
			w.r.release(w.takeFired())
			err := w.refreshOnce(stop)
			if stop() {
				return nil
			}
			if resync && err == nil {
				w.resyncs.Add(1)
			}
			s.done(time.Now(), err)
		}
		timer.Reset(time.Until(s.next()))
	}
}

// refreshOnce reads what is stale and publishes the view.
func (w *Watcher) refreshOnce(stop func() bool) error {
	w.mu.Lock()
	prev, filter := w.view, w.filter
	w.mu.Unlock()
	view, err := w.r.refresh(filter, prev, stop)
	if stop() {
		return err
	}
	w.log.Debug("metadata: refreshed", "reads", w.r.reads, "error", err)
	w.publish(view, err)
	return err
}

// publish installs view (nil: keep the current one) and records err; when
// the view changed it bumps the version and signals Changes.
func (w *Watcher) publish(view map[string][]Partition, err error) {
	w.mu.Lock()
	wasErr := w.err
	w.err = err
	var c change
	if view != nil {
		c = diffViews(w.view, view)
		if !c.empty() {
			w.view = view
			w.version++
		}
	}
	version := w.version
	w.mu.Unlock()

	switch {
	case err != nil && wasErr == nil:
		w.log.Warn("metadata: refresh failed; serving the last good view", "error", err, "version", version)
	case err != nil:
		w.log.Debug("metadata: refresh still failing", "error", err, "version", version)
	case wasErr != nil:
		w.log.Info("metadata: refresh works again", "version", version)
	}
	if view != nil && !c.empty() {
		w.log.Info("metadata: view changed", "version", version,
			"added", c.added, "removed", c.removed, "resized", c.resized, "reassigned", c.replicas)
		select {
		case w.changes <- struct{}{}:
		default:
		}
	}
}
