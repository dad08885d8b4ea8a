package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/zkgroup/zkgroup/offsets"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/zkgroup/zkgroup/internal/metadata"
	"github.com/zkgroup/zkgroup/internal/partition"
	"github.com/zkgroup/zkgroup/internal/zkdata"
	"github.com/zkgroup/zkgroup/manager/assign"
)

// Bounds checked by Validate.
const (
	// MinSessionTimeout is the shortest SessionTimeout.
	MinSessionTimeout = 6 * time.Second
	// MaxSessionTimeout is the longest SessionTimeout. ZooKeeper negotiates
	// a session timeout into [2, 20] x tickTime (at most 40 s with the
	// default tickTime of 2 s and maxSessionTimeout unset), so anything
	// longer is cut by a default server; 2 minutes leaves room for servers
	// whose maxSessionTimeout was raised and refuses values that are
	// typos ("10m" for "10s"), under which a crashed member would hold its
	// partitions for that long.
	MaxSessionTimeout = 2 * time.Minute
	// MaxRestartGrace bounds Config.RestartGrace: partitions stay
	// unconsumed that long when a static member stops for good.
	MaxRestartGrace = 10 * time.Minute
	// DefaultZooKeeperMaxReply is the reply cap of Config.ZooKeeperMaxReply
	// 0: 512 KiB.
	DefaultZooKeeperMaxReply = 512 << 10
	// MinZooKeeperMaxReply and MaxZooKeeperMaxReply bound
	// Config.ZooKeeperMaxReply: every reply to a member's own writes fits
	// in the least, and the most is what Kafka's brokers read from their
	// ZooKeeper (4 MiB).
	MinZooKeeperMaxReply = 16 << 10
	MaxZooKeeperMaxReply = 4 << 20
	// MaxErrorsBufferSize bounds ErrorsBufferSize (allocated at once).
	MaxErrorsBufferSize = 1 << 16
	// MinKafkaUnreachableTimeout and MaxKafkaUnreachableTimeout bound a
	// set KafkaUnreachableTimeout: shorter would leave the group over a
	// broker's garbage-collection pause or leader election; longer keeps
	// partitions that nobody consumes for that long.
	MinKafkaUnreachableTimeout = 2 * time.Second
	MaxKafkaUnreachableTimeout = 10 * time.Minute
	// DefaultKafkaUnreachableTimeout is KafkaUnreachableTimeout's default
	// (unless SessionTimeout is longer): Kafka's own bound of a member its
	// coordinator does not hear from, session.timeout.ms, whose default is
	// 45 s since Kafka 3.0 (KIP-735: 10 s made loaded groups rebalance on
	// a broker's pause; franz-go and librdkafka use 45 s too). At 10,000
	// partitions and 50 members on one loaded machine, a 10 s silence of
	// the coordinator made 46 of the 50 members leave within 3 s of each
	// other.
	DefaultKafkaUnreachableTimeout = 45 * time.Second
)

// Storage is where committed offsets live (Config.OffsetStorage).
type Storage string

// Offset storages.
const (
	StorageKafka     Storage = "kafka"
	StorageZooKeeper Storage = "zookeeper"
)

// Mode is how the owned partitions reach the user (Config.Mode).
type Mode string

// Modes of handing out messages. A method of the other mode returns (or
// yields) ErrMode.
const (
	// ModeMerged: every owned partition's messages through one loop:
	// Consumer.Each, one message at a time, or Consumer.Poll, a batch at
	// a time.
	ModeMerged Mode = "merged"
	// ModePartitions: one stream per owned partition, from
	// Consumer.EachPartition, each with its own loop (PartitionStream.Each
	// or PartitionStream.Poll), so that the partitions are processed in
	// parallel and a slow one holds up only itself.
	ModePartitions Mode = "partitions"
)

