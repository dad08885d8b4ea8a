package admin

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// GroupView is the whole group as ZooKeeper shows it: what Stats cannot
// tell, since it knows only this member's assignment. A plain value.
type GroupView struct {
	// Subscription is the subscription as configured, for messages.
	Subscription string
	// Members are the ids registered under /consumers/<group>/ids, sorted.
	Members []string
	// Topics are the topics the subscription matches, sorted; empty when
	// it matches none.
	Topics []string
	// Partitions are the partitions of Topics, sorted.
	Partitions []TopicPartition
	// Owners maps a partition to the member id in its owner node; a
	// partition of Partitions missing here has no owner.
	Owners map[TopicPartition]string
	// Away are the static members that stopped and whose partitions the
	// group keeps, unowned, for their restart, sorted by id.
	Away []AwayMember
}

// AwayMember is a member away within its grace (see ops.AwayMembers).
type AwayMember struct {
	ID    string
	Grace time.Duration
	// MarkerWritten is when ZooKeeper last wrote its restart marker: when
	// it last registered, not when it stopped (which ZooKeeper does not
	// record); zero when unknown.
	MarkerWritten time.Time
	// Seen is when this member's view first saw it away (by its own
	// clock, up to a view interval late); the Viewer sets it.
	Seen time.Time
}

// Unowned returns the partitions of the view without an owner node.
func (v GroupView) Unowned() []TopicPartition {
	var out []TopicPartition
	for _, tp := range v.Partitions {
		if v.Owners[tp] == "" {
			out = append(out, tp)
		}
	}
	return out
}

// ViewReader reads a GroupView. It blocks on ZooKeeper; the Viewer calls
// it from one goroutine at a time.
type ViewReader func() (GroupView, error)

// Viewer keeps the last GroupView read by a ViewReader, reading again
// every interval, and logs when the subscription starts or stops matching
// any topic. Safe for concurrent use.
type Viewer struct {
	read  ViewReader
	every time.Duration
	log   *slog.Logger

	mu       sync.Mutex
	view     GroupView
	readAt   time.Time // of view
	err      error     // of the last read
	inflight chan struct{}
	noTopics *bool                // what was logged last
	awaySeen map[string]time.Time // members away, by id: when a view first showed them
}

// NewViewer returns a Viewer reading with read every interval (at least a
// second); log gets the warnings (nil discards). Call Run to start it.
func NewViewer(read ViewReader, every time.Duration, log *slog.Logger) *Viewer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Viewer{read: read, every: max(every, time.Second), log: log}
}

// Run reads the view at once and then every interval until ctx ends.
// Blocks until then.
func (v *Viewer) Run(ctx context.Context) {
	t := time.NewTicker(v.every)
	defer t.Stop()
	for {
		_, _ = v.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the view now (or joins the read under way) and returns
// it, or ctx's error if ctx ends first; the read then goes on and its
// result is kept.
func (v *Viewer) Refresh(ctx context.Context) (GroupView, error) {
	v.mu.Lock()
	done := v.inflight
	if done == nil {
		done = make(chan struct{})
		v.inflight = done
		go v.readOnce(done)
	}
	v.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return GroupView{}, ctx.Err()
	}
	view, _, err := v.Last()
	return view, err
}

func (v *Viewer) readOnce(done chan struct{}) {
	view, err := v.read()
	v.mu.Lock()
	v.err = err
	if err == nil {
		v.view, v.readAt = view, time.Now()
		v.logTopicsLocked(view)
		v.noteAwayLocked(v.readAt)
	}
	v.inflight = nil
	v.mu.Unlock()
	close(done)
}

// logTopicsLocked warns when the subscription matches no topic (once per
// change) and says when it matches some again.
func (v *Viewer) logTopicsLocked(view GroupView) {
	none := len(view.Topics) == 0
	switch {
	case none && (v.noTopics == nil || !*v.noTopics):
		v.log.Warn("the subscription matches no topic: nothing to consume until a matching topic is created",
			"subscription", view.Subscription)
	case !none && v.noTopics != nil && *v.noTopics:
		v.log.Info("the subscription matches topics again", "subscription", view.Subscription, "topics", len(view.Topics))
	}
	v.noTopics = &none
}

// Last returns the last view read and when; err is the error of the last
// read (the view is then older). A zero readAt means none was read yet.
func (v *Viewer) Last() (view GroupView, readAt time.Time, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.readAt.IsZero() && v.err == nil {
		return GroupView{}, time.Time{}, nil
	}
	return v.view, v.readAt, v.err
}

// Fresh returns the last view if it was read within three intervals.
func (v *Viewer) Fresh() (GroupView, bool) {
	view, at, _ := v.Last()
	if !v.fresh(at) {
		return GroupView{}, false
	}
	return view, true
}

// fresh reports whether a view read at readAt is within three intervals.
func (v *Viewer) fresh(readAt time.Time) bool {
	return !readAt.IsZero() && time.Since(readAt) <= 3*v.every
}

// noteAwayLocked sets Seen of the view's members away: now for those it
// shows for the first time, the earlier time for the others; it forgets
// those no longer away. The view's Away is copied, not changed in place.
func (v *Viewer) noteAwayLocked(now time.Time) {
	seen := make(map[string]time.Time, len(v.view.Away))
	away := make([]AwayMember, len(v.view.Away))
	for i, a := range v.view.Away {
		at, ok := v.awaySeen[a.ID]
		if !ok {
			at = now
		}
		a.Seen, seen[a.ID] = at, at
		away[i] = a
	}
	v.view.Away, v.awaySeen = away, seen
}
