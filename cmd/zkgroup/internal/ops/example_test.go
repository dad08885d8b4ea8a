package ops_test

import (
	"fmt"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
)

func ExampleTarget() {
	b := ops.Bounds{Earliest: 100, Latest: 500, AtTime: -1}
	fmt.Println(ops.Target(ops.ResetSpec{Mode: ops.ShiftBy, Shift: -50}, 120, b))
	fmt.Println(ops.Target(ops.ResetSpec{Mode: ops.ToOffset, Offset: 900}, 120, b))
	fmt.Print(ops.ResetText("g", []ops.ResetRow{{Topic: "t", Partition: 0, Current: 120, Target: 100}}))
	// Output:
	// 100
	// 500
	// GROUP  TOPIC  PARTITION  CURRENT-OFFSET  NEW-OFFSET
	// g      t      0          120             100
}