// Config configures a consumer. Build it with NewConfig and change fields.
type Config struct {
	// InstanceID names this member under /consumers/<group>/ids. Empty:
	// "<group>_<host>-<ms>-<uuid8>", new at every start. A stable id lets a
	// restarted instance reclaim its own stale nodes at once instead of
	// waiting for its old session to expire.
	InstanceID string
	// RestartGrace, with InstanceID set, makes the member static: once it
	// stopped (Close, a crash, a lost session), the group keeps its
	// partitions for it, unconsumed, for RestartGrace, so that an
	// instance restarted within it with the same InstanceID gets back
	// exactly the partitions it had and no other member's assignment
	// changes. Past it, or after Leave, the group rebalances as for any
	// member that left. It is kept in a persistent restart marker
	// (/consumers/<group>/static/<id>, holding the registration). 0 (the
	// default): a stopped member's partitions move at once. At most
	// MaxRestartGrace.
	RestartGrace time.Duration
	// SessionTimeout of the ZooKeeper session: 6 s to 2 min
	// (MinSessionTimeout, MaxSessionTimeout). It is asked of the server,
	// which may grant a shorter one; the consumer suspends after 2/3 of
	// the granted timeout without a reply (Stats shows it).
	SessionTimeout time.Duration
	// Strategy computes which member owns which partition; every member
	// of a group must use the same. Default assign.Balanced(): balanced
	// counts, only what must move moves, preferred leaders spread.
	// assign.ByName maps the names of assign.Names() ("balanced",
	// "range", "roundrobin", "leader-aware", "sticky") to strategies; any
	// pure, deterministic assign.Strategy with a valid name (see
	// assign.ValidName, assign.Func) may be plugged in. Each member
	// publishes its strategy's name in its registration; while members
	// publish different names, each reports the others on Errors()
	// (*StrategyMismatchError) and computes with the strategy of the
	// oldest member, or claims nothing if it does not know that one.
	Strategy assign.Strategy
	// Mode: ModeMerged (default) or ModePartitions.
	Mode Mode
	// OffsetStorage: StorageKafka (default) or StorageZooKeeper.
	OffsetStorage Storage
	// Brokers overrides broker discovery from /brokers/ids when set
	// ("host:port" each). Required when the Kafka cluster registers no
	// brokers in this ZooKeeper (Kafka 4 and other KRaft clusters).
	Brokers []string
	// Listener picks the broker endpoint by listener name during discovery
	// ("" : PLAINTEXT, or host/port).
	Listener string
	// Sarama is the base client config (TLS, SASL, client id, version).
	// Nil: sarama's defaults with Version 2.1. See the example of Join
	// over SASL_SSL. The consumer's fetches follow its Consumer settings:
	// Fetch.Min, Fetch.Default (bytes asked per partition), Fetch.Max,
	// Fetch.MaxBytes, MaxWaitTime, Retry.Backoff and IsolationLevel
	// (sarama.ReadCommitted reads committed transactions only, up to the
	// last stable offset). Its Metadata.Full is not used: the member's
	// clients read the metadata of the topics they use, not the whole
	// cluster's. Its MetricRegistry is not used: the member's
	// clients record into a registry of their own that keeps only what
	// the member reads (sarama's per-broker meters and histograms cost
	// about 0.3 MB per member).
	Sarama *sarama.Config
	// Rack is the member's rack (Kafka's client.rack), when set in place
	// of Sarama.RackID: with brokers that run a rack-aware replica
	// selector (replica.selector.class), each partition is fetched from
	// the replica in this rack its leader names, and from the leader
	// again when that replica fails or falls behind. Needs Sarama.Version
	// 2.3 or later (Fetch v11). Empty: leaders only.
	Rack string
	// Partition configures the partition managers.
	Partition PartitionConfig
	// RebalanceDelay coalesces bursts of changes before a rebalance. A
	// new member's first assignment waits for the members to be quiet
	// for RebalanceDelay too (after JoinSettle, at most 20
	// RebalanceDelays), so that members started together see each other
	// before they claim anything. Then, when the group's assignment node
	// was not stored since its oldest member joined (a group started
	// together, or again), the first assignment waits for that member to
	// store it, at most SessionTimeout (a writer that neither writes nor
	// loses its session by then is stuck), so that the members follow
	// one view of the group instead of each claiming by its own. Any
	// later plan that reads a node stored from another view than its own
	// waits for the writer likewise, at most ClaimWaitCheck.
	RebalanceDelay time.Duration
	// JoinSettle delays a new member's first assignment, so that members
	// started together see each other before claiming anything (instead
	// of the first claiming every partition and handing some back).
	// Meanwhile the member opens the fetchers of the partitions it would
	// get if the group stayed as it is and nobody owns (nothing is handed
	// out before the claim), so that their start-up overlaps the settle.
	//
	// (Whatever the settle, a partition its plan saw unowned opens its
	// fetcher while it is being claimed, with offsets in Kafka.)
	//
	// Default 0: no settle, no prefetch; the first assignment is computed
	// once the members were quiet for RebalanceDelay (see there), much as
	// Kafka's group coordinator does with
	// group.initial.rebalance.delay.ms=0 (the server.properties Kafka
	// ships sets 0; its built-in default is 3 s). Members started within
	// RebalanceDelay of each other see each other; when one claimed
	// first, the partitions it must give up move in a clean rebalance
	// (drained and committed, nothing handed out twice) within about
	// RebalanceDelay plus their drain. Set it (100 ms to a few seconds)
	// so that members started within that time of each other move
	// nothing: every new member then waits that long before its first
	// message.
	JoinSettle time.Duration
	// ClaimWaitCheck: when a partition this member should own is still
	// held by another member after this long, the owners are read again
	// and the assignment recomputed (at most once per ClaimWaitCheck),
	// since the members may have decided from different moments of
	// overlapping changes: with members started back to back, one member
	// waiting on a holder whose own plan kept the partition was the last
	// thing to settle. The old owner may legitimately take longer to
	// drain; recomputing then changes nothing (the owners cache makes it
	// cost a few reads). A partition held by a member other than the one
	// the assignment saw holding it (it was taken after this member read
	// the owners) makes the member read them again within a second,
	// whatever this setting. It also bounds how long OnAssigned waits for
	// claims under way, and how long a claim must wait on a holder that
	// is not a member, and has not been for as long, before the
	// partition is reported (ErrSquatted), and how long a rebalance
	// waits for the group's assignment of its view from the writer (see
	// RebalanceDelay).
	ClaimWaitCheck time.Duration
	// UnownedCheck is how often the owners are checked to catch a
	// partition nobody claims (the owners nodes' stats, one multiRead
	// request per 256 topics; a topic that changed is listed); one
	// unowned over two checks in a row makes the member recompute. No
	// check runs while a rebalance is due.
	UnownedCheck time.Duration
	// MetadataResync is how often the topic list and the subscribed topics'
	// nodes are read again from ZooKeeper, as a safety net for a lost
	// watch (changes are seen by watches at once; partition leaders are
	// never polled: the fetcher follows a new leader by itself). At least
	// 1 s; jittered.
	MetadataResync time.Duration
	// MetadataPoll is how often Kafka's metadata is read when ZooKeeper
	// only coordinates (no Kafka cluster registered in it, Brokers set):
	// Kafka has no watches. Jittered.
	MetadataPoll time.Duration
	// ErrorsBufferSize of Errors(), at most MaxErrorsBufferSize; when
	// full, errors are dropped and counted.
	ErrorsBufferSize int
	// Auth: ZooKeeper credentials (e.g. scheme "digest", "user:pass").
	// With credentials, the nodes the consumer creates get a
	// creator-only-write ACL (the creator has all rights, anyone may read).
	Auth []ZooKeeperAuth
	// ZooKeeperMaxReply is the longest reply ZooKeeper may send this
	// member, in bytes: 0 (the default) is DefaultZooKeeperMaxReply;
	// otherwise from MinZooKeeperMaxReply to MaxZooKeeperMaxReply. The
	// member's ZooKeeper connection holds a receive buffer of this size for
	// its life (go-zookeeper's default is 1.5 MiB). Its longest reply is
	// usually the topic list, /brokers/topics (4 bytes plus the name for
	// each topic of the cluster: 512 KiB lists about 12,000 topics of 40
	// characters). A read whose reply is longer fails with an error that
	// wraps ErrReplyTooLarge and names the node and its size: at Join, Join
	// fails; later, a topic list or topic node over it is logged (warn)
	// and the member keeps its last view of it, and a peer's registration
	// over it is reported on Errors() (a *NodeError, ErrBadRegistration:
	// the peer gets nothing from this member) until restarted with a
	// larger value.
	ZooKeeperMaxReply int
	// ZooKeeperTLS, when set, connects to ZooKeeper's secure client port
	// (secureClientPort) over TLS with this config (CA, client
	// certificate). Nil: plain TCP.
	ZooKeeperTLS *tls.Config
	// Logger; nil discards.
	Logger *slog.Logger
	// OnAssigned, OnRevoked and OnLost tell the embedder which partitions
	// it gains and gives up, as franz-go's OnPartitionsAssigned, Revoked
	// and Lost do; "Rebalance callbacks" in the package doc says exactly
	// when. partitions lists them by topic, sorted.
	//
	// One goroutine of the consumer calls them, one at a time, never
	// concurrently with each other, each with every partition of its
	// event: OnAssigned with those of a rebalance once their claims are
	// held, before any of their messages is handed out; OnRevoked with
	// those a rebalance (or Close) took away once every one of them is
	// drained and committed, before their claims are released (so the next
	// owner's OnAssigned comes after it); OnLost with those lost at once
	// (the ZooKeeper session expired, the member left for Kafka not
	// answering) or on their own (an owner node deleted or taken over, a
	// failed partition), once they stopped, with no drain and no commit.
	// OnRevoked is never called for a lost partition, whether OnLost is
	// set or not.
	//
	// The consumer waits for them (deliveries for OnAssigned, releases and
	// so the next owners for OnRevoked, a lost partition's new claim for
	// OnLost): keep them short. ctx is canceled once the consumer is
	// closing (Close or Interrupt was called), Close's OnRevoked
	// included. c is the consumer calling: Stats, ID, Group and Interrupt
	// may be called, Close may not (it waits for the callbacks). Nil: not
	// called.
	OnAssigned func(ctx context.Context, c *Consumer, partitions map[string][]int32)
	OnRevoked  func(ctx context.Context, c *Consumer, partitions map[string][]int32)
	OnLost     func(ctx context.Context, c *Consumer, partitions map[string][]int32)
	// CloseTimeout bounds Close (drains are bounded by Partition.DrainTimeout).
	CloseTimeout time.Duration
	// KafkaUnreachableTimeout: a member that no Kafka broker answered for
	// this long, or (with OffsetStorage kafka) whose group coordinator did
	// not (a coordinator whose broker refuses connections, that is, is
	// down, counts as answering: a crash is not this member's cut), leaves
	// the group: its partitions stop at once, without a drain
	// or a commit that could not reach Kafka (their next owners start from
	// the last commit), their owner nodes and then its registration are
	// deleted, so that the others take them over; it joins again once the
	// brokers (and the coordinator) have answered for a probe interval in
	// a row. Fetch and commit answers count as evidence (a fetch answered
	// by the broker the commits go to as the coordinator's too, so that an
	// idle member fetching from it sends no probe); only when neither
	// they nor a probe answered for a quarter of this bound (at most 5 s),
	// or, if longer, an idle member's fetch long poll (10 s) and that
	// quarter more, capped at a third of the bound (15 s by default), does
	// the member probe, on connections of its own, each probe bounded by
	// the quarter. Stats.KafkaUnreachable says while it is out. If every member
	// is cut off, each stays out until it reaches Kafka again: nothing
	// moves back and forth meanwhile. 0 (the default):
	// DefaultKafkaUnreachableTimeout, or SessionTimeout if longer;
	// otherwise from MinKafkaUnreachableTimeout to
	// MaxKafkaUnreachableTimeout.
	KafkaUnreachableTimeout time.Duration
}

