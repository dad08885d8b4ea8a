package kazoocompat

import (
	"os"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestMain(m *testing.M) {
	code := testcluster.Main(m)
	if daemon.dir != "" {
		_ = os.RemoveAll(daemon.dir)
	}
	os.Exit(code)
}
