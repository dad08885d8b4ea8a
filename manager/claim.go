package manager

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup/internal/retry"
	"github.com/zkgroup/zkgroup/internal/zkconn"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// errClaimCanceled: the claim was no longer wanted before it was acquired.
var errClaimCanceled = errors.New("manager: claim canceled")

// claim is this instance's ownership of one partition: its ephemeral owner
// node, created by the current ZooKeeper session. It implements
// partition.Fence. Safe for concurrent use.
type claim struct {
	tp      TopicPartition
	path    string
	owner   string // the node's content: this instance's id
	session *zkconn.Session
	health  *gate
	link    gateLink // this claim's channels of health
	log     *slog.Logger

	sessionID int64           // the session that created the node
	epochDone <-chan struct{} // closed when that session's epoch ended
	expired   atomic.Bool     // its watch ended with the session's expiry
	token     int64           // the node's czxid: the fencing token of commits under this claim
	lostOnce  sync.Once
	isLost    atomic.Bool   // set once lost, before lostCh is closed: Lease reads it
	lostCh    chan struct{} // closed once lost: Lost
	// afterLost: the functions AfterLost registered that have not run,
	// under mu; nil once lost. Not a context canceled once lost: with
	// context.AfterFunc it keeps a map of children and its machinery,
	// about 400 bytes, for the owned partition's life.
	afterLost []*lostFunc

	// The claim watches its node with hooks, not a goroutine: unhook
	// removes the node event hook, unhookEpoch the session epoch's.
	unhook      func()
	unhookEpoch func() bool
	raw         bool          // the node's watch is the session's own (GetManyW): Unwatch at the end
	stop        chan struct{} // closed by abandon: ends a recheck
	mu          sync.Mutex
	abandoned   bool           // guards wg.Add against abandon's Wait
	wg          sync.WaitGroup // rechecks under way
	rechecked   atomic.Uint64  // rechecks that found the node still ours (tests wait on it)
}

// Ready is closed while the session is healthy.
func (c *claim) Ready() <-chan struct{} { return c.health.ready() }

// Suspended is closed while the session is not healthy.
func (c *claim) Suspended() <-chan struct{} { return c.health.suspended(&c.link) }

// Lease reports whether this member may act as the partition's owner at
// this instant, and until when (see partition.Fence): the claim is not
// lost, the session that created the owner node is the current one, and
// its lease holds on a monotonic clock. When the lease ended unnoticed (a
// pause), it shuts the gate at once and makes the session re-read its
// health, so that the gate opens again only once ZooKeeper answered.
func (c *claim) Lease() (until time.Time, ok bool) {
	until, id, ok := c.session.Lease()
	if ok && id == c.sessionID {
		// An atomic load, not a select on lostCh: Lease is called
		// before every message handed out.
		return until, !c.isLost.Load()
	}
	if !ok {
		c.session.Status() // notices the suspension: the gate is reopened on the next answer
		c.health.shutUnless(func() bool { _, _, ok := c.session.Lease(); return ok })
	}
	return until, false
}

// Token is the owner node's czxid: ZooKeeper's transaction id of its
// creation, which grows with every claim of the partition (see
// partition.Fence).
func (c *claim) Token() int64 { return c.token }

// Lost is closed once the owner node is gone or the session that created
// it ended.
func (c *claim) Lost() <-chan struct{} { return c.lostCh }

// closeLost closes Lost and starts the AfterLost functions. Once, from
// markLost.
func (c *claim) closeLost() {
	c.mu.Lock()
	close(c.lostCh)
	fs := c.afterLost
	c.afterLost = nil
	c.mu.Unlock()
	for _, lf := range fs {
		go lf.f()
	}
}

// lostFunc is one function of AfterLost.
type lostFunc struct{ f func() }

// AfterLost runs f on its own goroutine once Lost is closed, or at once
// if it is (see partition.Fence). stop unregisters f: true if that kept
// it from running, false if it ran or is running.
func (c *claim) AfterLost(f func()) (stop func() bool) {
	lf := &lostFunc{f: f}
	c.mu.Lock()
	if c.lost() {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.afterLost = append(c.afterLost, lf)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afterLost {
			if x == lf {
				c.afterLost = append(c.afterLost[:i], c.afterLost[i+1:]...)
				return true
			}
		}
		return false
	}
}

// lost reports whether Lost is closed.
func (c *claim) lost() bool {
	select {
	case <-c.lostCh:
		return true
	default:
		return false
	}
}