// ZooKeeperAuth is a set of ZooKeeper credentials.
type ZooKeeperAuth struct {
	Scheme      string
	Credentials string
}

// TopicPartition names a partition.
type TopicPartition = offsets.TopicPartition

// NewConfig returns the defaults.
func NewConfig() *Config {
	return &Config{
		SessionTimeout:   10 * time.Second,
		Strategy:         assign.Balanced(),
		Mode:             ModeMerged,
		OffsetStorage:    StorageKafka,
		Partition:        partition.NewConfig(),
		RebalanceDelay:   50 * time.Millisecond,
		JoinSettle:       0,
		ClaimWaitCheck:   2 * time.Second,
		UnownedCheck:     10 * time.Second,
		MetadataResync:   60 * time.Second,
		MetadataPoll:     10 * time.Second,
		ErrorsBufferSize: 64,
		CloseTimeout:     30 * time.Second,
	}
}

// Validate checks every field; errors name the field. The checks run by
// area, in the order of the fields, and the first failure is returned.
func (c *Config) Validate() error {
	if c == nil {
		return fmt.Errorf("%w: nil config", ErrConfig)
	}
	for _, check := range []func() error{c.validateIdentity, c.validateAssignment, c.validatePeriods, c.validateLimits} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateIdentity checks the member's identity and session: RestartGrace,
// InstanceID, SessionTimeout.
func (c *Config) validateIdentity() error {
	switch {
	case c.RestartGrace < 0:
		return fmt.Errorf("%w: RestartGrace: %v is negative", ErrConfig, c.RestartGrace)
	case c.RestartGrace > MaxRestartGrace:
		return fmt.Errorf("%w: RestartGrace: %v is over %v", ErrConfig, c.RestartGrace, MaxRestartGrace)
	case c.RestartGrace > 0 && c.InstanceID == "":
		return fmt.Errorf("%w: RestartGrace: %v needs a stable InstanceID (a restarted instance finds its partitions by it)", ErrConfig, c.RestartGrace)
	}
	if c.InstanceID != "" {
		if err := zkdata.ValidateNodeName("InstanceID", c.InstanceID); err != nil {
			return fmt.Errorf("%w: InstanceID: %w", ErrConfig, err)
		}
	}
	if c.SessionTimeout < MinSessionTimeout {
		return fmt.Errorf("%w: SessionTimeout: %v is under %v", ErrConfig, c.SessionTimeout, MinSessionTimeout)
	}
	if c.SessionTimeout > MaxSessionTimeout {
		return fmt.Errorf("%w: SessionTimeout: %v is over %v (ZooKeeper caps sessions at 20 x tickTime, 40s by default)", ErrConfig, c.SessionTimeout, MaxSessionTimeout)
	}
	return nil
}

// validateAssignment checks what the member consumes with: Strategy,
// Mode, OffsetStorage, Brokers, Partition.
func (c *Config) validateAssignment() error {
	if c.Strategy == nil {
		return fmt.Errorf("%w: Strategy: nil", ErrConfig)
	}
	if why := assign.ValidName(c.Strategy.Name()); why != "" {
		return fmt.Errorf("%w: Strategy: name %q: %s", ErrConfig, c.Strategy.Name(), why)
	}
	if c.Mode != ModeMerged && c.Mode != ModePartitions {
		return fmt.Errorf("%w: Mode: %q is neither %q nor %q", ErrConfig, c.Mode, ModeMerged, ModePartitions)
	}
	if c.OffsetStorage != StorageKafka && c.OffsetStorage != StorageZooKeeper {
		return fmt.Errorf("%w: OffsetStorage: %q is neither %q nor %q", ErrConfig, c.OffsetStorage, StorageKafka, StorageZooKeeper)
	}
	for i, b := range c.Brokers {
		if err := checkHostPort(b); err != nil {
			return fmt.Errorf("%w: Brokers[%d]: %q %w", ErrConfig, i, b, err)
		}
	}
	if err := c.Partition.Validate(); err != nil {
		// The error wraps ErrConfig and names the field: prefix its struct.
		return fmt.Errorf("%w: Partition.%s", ErrConfig, strings.TrimPrefix(err.Error(), ErrConfig.Error()+": "))
	}
	return nil
}

// validatePeriods checks the delays and check periods: RebalanceDelay,
// JoinSettle, ClaimWaitCheck, UnownedCheck, MetadataResync, MetadataPoll.
func (c *Config) validatePeriods() error {
	switch {
	case c.RebalanceDelay < 0:
		return fmt.Errorf("%w: RebalanceDelay: %v is negative", ErrConfig, c.RebalanceDelay)
	case c.JoinSettle < 0:
		return fmt.Errorf("%w: JoinSettle: %v is negative", ErrConfig, c.JoinSettle)
	case c.ClaimWaitCheck <= 0:
		return fmt.Errorf("%w: ClaimWaitCheck: %v is not positive", ErrConfig, c.ClaimWaitCheck)
	case c.UnownedCheck <= 0:
		return fmt.Errorf("%w: UnownedCheck: %v is not positive", ErrConfig, c.UnownedCheck)
	case c.MetadataResync < metadata.MinResync:
		return fmt.Errorf("%w: MetadataResync: %v is under %v", ErrConfig, c.MetadataResync, metadata.MinResync)
	case c.MetadataPoll <= 0:
		return fmt.Errorf("%w: MetadataPoll: %v is not positive", ErrConfig, c.MetadataPoll)
	}
	return nil
}

// validateLimits checks the bounds and the connections' settings:
// ZooKeeperMaxReply, ErrorsBufferSize, Auth, CloseTimeout,
// KafkaUnreachableTimeout, Sarama.
func (c *Config) validateLimits() error {
	if c.ZooKeeperMaxReply != 0 && (c.ZooKeeperMaxReply < MinZooKeeperMaxReply || c.ZooKeeperMaxReply > MaxZooKeeperMaxReply) {
		return fmt.Errorf("%w: ZooKeeperMaxReply: %d is not 0 (%d) or between %d and %d", ErrConfig, c.ZooKeeperMaxReply, DefaultZooKeeperMaxReply, MinZooKeeperMaxReply, MaxZooKeeperMaxReply)
	}
	if c.ErrorsBufferSize < 0 || c.ErrorsBufferSize > MaxErrorsBufferSize {
		return fmt.Errorf("%w: ErrorsBufferSize: %d is not between 0 and %d", ErrConfig, c.ErrorsBufferSize, MaxErrorsBufferSize)
	}
	for i, a := range c.Auth {
		if a.Scheme == "" {
			return fmt.Errorf("%w: Auth[%d].Scheme: empty", ErrConfig, i)
		}
	}
	if c.CloseTimeout <= 0 {
		return fmt.Errorf("%w: CloseTimeout: %v is not positive", ErrConfig, c.CloseTimeout)
	}
	if c.KafkaUnreachableTimeout != 0 && (c.KafkaUnreachableTimeout < MinKafkaUnreachableTimeout || c.KafkaUnreachableTimeout > MaxKafkaUnreachableTimeout) {
		return fmt.Errorf("%w: KafkaUnreachableTimeout: %v is not 0 (the session timeout) nor between %v and %v",
			ErrConfig, c.KafkaUnreachableTimeout, MinKafkaUnreachableTimeout, MaxKafkaUnreachableTimeout)
	}
	if c.Sarama != nil {
		if err := c.Sarama.Validate(); err != nil {
			return fmt.Errorf("%w: Sarama: %w", ErrConfig, err)
		}
	}
	return nil
}

// kafkaBound is the effective KafkaUnreachableTimeout.
func (c *Config) kafkaBound() time.Duration {
	if c.KafkaUnreachableTimeout == 0 {
		return max(DefaultKafkaUnreachableTimeout, c.SessionTimeout)
	}
	return c.KafkaUnreachableTimeout
}

// checkHostPort says why b is not "host:port" with a port from 1 to 65535.
func checkHostPort(b string) error {
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		return errors.New("is not host:port")
	}
	if host == "" {
		return errors.New("has no host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q, not 1 to 65535", port)
	}
	return nil
}
