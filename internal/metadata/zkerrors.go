package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	samuelzk "github.com/samuel/go-zookeeper/zk"
)

// errNoNode stands for a missing znode. kazooStore translates the samuel
// client's error into it so that nothing outside kazoo.go and this file sees
// the samuel client's values.
var errNoNode = errors.New("metadata: znode does not exist")

// translate maps the samuel client's "no node" error to errNoNode and keeps
// every other error.
func translate(err error) error {
	if errors.Is(err, samuelzk.ErrNoNode) {
		return fmt.Errorf("%w: %w", errNoNode, err)
	}
	return err
}

// panicError is a panic of kazoo-go's topic decoder (it indexes a slice by
// the partition ids it reads), recovered and turned into an error.
type panicError struct{ v any }

func (e panicError) Error() string { return fmt.Sprintf("decoder panicked: %v", e.v) }

// isMalformed reports whether err is a decoding error of znode data.
func isMalformed(err error) bool {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		ne *strconv.NumError
		pe panicError
	)
	return errors.As(err, &se) || errors.As(err, &te) || errors.As(err, &ne) ||
		errors.As(err, &pe) || errors.Is(err, ErrMalformed)
}
