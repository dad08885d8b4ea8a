// Package zkgroup holds what every package of the module shares: the
// sentinel errors whose meaning more than one package reports, an invalid
// configuration or argument and a ZooKeeper reply over a member's cap.
//
// The consumer itself is package manager (github.com/zkgroup/zkgroup/manager);
// docs/errors.md lists every error the module's public packages return or
// report, with what it means and who returns it.
package zkgroup

import "errors"

// ErrConfig is wrapped by every error about an invalid configuration
// value or argument, whichever package finds it: a Config's Validate, a
// constructor's argument, a bad topic name or subscription, an unknown
// strategy name, a negative offset. The message names the field or the
// argument and why. Public packages that return such errors re-declare it
// (manager.ErrConfig, offsets.ErrConfig, subscription.ErrConfig,
// assign.ErrConfig): those are this same value, so errors.Is with any of
// them matches all. It is a read-only value, safe for concurrent use.
var ErrConfig = errors.New("zkgroup: invalid config")

// ErrReplyTooLarge is wrapped by the error of a ZooKeeper read whose reply
// is longer than the member's reply cap (manager.Config.ZooKeeperMaxReply,
// the daemon's zookeeper_max_reply): a node's data, or a list of children
// such as /brokers/topics on a cluster with very many topics. The message
// names the node, the reply's size and the cap. The member reads the node
// no more until it is restarted with a larger cap. manager.ErrReplyTooLarge is this same value. It is a
// read-only value, safe for concurrent use.
var ErrReplyTooLarge = errors.New("zkgroup: ZooKeeper reply over the member's reply cap")

// ErrLogTruncated is wrapped by the error of a partition whose log was
// truncated below the consumer's position (an unclean leader election:
// records already read are not in the new leader's log, and the records
// the new leader writes there were never read). The message gives the
// position and the new log end. partition.ErrTruncated and
// manager.ErrTruncated are this same value. It is a read-only value,
// safe for concurrent use.
var ErrLogTruncated = errors.New("zkgroup: partition log truncated below the position")

// ErrClosed is returned (wrapped) by a method called on something already
// closed or closing: a manager.Consumer after Close or Interrupt, an offset
// store after its Close. manager.ErrClosed and offsets.ErrClosed are this
// same value, so one errors.Is test covers a consumer and the store it
// commits through. It is a read-only value, safe for concurrent use.
var ErrClosed = errors.New("zkgroup: closed")
