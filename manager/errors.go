package manager

import (
	"errors"
	"fmt"

	"github.com/zkgroup/zkgroup"
)

// Sentinel errors.
var (
	// ErrClosed (zkgroup.ErrClosed, offsets.ErrClosed): the consumer is
	// closed or closing.
	ErrClosed = zkgroup.ErrClosed
	ErrJoin   = errors.New("manager: join failed")
	// ErrBadRegistration: a member's node under /consumers/<group>/ids
	// cannot be read as a registration; that member is given no
	// partitions.
	ErrBadRegistration = errors.New("manager: unreadable member registration")
	// ErrSquatted: an owner node under /consumers/<group>/owners is held
	// by an id that is not a member of the group, so the partition's
	// rightful owner cannot claim it until the node goes (its session
	// ends or an operator deletes it).
	ErrSquatted = errors.New("manager: partition held by a non-member")
	// ErrMalformedTopic: a topic node under /brokers/topics cannot be read;
	// the topic's partitions are left out until it is fixed.
	ErrMalformedTopic = errors.New("manager: malformed topic node")
	// ErrStrategyMismatch: a member of the group publishes another
	// assignment strategy than Config.Strategy (see
	// StrategyMismatchError, which wraps it).
	ErrStrategyMismatch = errors.New("manager: members use different assignment strategies")
	// ErrReplyTooLarge (zkgroup.ErrReplyTooLarge): a ZooKeeper read's reply
	// is longer than Config.ZooKeeperMaxReply; the message names the node
	// and the reply's size.
	ErrReplyTooLarge = zkgroup.ErrReplyTooLarge
)

// NodeError is a problem with one ZooKeeper node of the group, reported on
// Errors() once while it lasts. It unwraps to Err, which wraps
// ErrBadRegistration, ErrSquatted or ErrMalformedTopic. A plain value.
type NodeError struct {
	Path string
	Err  error
}

// Error names the node and the problem.
func (e *NodeError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

// Unwrap returns Err.
func (e *NodeError) Unwrap() error { return e.Err }

// ErrConfig reports an invalid Config or Join argument; the message names
// the field. It is zkgroup.ErrConfig, the module's one sentinel for an
// invalid configuration or argument: offsets.ErrConfig,
// subscription.ErrConfig and assign.ErrConfig are the same value.
var ErrConfig = zkgroup.ErrConfig

// ErrNotOwned: a control call named a partition this member does not own
// (or whose claim is not held yet).
var ErrNotOwned = errors.New("manager: partition not owned")

// ErrMode: a method of the other Config.Mode was called (Each, Poll in
// ModePartitions; EachPartition in ModeMerged).
var ErrMode = errors.New("manager: method does not apply to Config.Mode")

// ErrIncompatibleMember: a member that publishes no assignment strategy
// (Kafka's old high-level consumer) would compute another assignment than
// the group's members (see IncompatibleMemberError).
var ErrIncompatibleMember = errors.New("manager: a member publishing no strategy computes another assignment")

// ErrKafkaUnreachable: a request to Kafka's offset store was not sent, or
// was abandoned, because Kafka has not answered the member's probes for
// Config.KafkaUnreachableTimeout.
var ErrKafkaUnreachable = errors.New("manager: kafka unreachable")
