package zkconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/internal/shrink"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"gopkg.in/tomb.v2"
)

// Errors of this package.
var (
	// ErrConfig (zkgroup.ErrConfig, the module's one sentinel for an
	// invalid configuration or argument) is wrapped by Config.Validate's
	// errors.
	ErrConfig  = zkgroup.ErrConfig
	ErrTimeout = errors.New("zkconn: timed out waiting for a ZooKeeper session")
	ErrClosed  = errors.New("zkconn: session closed")
	// ErrInterrupted: after Interrupt, an operation that would have
	// waited for a connection failed at once instead.
	ErrInterrupted = errors.New("zkconn: interrupted while not connected to ZooKeeper")
)

// Auth is one set of credentials sent with AddAuth, e.g. scheme "digest"
// and credentials "user:password". go-zookeeper sends them again on every
// new session.
type Auth struct {
	Scheme      string
	Credentials []byte
}

// Config configures a Session.
type Config struct {
	Servers        []string      // host:port of each ZooKeeper server
	Chroot         string        // prefix of every path, "" for none
	SessionTimeout time.Duration // asked of the server, which negotiates it into [2, 20] x tickTime
	ConnectTimeout time.Duration // how long Dial waits for the first session
	Auth           []Auth
	// ACL for the nodes this session creates. Nil means world-writable when
	// no credentials are given, and "creator has all, world may read" (as
	// Kafka does with zookeeper.set.acl) when they are.
	ACL    []zk.ACL
	Logger *slog.Logger
	// TLS, when set, connects to ZooKeeper's secure client port with it
	// (see TLSDialer). Ignored when Dialer is set.
	TLS    *tls.Config
	Dialer zk.Dialer // nil: net.DialTimeout, or TLSDialer(TLS) when TLS is set
	// MaxRequest is the longest request the session can send (its send
	// buffer, held for the session's life; see the package doc). 0: the
	// longest ZooKeeper accepts, jute.maxbuffer (MaxRequestAny). A
	// session whose requests are known to be short holds less: a
	// consumer group member's are (MaxRequestMember). A longer request
	// fails with go-zookeeper's zk.ErrShortBuffer, unsent.
	MaxRequest int
	// MaxReply is the longest reply the session can read: go-zookeeper's
	// receive buffer starts at the smaller of this and 1.5 MiB and grows
	// up to it (see the package doc). 0: MaxReplyAny, what Kafka's brokers
	// read. A read whose reply is longer fails with a
	// *ReplyTooLargeError (ErrReplyTooLarge), and the node is not read
	// again by this session (not on a go-zookeeper other than
	// TestedGoZooKeeper: see the package doc).
	MaxReply int
	// MaxReplyField is how the caller's configuration names MaxReply, for
	// ReplyTooLargeError's message ("" : "MaxReply").
	MaxReplyField string

	// goZooKeeper, when not nil, stands for the build's modules in Dial's
	// check of the go-zookeeper version (tests: a build with another
	// version runs the session plain).
	goZooKeeper []*debug.Module
}

// Receive buffer caps for Config.MaxReply.
const (
	// MaxReplyAny: 4 MiB, what Kafka's brokers read from their own
	// ZooKeeper (see recvLimit).
	MaxReplyAny = recvLimit
	// MinReply is the smallest cap: every reply ZooKeeper sends a
	// member's writes, pings and watch events fits.
	MinReply = 16 << 10
)

// recvBuffer is the session's reply cap.
func (c Config) recvBuffer() int {
	if c.MaxReply == 0 {
		return recvLimit
	}
	return c.MaxReply
}

// Send buffer sizes for Config.MaxRequest.
const (
	// MaxRequestAny: every request ZooKeeper accepts (jute.maxbuffer).
	MaxRequestAny = juteMaxBuffer
	// MaxRequestMember: a consumer group member's requests. Its longest
	// are an offsets multi of up to 1,000 writes (about 100-150 bytes each
	// at usual topic and group name lengths; offsets.ZooKeeperStore falls
	// back to single writes when one does not fit), the registration
	// (its subscription: a static list of a few thousand topics fits),
	// and go-zookeeper's re-sent watches after a reconnect (sent in
	// pieces of 128 KiB).
	MaxRequestMember = 256 << 10
	// minRequest: below this even a member's single writes may not fit.
	minRequest = 4 << 10
)