// sessionEnded reports whether the session that created the owner node
// ended (or the server said it expired): the claim is lost, or will be at
// once, and so is every claim of that session.
func (c *claim) sessionEnded() bool {
	if c.expired.Load() {
		return true
	}
	select {
	case <-c.epochDone:
		return true
	default:
		return false
	}
}

func (c *claim) markLost(why string) {
	c.lostOnce.Do(func() {
		c.isLost.Store(true)
		c.health.leave(&c.link)
		if why == "released" {
			c.log.Debug("partition claim released")
		} else {
			c.log.Warn("partition claim lost", "why", why)
		}
		c.closeLost()
	})
}

// afterCreate and beforeRead, when set (tests), are called after each
// create of an owner node, whatever its outcome, and before each read of
// one, with the node's path.
var afterCreate, beforeRead atomic.Pointer[func(path string)]

// claimStart is how acquire begins.
type claimStart int

const (
	claimRead   claimStart = iota // read the owner node first
	claimCreate                   // create it at once (the plan saw the partition unowned)
)

// acquire creates the owner node, waiting on a watch of an existing node
// of another owner until it is deleted, for as long as it takes; cancel
// ends the wait. It reads before it writes (claimRead), so that waiting for another
// owner costs ZooKeeper no failed create, unless claimCreate (the plan
// that assigned the partition saw it unowned): then it creates at once;
// a node that is there after all fails the create and is read as it
// would have been. A wait for another owner ends with a create too, once
// its node is deleted. The creates go through creates (nil: one request
// each), which sends those made at about the same time in one
// transaction; with reads (the session batches watched reads) a create
// made in such a transaction comes with its stat and watch
// (opBatcher.createW) and is not read back, otherwise the node is read
// back with a watch. A claim is one create, its release one delete. A
// node left by this instance id under an older session (a restart with a
// stable id) is deleted and taken at once.
// waiting, when set, is told who holds the node when a wait for another
// owner begins or the holder changes, and "" when the wait ends; waits
// counts the waits.
func acquire(s *zkconn.Session, group string, tp TopicPartition, owner string, health *gate,
	log *slog.Logger, cancel <-chan struct{}, waits *atomic.Int64, waiting func(holder string), creates *opBatcher, reads *readBatcher, start claimStart) (*claim, error) {
	a := &acquirer{s: s, path: zkdata.OwnerPath(group, tp.Topic, tp.Partition), tp: tp, owner: owner, health: health,
		log: log, cancel: cancel, waits: waits, waiting: waiting, creates: creates, reads: reads, bo: retry.New(50*time.Millisecond, 2*time.Second)}
	a.createNext = start == claimCreate
	defer a.setWaiting("")
	for {
		canceled := false
		select {
		case <-cancel:
			canceled = true
		default:
		}
		if canceled && !a.created {
			return nil, errClaimCanceled
		}
		a.created = false // canceled now: read back once, create nothing
		st, epochDone := s.Epoch()
		if !st.HasSession {
			if !waitOr(cancel, epochDone, nil, 200*time.Millisecond) {
				return nil, errClaimCanceled
			}
			continue
		}
		if a.createNext {
			a.createNext = false
			if !a.create() {
				return nil, errClaimCanceled
			}
			if r := a.made; r != nil { // made and watched: no read back
				a.made = nil
				c, err := a.read(*r, epochDone, canceled)
				r.done(s, a.path, c != nil)
				if c != nil || err != nil {
					return c, err
				}
			}
			continue // read it back
		}
		if f := beforeRead.Load(); f != nil {
			(*f)(a.path)
		}
		r, err := a.readNode()
		if err != nil {
			if !a.readFailed(err, canceled) {
				return nil, errClaimCanceled
			}
			continue
		}
		c, err := a.read(r, epochDone, canceled)
		r.done(s, a.path, c != nil)
		if c != nil || err != nil {
			return c, err
		}
	}
}

