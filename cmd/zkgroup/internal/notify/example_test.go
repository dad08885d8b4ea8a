package notify_test

import (
	"fmt"
	"os"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/notify"
)

func Example() {
	os.Unsetenv("NOTIFY_SOCKET") // not under systemd: every call is a no-op
	n := notify.New(nil)
	fmt.Println(n.Ready("consuming 8 partitions"))
	// Output: false
}