// sendBuffer is the session's send buffer: the 4-byte length and
// MaxRequest.
func (c Config) sendBuffer() int {
	if c.MaxRequest == 0 {
		return sendLimit
	}
	return 4 + c.MaxRequest
}

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: Servers: empty", ErrConfig)
	}
	if c.Chroot != "" {
		if err := zkdata.ValidatePath("Chroot", c.Chroot); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if c.SessionTimeout < time.Second {
		return fmt.Errorf("%w: SessionTimeout: %v is under 1s", ErrConfig, c.SessionTimeout)
	}
	for i, a := range c.Auth {
		if a.Scheme == "" {
			return fmt.Errorf("%w: Auth[%d].Scheme: empty", ErrConfig, i)
		}
	}
	if c.MaxRequest != 0 && (c.MaxRequest < minRequest || c.MaxRequest > MaxRequestAny) {
		return fmt.Errorf("%w: MaxRequest: %d is outside [%d, %d] (0: %d)", ErrConfig, c.MaxRequest, minRequest, MaxRequestAny, MaxRequestAny)
	}
	if c.MaxReply != 0 && (c.MaxReply < MinReply || c.MaxReply > MaxReplyAny) {
		return fmt.Errorf("%w: MaxReply: %d is outside [%d, %d] (0: %d)", ErrConfig, c.MaxReply, MinReply, MaxReplyAny, MaxReplyAny)
	}
	return nil
}

// Status is a snapshot of the session's state.
type Status struct {
	// HasSession: ZooKeeper confirmed a session (StateHasSession) and it has
	// not been reported lost since. A TCP connection alone does not count.
	HasSession bool
	SessionID  int64
	// Epoch counts sessions: it increments each time a new session is
	// established. Ephemeral nodes of an older epoch are gone.
	Epoch uint64
	// Healthy: HasSession and the lease holds (see Session.Lease): a
	// request that ZooKeeper answered was sent within 2/3 of the session
	// timeout, measured on a monotonic clock. When not healthy, the
	// session's ephemeral nodes may be gone: do not act as their owner.
	Healthy bool
	// LastAnswered is when the latest request that ZooKeeper answered was
	// sent (for the connect request: when its connection was dialled). The
	// server restarts the session's timer no earlier than that.
	LastAnswered time.Time
	// LeaseUntil is LastAnswered plus 2/3 of Timeout: the end of the lease
	// (see Session.Lease) unless another answer extends it.
	LeaseUntil time.Time
	Timeout    time.Duration // negotiated session timeout (the asked one until the server told it)
}

