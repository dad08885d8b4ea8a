package faultproxy

import (
	"errors"

	"github.com/zkgroup/zkgroup"
)

// ErrConfig is wrapped by New's error when the upstream address is not a
// "host:port" string. It is zkgroup.ErrConfig, the module's one sentinel
// for an invalid configuration or argument.
var ErrConfig = zkgroup.ErrConfig

// ErrListen is returned (wrapped) by New when the loopback listener cannot
// be opened.
var ErrListen = errors.New("faultproxy: cannot listen on loopback")
