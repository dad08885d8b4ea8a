package subscription

import "errors"

// ErrInvalid is wrapped by every error this package returns for a bad topic
// name, expression, specification or registration. Test for it with
// errors.Is. It is a read-only value and safe for concurrent use.
var ErrInvalid = errors.New("subscription: invalid")