// Session is one ZooKeeper session (renewed by go-zookeeper after expiry)
// with a chroot applied to every path. All methods are safe for concurrent
// use. Operations block until ZooKeeper answers or the connection fails.
// The caller must Close it.
//
// The watch channels GetW, ExistsW and ChildrenW return are
// go-zookeeper's own: one event, then closed. An event's Path is the
// node's full path, the chroot included (as OnNodeEvent hooks see it):
// callers go by the channel and the event's type. (Taking the chroot off
// took a goroutine per watch: a member keeps about 25 at 10,000
// partitions.)
type Session struct {
	conn   *zk.Conn
	events <-chan zk.Event
	cfg    Config
	chroot string
	acl    []zk.ACL
	log    *slog.Logger
	t      tomb.Tomb

	// lastAnswered is the send time (now()) of the latest request that
	// ZooKeeper answered; live holds the session's id while it is
	// established (StateHasSession, not expired or closed since), else 0.
	// Lease reads both without a lock.
	lastAnswered *atomic.Int64
	live         atomic.Int64 // the session's id while established, else 0
	leaseUsed    atomic.Bool  // Lease was called since the monitor last looked (pingEvery)
	// wake is the monitor's timer and idle whether its latest schedule
	// was the idle one (pingEvery T/3), both under wakeMu (see
	// pingAnswered); wakes counts the timer's firings.
	wakeMu sync.Mutex
	wake   *time.Timer
	idle   bool
	wakes  atomic.Int64
	// healthy mirrors status.Healthy for pingAnswered, which runs on the
	// connection's reader and takes no lock a caller of a request may hold.
	healthy  atomic.Bool
	base     time.Time                // monotonic base of now()
	leaseEnd atomic.Pointer[leaseEnd] // Lease's latest end and its instant
	dialed   *atomic.Int64            // now() when the latest connection was dialled

	mu        sync.Mutex
	status    Status
	epochDone chan struct{} // closed when the current epoch ends
	// epochFuncs: AfterEpoch's functions waiting for the current epoch's
	// end (one per owned partition: a claim's), started when it ends.
	epochFuncs map[*epochFunc]struct{}
	epochPeak  shrink.Peak // of epochFuncs
	hooks      *nodeHooks  // OnNodeEvent's
	raw        *rawWatches // GetManyW's watches
	replies    *replyRefusals
	lines      *connLine // the connections dialled: see Close
	hosts      *pacedHosts
	// negotiated is the session timeout the server granted (ns; 0 until
	// known), set by zkLogger.
	negotiated *atomic.Int64
	changed    chan struct{} // buffered 1: status changed
	closeOnce  sync.Once

	// usable is closed while the session is connected: see await.
	usable        chan struct{}
	usableOpen    bool
	interrupted   chan struct{} // closed by Interrupt
	interruptOnce sync.Once
	noMultiRead   atomic.Bool // the server answered a multiRead "unimplemented": see GetMany
	multiReadOK   atomic.Bool // a multiRead was answered: the server has create2 in multi (CreateManyW)

	// plain: the build's go-zookeeper is not the one the connection shims
	// were tested with (see checkGoZooKeeper); go-zookeeper reads and
	// writes the dialled connection itself, and GetMany reads node by
	// node. Set by Dial, then only read.
	plain bool
}

// settleTime is the longest a reconnected session's replies wait for
// go-zookeeper to re-send its watches: see gatedConn.
const settleTime = 100 * time.Millisecond

// The session's buffers; see the package doc for the figures.
const (
	// juteMaxBuffer is ZooKeeper's jute.maxbuffer default (0xfffff): the
	// server refuses a request longer than that (NIOServerCnxn and
	// NettyServerCnxn, "Len error"), so no node can hold more data.
	juteMaxBuffer = 0xfffff
	// sendLimit is the largest send buffer: the 4-byte length and the
	// longest request ZooKeeper accepts (Config.MaxRequest 0).
	sendLimit = 4 + juteMaxBuffer
	// recvLimit caps a reply: 4 MiB, what Kafka's brokers accept from
	// their own ZooKeeper (KafkaZkClient sets jute.maxbuffer to 4194304
	// unless configured), so that the member reads whatever topic list the
	// brokers themselves can.
	recvLimit = 4 << 20
)

// Dial connects and waits up to cfg.ConnectTimeout (default: the session
// timeout) for a session. On failure nothing is left running. On a
// go-zookeeper other than TestedGoZooKeeper the session runs without the
// connection shims, which Dial logs once (see the package doc).
func Dial(cfg Config) (*Session, error) { return DialContext(context.Background(), cfg) }

