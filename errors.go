// Package zkgroup holds what every package of the module shares: the one
// sentinel error for an invalid configuration or argument.
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
