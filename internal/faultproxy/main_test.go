package faultproxy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (the proxy's or a test
// server's) is still running after all tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