// DialContext is Dial that also gives up, leaving nothing running, when
// ctx ends before the session is established.
func DialContext(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = cfg.SessionTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	deps := cfg.goZooKeeper
	if deps == nil {
		deps = builtDeps()
	}
	found, why := checkGoZooKeeper(deps)
	plain := why != ""
	if plain {
		log.Warn("zkconn: go-zookeeper is not the version the connection shims were tested with; the session runs on go-zookeeper alone",
			"go_zookeeper", found, "tested", TestedGoZooKeeper, "why", why, "off", plainOff)
	}
	dialer := cfg.Dialer
	switch {
	case dialer != nil:
	case cfg.TLS != nil:
		dialer = TLSDialer(cfg.TLS)
	default:
		dialer = net.DialTimeout
	}
	base := time.Now()
	dialed := &atomic.Int64{}
	negotiated := &atomic.Int64{}
	limit := func() time.Duration { return sessionTimeout(negotiated, cfg.SessionTimeout) * 2 / 3 }
	hadSession := &atomic.Bool{}
	replies := &replyRefusals{limit: cfg.recvBuffer(), field: cmp.Or(cfg.MaxReplyField, "MaxReply"), chroot: cfg.Chroot, log: log}
	lines := &connLine{}
	raw := &rawWatches{}
	answered := &atomic.Int64{}
	now := func() int64 { return int64(time.Since(base)) }
	// A ping's reply renews the lease, then lets the monitor sleep on
	// (pingAnswered) once the Session exists.
	credited := &atomic.Pointer[Session]{}
	credit := func(sent int64) {
		advance(answered, sent)
		if s := credited.Load(); s != nil {
			s.pingAnswered()
		}
	}
	rec := newDialRecorder(func(network, address string, timeout time.Duration) (net.Conn, error) {
		if lines.closing.Load() {
			return nil, ErrClosed
		}
		dialed.Store(int64(time.Since(base))) // before the connect request is written
		conn, err := dialer(network, address, timeout)
		if err != nil {
			return nil, err
		}
		if plain {
			lines.latest.Store(&conn)
			return conn, nil
		}
		sc := newSideConn(&cappedConn{Conn: conn, limit: limit}, replies.limit, newPingLog(now, credit), raw)
		g := newGatedConn(newReplyGuard(sc, replies.limit, replies.note), conn, hadSession.Load())
		var line net.Conn = g
		lines.latest.Store(&line)
		lines.side.Store(sc)
		return g, nil
	})
	hooks := &nodeHooks{}
	// go-zookeeper calls back from its connection loop, before it can
	// dial again: the dial time read here is this connection's.
	callback := func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
			advance(answered, dialed.Load()) // the connect request was written after the dial
			hadSession.Store(true)
		}
		raw.fire(ev) // before the hooks: see Fired
		hooks.dispatch(ev)
	}
	hosts := newPacedHosts(func() time.Duration { return sessionTimeout(negotiated, cfg.SessionTimeout) })
	conn, events, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithLogger(zkLogger{log, negotiated}), zk.WithLogInfo(true), zk.WithDialer(rec.dialer),
		zk.WithHostProvider(hosts),
		zk.WithEventCallback(callback),
		zk.WithMaxBufferSize(cfg.recvBuffer()), zk.WithMaxConnBufferSize(cfg.sendBuffer()))
	if err != nil {
		return nil, fmt.Errorf("zkconn: connect %v: %w", cfg.Servers, err)
	}
	s := &Session{
		conn: conn, events: events, cfg: cfg, chroot: cfg.Chroot, log: log,
		base:         base,
		dialed:       dialed,
		lastAnswered: answered,
		epochDone:    make(chan struct{}),
		hooks:        hooks,
		raw:          raw,
		replies:      replies,
		lines:        lines,
		hosts:        hosts,
		negotiated:   negotiated,
		changed:      make(chan struct{}, 1),
		usable:       make(chan struct{}),
		interrupted:  make(chan struct{}),
		plain:        plain,
	}
	s.status.Timeout = cfg.SessionTimeout
	credited.Store(s)
	s.acl = cfg.ACL
	if s.acl == nil {
		if len(cfg.Auth) > 0 {
			s.acl = append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...)
		} else {
			s.acl = zk.WorldACL(zk.PermAll)
		}
	}
	first := make(chan struct{})
	s.t.Go(func() error { return s.monitor(first) })
	select {
	case <-first:
	case <-rec.refused:
		s.Close()
		return nil, fmt.Errorf("%w: %v: %w", ErrDial, cfg.Servers, rec.lastErr())
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("zkconn: connect %v: %w", cfg.Servers, ctx.Err())
	case <-time.After(cfg.ConnectTimeout):
		s.Close()
		if derr := rec.lastErr(); derr != nil {
			return nil, fmt.Errorf("%w: %v: no session after %v: %w (%w)", ErrDial, cfg.Servers, cfg.ConnectTimeout, derr, ErrTimeout)
		}
		return nil, fmt.Errorf("%w: %v after %v", ErrTimeout, cfg.Servers, cfg.ConnectTimeout)
	}
	for _, a := range cfg.Auth {
		if err := conn.AddAuth(a.Scheme, a.Credentials); err != nil {
			s.Close()
			return nil, fmt.Errorf("zkconn: AddAuth %s: %w", a.Scheme, err)
		}
	}
	return s, nil
}