// acquirer is the state of one acquire.
type acquirer struct {
	s      *zkconn.Session
	path   string
	tp     TopicPartition
	owner  string
	health *gate
	log    *slog.Logger
	cancel <-chan struct{}
	waits  *atomic.Int64
	// waiting, when set, is told of the holder waited for ("" none).
	waiting func(holder string)
	bo      *retry.Backoff
	creates *opBatcher // nil: each create on its own
	// reads batches the reads of the owner node with those of other
	// claims (nil, or the session cannot: a read of its own, GetWFull).
	reads *readBatcher
	// createNext: create the node before reading it (the plan saw the
	// partition unowned, or the holder's node was just deleted).
	createNext bool
	// logged: the wait for another owner was logged; waitingFor: the
	// holder last told to waiting.
	logged     bool
	waitingFor string
	// made: the node just created, with the session's watch on it
	// (opBatcher.createW), to act on as a read of it; nil: read it back.
	made *nodeRead
	// created: a create of ours may have made the node since it was last
	// read. Until it is read back, a cancel must not end the claim: the
	// node would stay, ephemeral, held by this session for its whole
	// life, for a partition this member no longer runs; nobody would
	// delete it, and its next owner would wait for it for ever. Read back,
	// the claim is returned and its caller releases it.
	created bool
}

func (a *acquirer) setWaiting(holder string) {
	if holder != a.waitingFor && a.waiting != nil {
		a.waiting(holder)
	}
	a.waitingFor = holder
}

// readFailed handles a failed read of the owner node: a missing node is
// created (unless canceled), other errors are retried after a backoff.
// It returns false when the claim is to be given up (canceled).
func (a *acquirer) readFailed(err error, canceled bool) bool {
	if errors.Is(err, zk.ErrNoNode) {
		if canceled {
			return false
		}
		return a.create()
	}
	// A node of ours not read back stays until the session ends;
	// the unowned and claim-wait checks of the others cannot move
	// it either. Read it again unless this member is going.
	a.log.Warn("reading owner node failed", "path", a.path, "error", err)
	return a.bo.Wait(a.cancel, nil)
}

// create creates the owner node (its parents first when missing); it
// returns false when canceled during a backoff.
func (a *acquirer) create() bool {
	var err error
	switch {
	case a.creates != nil && a.reads != nil:
		// With a watch, as the batched read would set it: the hook first.
		ch := make(chan zk.Event, 1)
		unhook := a.s.OnNodeEvent(a.path, func(ev zk.Event) {
			select {
			case ch <- ev:
			default: // one is enough: the watch fires once
			}
		})
		var nd zkconn.NodeData
		var made bool
		nd, made, err = a.creates.createW(a.s, a.path, zkdata.FormatOwner(a.owner), zk.FlagEphemeral)
		if made {
			a.made = &nodeRead{data: nd.Data, stat: &nd.Stat, ch: ch, raw: true, unhook: unhook}
		} else {
			unhook()
		}
	case a.creates != nil:
		err = a.creates.create(a.s, a.path, zkdata.FormatOwner(a.owner), zk.FlagEphemeral)
	default:
		_, err = a.s.Create(a.path, zkdata.FormatOwner(a.owner), zk.FlagEphemeral, nil)
	}
	if f := afterCreate.Load(); f != nil {
		(*f)(a.path)
	}
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		// Read it back with a watch (ours, or the one that won).
		a.created = true
	case errors.Is(err, zk.ErrNoNode):
		dir := path.Dir(a.path)
		if perr := a.s.CreateParents(dir); perr != nil {
			a.log.Warn("creating owner parents failed", "path", dir, "error", perr)
			if !a.bo.Wait(a.cancel, nil) {
				return false
			}
		}
	default:
		// The create may have been applied (a connection lost
		// before its reply): read back before giving up.
		a.log.Warn("creating owner node failed", "path", a.path, "error", err)
		a.bo.Wait(a.cancel, nil)
		a.created = true
	}
	return true
}

