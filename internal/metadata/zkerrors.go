package metadata

import (
	"encoding/json"
	"errors"
	"strconv"
)

// errNoNode stands for a missing znode. zkStore translates go-zookeeper's
// error into it so that nothing outside zkstore.go sees the client's values.
var errNoNode = errors.New("metadata: znode does not exist")

// isMalformed reports whether err is a decoding error of znode data.
func isMalformed(err error) bool {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		ne *strconv.NumError
	)
	return errors.As(err, &se) || errors.As(err, &te) || errors.As(err, &ne) ||
		errors.Is(err, ErrMalformed) // zkdata.ErrMalformed
}