// zkLogger routes go-zookeeper's log lines into slog at debug level, and
// takes the negotiated session timeout from the one that reports it:
// go-zookeeper v1.0.4 keeps it unexported, and the server may have
// negotiated a shorter timeout than the one asked (ZooKeeper's
// maxSessionTimeout, 20 ticks by default), which the suspension must be
// measured against, or a member would still act as owner after the server
// expired its session.
type zkLogger struct {
	l          *slog.Logger
	negotiated *atomic.Int64 // nanoseconds; 0 until known
}

// authenticatedFormat is go-zookeeper v1.0.4's line for a new or resumed
// session (conn.go, with WithLogInfo(true)); its second argument is the
// negotiated timeout in milliseconds (int32).
const authenticatedFormat = "authenticated: id=%d, timeout=%d"

func (z zkLogger) Printf(format string, args ...interface{}) {
	if format == authenticatedFormat && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			z.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
		}
	}
	z.l.Debug(fmt.Sprintf(format, args...), "library", "go-zookeeper") // "component" is the caller's
}

// timeout is the negotiated session timeout, or the asked one until the
// server has told it.
func (s *Session) timeout() time.Duration { return sessionTimeout(s.negotiated, s.cfg.SessionTimeout) }

// sessionTimeout is the negotiated timeout (ns, 0 until known) or, until
// the server told it, the asked one.
func sessionTimeout(negotiated *atomic.Int64, asked time.Duration) time.Duration {
	if n := negotiated.Load(); n > 0 {
		return time.Duration(n)
	}
	return asked
}

func (s *Session) now() int64 { return int64(time.Since(s.base)) }

// answeredAt records that ZooKeeper answered a request sent at sent
// (now()). The server restarted the session's timer when it read the
// request, which was no earlier than sent: measuring from the send, not
// from the answer's arrival, keeps the lease on the safe side of the
// server's clock whatever delayed the answer (a reply read only after
// the process was paused, a slow network).
func (s *Session) answeredAt(sent int64) { advance(s.lastAnswered, sent) }