// read acts on the owner node read (with a watch ch): it returns the
// claim when the node is this session's and this instance's, deletes a
// node of this instance left by an older session, and otherwise waits
// for the other owner's node to go. Nil and nil: read again.
func (a *acquirer) read(r nodeRead, epochDone <-chan struct{}, canceled bool) (*claim, error) {
	s, p, log := a.s, a.path, a.log
	data, stat, ch := r.data, r.stat, r.ch
	cur, _ := s.Epoch()
	holder := zkdata.ParseOwner(data)
	if stat.EphemeralOwner == cur.SessionID && holder == a.owner {
		return a.claimed(cur.SessionID, stat, ch, epochDone, r.raw), nil
	}
	if holder == a.owner {
		// Ours, from a session that is gone or going: take it back.
		log.Info("deleting this instance's stale owner node", "path", p, "old_session", fmt.Sprintf("0x%x", stat.EphemeralOwner))
		if derr := s.Delete(p, stat.Version); derr != nil && !errors.Is(derr, zk.ErrNoNode) && !errors.Is(derr, zk.ErrBadVersion) {
			log.Warn("deleting stale owner node failed", "path", p, "error", derr)
		}
		return nil, nil
	}
	if canceled {
		return nil, errClaimCanceled // not ours
	}
	// Another owner: wait for its node to go.
	a.waits.Add(1)
	a.setWaiting(holder)
	// At Debug: a rebalance of thousands of partitions waits for as
	// many; a wait that lasts is logged by the member's loop
	// (claimWaitTooLong) and counted in Stats.ClaimWaits.
	if !a.logged {
		log.Debug("waiting for the partition's owner to release it", "path", p, "owner", holder)
		a.logged = true
	}
	select {
	case <-a.cancel:
		return nil, errClaimCanceled
	case ev := <-ch:
		// Deleted: most likely nobody else claims it, so create at
		// once (a read would find no node: a request for nothing).
		a.createNext = ev.Type == zk.EventNodeDeleted
	case <-epochDone:
	}
	return nil, nil
}

// claimed returns the claim of the node read with stat, watched by ch,
// or by the session's own watch (raw).
func (a *acquirer) claimed(session int64, stat *zk.Stat, ch <-chan zk.Event, epochDone <-chan struct{}, raw bool) *claim {
	c := &claim{tp: a.tp, path: a.path, owner: a.owner, session: a.s, health: a.health, log: a.log,
		sessionID: session, epochDone: epochDone, token: stat.Czxid, stop: make(chan struct{}), raw: raw}
	c.lostCh = make(chan struct{})
	c.hook(ch, epochDone)
	if a.logged {
		a.log.Debug("partition claimed after waiting", "path", a.path)
	}
	return c
}

// nodeRead is one read of the owner node, with a watch whose events come
// on ch.
type nodeRead struct {
	data []byte
	stat *zk.Stat
	ch   <-chan zk.Event
	// raw: read through the read batcher, watched by the session's own
	// watch; unhook removes the node hook that feeds ch.
	raw    bool
	unhook func()
}

// readNode reads the owner node with a watch: through the read batcher
// (with many others: see readBatcher) when the session can, else on its
// own (GetWFull). A batched read's events come on a channel fed by a node
// hook set before the read, so none is missed.
func (a *acquirer) readNode() (nodeRead, error) {
	if a.reads != nil {
		ch := make(chan zk.Event, 1)
		unhook := a.s.OnNodeEvent(a.path, func(ev zk.Event) {
			select {
			case ch <- ev:
			default: // one is enough: the watch fires once
			}
		})
		nd, err := a.reads.read(a.s, a.path)
		if err == nil {
			err = nd.Err // no watch kept
		}
		if !errors.Is(err, zkconn.ErrNoRawWatches) {
			if err != nil {
				unhook()
				return nodeRead{}, err
			}
			return nodeRead{data: nd.Data, stat: &nd.Stat, ch: ch, raw: true, unhook: unhook}, nil
		}
		unhook()
		a.reads = nil // this session cannot: read on its own from now on
	}
	data, stat, ch, err := a.s.GetWFull(a.path)
	return nodeRead{data: data, stat: stat, ch: ch}, err
}

// done ends a batched read's hook, and its watch unless a claim holds it
// now (claimed).
func (r nodeRead) done(s *zkconn.Session, path string, claimed bool) {
	if !r.raw {
		return
	}
	r.unhook()
	if !claimed {
		s.Unwatch(path)
	}
}

// hook watches the claim without a goroutine: the session calls onEvent
// with the events of the watch set by the read that proved the claim (ch
// is that watch's channel), and marks the claim lost when its epoch
// (epochDone) ends. An event that fired before the hook was set is still
// in ch: it is looked at once.
func (c *claim) hook(ch <-chan zk.Event, epochDone <-chan struct{}) {
	c.unhook = c.session.OnNodeEvent(c.path, c.onEvent)
	c.unhookEpoch = c.session.AfterEpoch(epochDone, func() { c.markLost("zookeeper session ended") })
	select {
	case ev, ok := <-ch:
		if !ok {
			c.markLost("watch closed")
			return
		}
		c.onEvent(ev)
	default:
	}
}

