package faultproxy

import "errors"

// ErrInvalidUpstream is returned (wrapped) by New when the upstream address
// is not a "host:port" string.
var ErrInvalidUpstream = errors.New("faultproxy: invalid upstream address")

// ErrListen is returned (wrapped) by New when the loopback listener cannot
// be opened.
var ErrListen = errors.New("faultproxy: cannot listen on loopback")
