package sink_test

import (
	"context"
	"github.com/zkgroup/zkgroup/manager"
	"os"
	"time"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/sink"
)

func Example() {
	h, err := sink.NewHandler(sink.NewStdout(os.Stdout), sink.Policy{
		MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, OnFailure: sink.PolicyStop,
	})
	if err != nil {
		panic(err)
	}
	m := &manager.Message{Topic: "orders", Partition: 1, Offset: 7, Key: []byte("id-1"),
		Value: []byte{0xff, 0xfe}, Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	out, _ := h.Handle(context.Background(), m)
	os.Stdout.WriteString(out.String() + "\n")
	// Output:
	// {"topic":"orders","partition":1,"offset":7,"timestamp":"2024-01-02T03:04:05Z","key":"id-1","value":"//4=","value_encoding":"base64","headers":[],"fencing_token":0}
	// delivered
}