// onEvent marks the claim lost when its node is deleted or the watch ends,
// and checks the node again (re-arming the one-shot watch) when it
// changed. It runs on the ZooKeeper client's receive goroutine (see
// zkconn.Session.OnNodeEvent), so it never blocks: a check runs on a
// goroutine of its own, which abandon waits for.
func (c *claim) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		c.markLost("owner node deleted")
	case zk.EventNotWatching:
		if errors.Is(ev.Err, zk.ErrSessionExpired) {
			c.expired.Store(true) // seen here before the session's epoch ends
		}
		c.markLost("watch ended: " + fmt.Sprint(ev.Err))
	case zk.EventNodeDataChanged, zk.EventNodeCreated:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.abandoned {
			return
		}
		c.wg.Add(1)
		go c.recheck()
	}
}

// recheck reads the node again, which sets a new watch, and marks the
// claim lost unless the node is still this session's and this instance's.
// It retries while the session cannot answer, until the claim is lost
// (its epoch ending included) or abandoned.
func (c *claim) recheck() {
	defer c.wg.Done()
	for {
		data, stat, _, err := c.session.GetWFull(c.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			c.markLost("owner node deleted")
			return
		case err == nil:
			if stat.EphemeralOwner != c.sessionID || zkdata.ParseOwner(data) != c.owner {
				c.markLost("owner node taken over")
				return
			}
			c.rechecked.Add(1)
			return
		}
		select {
		case <-c.stop:
			return
		case <-c.Lost():
			return
		case <-time.After(200 * time.Millisecond): // retry while disconnected
		}
	}
}

// release stops watching, then deletes the owner node if it is still
// ours. Call it only after the partition manager stopped. A failed try
// (the connection dropped, ZooKeeper restarting) is tried again, with
// backoff, for up to the session timeout, or until the session that holds
// the node ended (and the node with it): a node left behind would stay
// for the session's whole life, and the partition's next owner would wait
// for it until then.
func (c *claim) release() error { return c.releaseVia(nil, nil) }

// releaseVia is release with the read of the node through rb (a plain
// one) and the delete through b (nil: each on its own).
func (c *claim) releaseVia(b *opBatcher, rb *readBatcher) error {
	c.abandon()
	bound := c.session.Status().Timeout
	deadline := time.Now().Add(bound)
	bo := retry.New(20*time.Millisecond, time.Second)
	for {
		err := within(max(time.Until(deadline), time.Millisecond), func() error { return c.deleteIfOurs(b, rb) })
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("manager: release %s: not done within %v: %w", c.path, bound, err)
		}
		t := time.NewTimer(min(bo.Next(), left))
		select {
		case <-c.epochDone: // the session ended: its nodes went with it
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// abandon stops watching and marks the claim lost, leaving the owner
// node to the session: closing it deletes the node. Call it only after the
// partition manager stopped, and only once (release calls it).
func (c *claim) abandon() {
	c.unhook()
	c.unhookEpoch()
	if c.raw {
		c.session.Unwatch(c.path)
	}
	c.mu.Lock()
	c.abandoned = true
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
	c.markLost("released")
}

// deleteIfOurs deletes the owner node if this claim's session created it,
// read through rb and deleted through b (nil: each on its own).
func (c *claim) deleteIfOurs(b *opBatcher, rb *readBatcher) error {
	var stat *zk.Stat
	var err error
	if rb != nil {
		var nd zkconn.NodeData
		nd, err = rb.read(c.session, c.path)
		if err == nil {
			stat, err = &nd.Stat, nd.Err
		}
	} else {
		_, stat, err = c.session.Get(c.path)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("manager: release %s: %w", c.path, err)
	}
	if stat.EphemeralOwner != c.sessionID {
		return nil // not ours any more
	}
	del := c.session.Delete
	if b != nil {
		del = func(p string, version int32) error { return b.delete(c.session, p, version) }
	}
	if err := del(c.path, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("manager: release %s: %w", c.path, err)
	}
	return nil
}

func waitOr(cancel <-chan struct{}, a <-chan struct{}, b <-chan struct{}, max time.Duration) bool {
	select {
	case <-cancel:
		return false
	case <-a:
	case <-b:
	case <-time.After(max):
	}
	return true
}

// within runs f and waits at most d for it. An abandoned f ends when the
// session is closed (go-zookeeper fails its pending requests then).
func within(d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("manager: zookeeper did not answer within %v", d)
	}
}
