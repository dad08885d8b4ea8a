package metadata

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkgroup/zkgroup"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// Sentinel errors, read-only and safe for concurrent use; test with
// errors.Is.
var (
	// ErrClosed is returned by Err after Close.
	ErrClosed = errors.New("metadata: watcher closed")
	// ErrConfig is wrapped by every *ConfigError: it is
	// zkgroup.ErrConfig, the module's one sentinel for an invalid
	// configuration or argument.
	ErrConfig = zkgroup.ErrConfig
	// ErrNoCluster is wrapped when <chroot>/brokers/topics does not exist:
	// no Kafka cluster is registered under the chroot.
	ErrNoCluster = errors.New("metadata: no kafka cluster registered")
	// ErrMalformed is wrapped by every *MalformedError: it is
	// zkdata.ErrMalformed, the module's one sentinel for node data that
	// cannot be decoded.
	ErrMalformed = zkdata.ErrMalformed
)

// ConfigError names a Config field whose value is out of range. It unwraps
// to ErrConfig. It is a plain value, safe for concurrent reads.
type ConfigError struct {
	Field  string        // e.g. "Resync"
	Value  time.Duration // the offending value
	Reason string        // e.g. "must be at least 1s"
}

// Error formats the error as "metadata: invalid config: <field> <value>: <reason>".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("metadata: invalid config: %s %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// MalformedError describes a znode whose data could not be decoded (a topic
// node). The Watcher logs and skips such nodes;
// the error type is exported so that log consumers can match it. It unwraps
// to ErrMalformed and Err. It is a plain value, safe for concurrent reads.
type MalformedError struct {
	Path string // the znode, relative to the chroot
	Err  error  // the decoding error
}

// Error formats the error as "metadata: malformed znode <path>: <err>".
func (e *MalformedError) Error() string {
	return fmt.Sprintf("metadata: malformed znode %s: %v", e.Path, e.Err)
}

// Unwrap returns ErrMalformed and the decoding error.
func (e *MalformedError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// ReadError is a failed ZooKeeper read (connection loss, session expiry,
// closing client). It unwraps to the client's error. It is a plain value,
// safe for concurrent reads.
type ReadError struct {
	Path string // the znode, relative to the chroot
	Err  error
}

// Error formats the error as "metadata: read <path>: <err>".
func (e *ReadError) Error() string { return fmt.Sprintf("metadata: read %s: %v", e.Path, e.Err) }

// Unwrap returns the client's error.
func (e *ReadError) Unwrap() error { return e.Err }
