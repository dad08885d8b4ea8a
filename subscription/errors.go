package subscription

import "github.com/zkgroup/zkgroup"

// ErrConfig is wrapped by every error this package returns for a bad topic
// name, expression, specification or registration. It is
// zkgroup.ErrConfig, the module's one sentinel for an invalid
// configuration or argument (manager.ErrConfig is the same value). Test
// for it with errors.Is. It is a read-only value and safe for concurrent
// use.
var ErrConfig = zkgroup.ErrConfig