// advance raises a to v unless it holds more already.
func advance(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Lease reports whether this member may act on its session's ephemeral
// nodes right now, and until when: ok is true while the session (its id
// is session) is
// established and a request that ZooKeeper answered was sent less than
// 2/3 of the negotiated session timeout ago, on a monotonic clock; until
// is that instant plus 2/3 of the timeout (it carries a monotonic
// reading: compare it with time.Now only). The server cannot have
// expired the session before until (it keeps a session for its whole
// timeout after the last request it read), so an action that completes
// before until happened while the session, and every ephemeral node of
// it, still existed.
//
// Unlike Status().Healthy, which a ticker refreshes, Lease reads the
// clock: after the process was paused (SIGSTOP, a long GC, a VM
// migration) it says false at once, before any goroutine noticed the
// pause. It takes no lock and does not block: cheap enough to call before
// every hand-out. A call also tells the monitor that the lease is in use
// (see pingEvery).
func (s *Session) Lease() (until time.Time, session int64, ok bool) {
	if !s.leaseUsed.Load() { // a load on the hot path; a store once per monitor wake
		s.leaseUsed.Store(true)
	}
	id := s.live.Load()
	if id == 0 {
		return time.Time{}, 0, false
	}
	end := s.lastAnswered.Load() + int64(s.timeout()*2/3)
	return s.leaseEndAt(end), id, s.now() < end
}

// leaseEnd is an end of the lease (now() units) with its instant.
type leaseEnd struct {
	end   int64
	until time.Time
}

// leaseEndAt returns the instant of end (now() units, a monotonic
// reading), reusing the one computed for the same end: the end moves only
// when ZooKeeper answers (a few times a second), Lease is called before
// every message handed out, and time.Time.Add costs about a fifth of it.
func (s *Session) leaseEndAt(end int64) time.Time {
	if e := s.leaseEnd.Load(); e != nil && e.end == end {
		return e.until
	}
	e := &leaseEnd{end: end, until: s.base.Add(time.Duration(end))}
	s.leaseEnd.Store(e)
	return e.until
}

func (s *Session) onState(st zk.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Requests go out as soon as the session is back: gatedConn orders
	// their replies after go-zookeeper's re-sent watches (in plain mode,
	// go-zookeeper's own order).
	s.setUsableLocked(st == zk.StateHasSession)
	switch st {
	case zk.StateHasSession:
		id := s.conn.SessionID()
		if !s.status.HasSession || id != s.status.SessionID {
			if s.status.SessionID != 0 && id != s.status.SessionID {
				s.endEpochLocked("new session")
			}
			if id != s.status.SessionID {
				s.status.Epoch++
			}
			s.status.SessionID = id
			s.status.HasSession = true
			s.log.Info("zookeeper session established", "session", fmt.Sprintf("0x%x", id), "epoch", s.status.Epoch)
		}
		// The event callback recorded the connection's dial time as
		// answered (the connect request's send).
		s.live.Store(id)
	case zk.StateExpired:
		s.log.Warn("zookeeper session expired", "session", fmt.Sprintf("0x%x", s.status.SessionID))
		s.status.HasSession = false
		s.live.Store(0)
		s.endEpochLocked("expired")
	case zk.StateDisconnected, zk.StateConnecting:
		// The session may still be alive on the server; Healthy turns
		// false once 2/3 of the timeout passed without a reply.
		s.log.Debug("zookeeper connection state", "state", st.String())
	case zk.StateAuthFailed:
		s.log.Error("zookeeper authentication failed")
		s.status.HasSession = false
		s.live.Store(0)
	}
	s.refreshLocked()
	s.signalLocked()
}

func (s *Session) setUsableLocked(open bool) {
	if open == s.usableOpen {
		return
	}
	s.usableOpen = open
	if open {
		close(s.usable)
	} else {
		s.usable = make(chan struct{})
	}
}

// await holds a request back until the session is connected, for at most
// 2/3 of the session timeout; then the request goes to go-zookeeper,
// which queues or fails it as usual. It returns
// now(), taken when the request goes on: no earlier than its send. After
// Interrupt it does not wait: it fails with ErrInterrupted unless the
// session is connected.
func (s *Session) await() (int64, error) {
	s.mu.Lock()
	ch := s.usable
	s.mu.Unlock()
	select {
	case <-ch:
		return s.now(), nil
	default:
	}
	select {
	case <-s.interrupted:
		return 0, ErrInterrupted
	default:
	}
	t := time.NewTimer(s.timeout() * 2 / 3)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-s.t.Dying():
	case <-s.interrupted:
		return 0, ErrInterrupted
	}
	return s.now(), nil
}

// Interrupt makes every operation that waits for a connection, now or
// later, fail at once with ErrInterrupted instead: for an owner shutting
// down, which must not wait for ZooKeeper to come back (closing the
// session ends whatever it still holds). Operations on a connected
// session still go out. A session not connected gives up the connection
// attempt under way and fails what go-zookeeper queued for it
// (zk.ErrNoServer); it then goes on reconnecting. Idempotent; it does
// not block.
func (s *Session) Interrupt() {
	s.interruptOnce.Do(func() {
		close(s.interrupted)
		s.mu.Lock()
		connected := s.usableOpen
		s.mu.Unlock()
		if !connected {
			// Fail what go-zookeeper queued for the next connection, and
			// give up a connect request still unanswered.
			s.hosts.failQueued()
			s.lines.hangUp()
		}
	})
}

// nextEpochLocked ends the current epoch (its done channel closed, its
// AfterEpoch functions started) and starts a new one.
func (s *Session) nextEpochLocked() {
	close(s.epochDone)
	for ef := range s.epochFuncs {
		ef.done = true
		go ef.f()
	}
	s.epochFuncs, s.epochPeak = nil, shrink.Peak{}
	s.epochDone = make(chan struct{})
}

// endEpochLocked closes the done channel of the current epoch and starts a new one.
func (s *Session) endEpochLocked(why string) {
	s.nextEpochLocked()
	s.log.Debug("zookeeper session epoch ended", "epoch", s.status.Epoch, "why", why)
}

func (s *Session) refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshLocked() {
		s.signalLocked()
	}
}

