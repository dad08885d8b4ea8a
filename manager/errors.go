package manager

import "errors"

// Sentinel errors.
var (
	ErrClosed   = errors.New("manager: consumer closed")
	ErrNoBroker = errors.New("manager: no Kafka broker found")
	ErrJoin     = errors.New("manager: join failed")
)
