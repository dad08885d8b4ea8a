package manager_test

import (
	"os"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) == "1" { // a subprocess of TestConsumeCrashNoLoss
		os.Exit(crashChild())
	}
	os.Exit(testcluster.Main(m))
}