// refreshLocked recomputes Healthy; it reports whether it changed.
func (s *Session) refreshLocked() bool {
	last := s.lastAnswered.Load()
	s.status.LastAnswered = s.base.Add(time.Duration(last))
	s.status.Timeout = s.timeout()
	window := s.status.Timeout * 2 / 3
	s.status.LeaseUntil = s.status.LastAnswered.Add(window)
	healthy := s.status.HasSession && time.Duration(s.now()-last) < window
	if healthy != s.status.Healthy {
		s.status.Healthy = healthy
		s.healthy.Store(healthy)
		if healthy {
			s.log.Info("zookeeper session healthy", "session", fmt.Sprintf("0x%x", s.status.SessionID))
		} else {
			s.log.Warn("zookeeper session suspended: no reply within 2/3 of the session timeout", "session", fmt.Sprintf("0x%x", s.status.SessionID), "timeout", s.status.Timeout)
		}
		return true
	}
	return false
}

func (s *Session) signalLocked() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Status returns the current state.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshLocked() {
		// The change must reach Changes(): the ticker's refresh will not
		// see it again.
		s.signalLocked()
	}
	return s.status
}

// Epoch returns the current status and a channel closed when this session
// epoch ends (the session expired, was replaced, or Close was called).
func (s *Session) Epoch() (Status, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshLocked() {
		s.signalLocked()
	}
	return s.status, s.epochDone
}

// Changes receives (buffered 1, coalesced) after any change of Status. It
// has a single intended reader, the consumer manager.
func (s *Session) Changes() <-chan struct{} { return s.changed }

// Dead is closed when Close was called.
func (s *Session) Dead() <-chan struct{} { return s.t.Dead() }

// ACL returns the ACL used for created nodes.
func (s *Session) ACL() []zk.ACL { return s.acl }

// Chroot returns the chroot.
func (s *Session) Chroot() string { return s.chroot }

// Close ends the session (its ephemeral nodes are deleted by ZooKeeper at
// once) and stops every goroutine. Idempotent; blocks until done. It
// returns once the server has read the close request (the connection is
// half-closed after it, see gatedConn.Write), not after the close's
// commit: the server deletes the nodes as it commits the close, moments
// later, and a peer learns of it from its watches as ever. A session that
// is not healthy (no reply within 2/3 of its timeout) hangs
// up its connection at once instead of waiting for a server that does
// not answer: ZooKeeper then expires the session (and deletes its nodes)
// within its timeout.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.refreshLocked()
		healthy := s.status.Healthy
		s.mu.Unlock()
		s.live.Store(0)
		s.t.Kill(nil)
		s.lines.closing.Store(true)
		if !healthy {
			// Nothing answers: go-zookeeper would wait for a connect
			// request's answer (see cappedConn) or for its close request's
			// (a second) before it stops. The server expires the session
			// on its own.
			s.lines.hangUp()
		}
		s.conn.Close()
		_ = s.t.Wait()
		s.awaitLoopEnd()
		s.mu.Lock()
		s.status.HasSession = false
		s.status.Healthy = false
		s.healthy.Store(false)
		s.nextEpochLocked()
		s.mu.Unlock()
	})
}

// awaitLoopEnd waits until go-zookeeper's connection goroutine has ended
// (it closes the event channel last). go-zookeeper's Close returns once
// its close request is answered, or after a second, while that goroutine
// still ends the connection and fails what is in flight; Close waits for
// it so that nothing of the session outlives Close. The wait is bounded by
// the longest go-zookeeper can take, a read of 2/3 of the timeout (see
// cappedConn) after its close request's second, with room to spare: past
// it the goroutine is stuck, which is logged.
func (s *Session) awaitLoopEnd() {
	bound := time.NewTimer(s.timeout() + 2*time.Second)
	defer bound.Stop()
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-bound.C:
			s.log.Error("zkconn: go-zookeeper's connection goroutine did not end after Close")
			return
		}
	}
}

// WaitHealthy blocks until the session is healthy or ctx ends.
func (s *Session) WaitHealthy(ctx context.Context) error {
	for {
		if s.Status().Healthy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.t.Dying():
			return ErrClosed
		case <-time.After(s.cfg.SessionTimeout / 20):
		}
	}
}
