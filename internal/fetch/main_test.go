package fetch_test

import (
	"os"
	"testing"

	"github.com/zkgroup/zkgroup/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }
