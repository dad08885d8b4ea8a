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
	if os.Getenv(commitChildEnv) == "1" { // a subprocess of TestCommitThenCrash
		os.Exit(commitChild())
	}
	os.Exit(testcluster.Main(m))
}
