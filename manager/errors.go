package manager

import "errors"

// Sentinel errors.
var (
	ErrClosed = errors.New("manager: consumer closed")
	ErrJoin   = errors.New("manager: join failed")
)
