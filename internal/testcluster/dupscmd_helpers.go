package testcluster

import (
	"net"
	"strconv"
	"testing"
)

// RefusedAddr returns a loopback address (host:port) where nothing
// listens, so that connections to it are refused at once. Its port is
// reserved as FreePort's are: no test server and no outgoing connection
// takes it later. It fails tb when no port is found.
func RefusedAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}
